"""Where each session's git lives: the git dir and work tree recorded when it started.

Revision ID: 0012
Revises: 0011
Create Date: 2026-12-06
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0012"
down_revision = "0011"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("chat_session") as batch:
        batch.add_column(sa.Column("git_dir", sa.String(), nullable=True))
        batch.add_column(sa.Column("git_work_tree", sa.String(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("chat_session") as batch:
        batch.drop_column("git_work_tree")
        batch.drop_column("git_dir")
