"""A session may run in a git worktree of its own; a profile may make that the default.

Revision ID: 0008
Revises: 0007
Create Date: 2026-12-04
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0008"
down_revision = "0007"
branch_labels = None
depends_on = None

SESSION_COLUMNS = (
    "worktree_path",
    "worktree_branch",
    "worktree_base",
    "worktree_base_commit",
    "snapshot_tree",
)


def upgrade() -> None:
    with op.batch_alter_table("profile") as batch:
        batch.add_column(
            sa.Column("worktree_default", sa.Boolean(), nullable=False, server_default=sa.false())
        )
        batch.add_column(sa.Column("worktree_copy", sa.JSON(), nullable=False, server_default="[]"))
    with op.batch_alter_table("chat_session") as batch:
        for name in SESSION_COLUMNS:
            batch.add_column(sa.Column(name, sa.String(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("chat_session") as batch:
        for name in SESSION_COLUMNS:
            batch.drop_column(name)
    with op.batch_alter_table("profile") as batch:
        batch.drop_column("worktree_copy")
        batch.drop_column("worktree_default")
