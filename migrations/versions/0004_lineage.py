"""Forked and continued sessions remember where they came from.

Revision ID: 0004
Revises: 0003
Create Date: 2026-12-02
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("chat_session") as batch:
        batch.add_column(sa.Column("forked_from", sa.String(), nullable=True))
        batch.add_column(sa.Column("continued_from", sa.String(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("chat_session") as batch:
        batch.drop_column("continued_from")
        batch.drop_column("forked_from")
