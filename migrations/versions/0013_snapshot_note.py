"""Why a session's folder outside git has no snapshot (too big, unreadable).

Revision ID: 0013
Revises: 0012
Create Date: 2026-12-20
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0013"
down_revision = "0012"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("chat_session") as batch:
        batch.add_column(sa.Column("snapshot_note", sa.String(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("chat_session") as batch:
        batch.drop_column("snapshot_note")
