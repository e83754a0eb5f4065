"""Scheduled continues: a message sent to a session at a set time (a plan limit's reset).

Revision ID: 0010
Revises: 0009
Create Date: 2026-12-05
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0010"
down_revision = "0009"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "scheduled_continue",
        sa.Column("id", sa.String(), primary_key=True),
        sa.Column(
            "session_id",
            sa.String(),
            sa.ForeignKey("chat_session.id", ondelete="CASCADE"),
            nullable=False,
        ),
        sa.Column("at", sa.DateTime(), nullable=False),
        sa.Column("message", sa.String(), nullable=False),
        sa.Column("state", sa.String(), nullable=False),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.Column("done_at", sa.DateTime(), nullable=True),
        sa.Column("note", sa.String(), nullable=False, server_default=""),
    )
    op.create_index("ix_scheduled_continue_session_id", "scheduled_continue", ["session_id"])
    op.create_index("ix_scheduled_continue_state", "scheduled_continue", ["state"])


def downgrade() -> None:
    op.drop_index("ix_scheduled_continue_state", "scheduled_continue")
    op.drop_index("ix_scheduled_continue_session_id", "scheduled_continue")
    op.drop_table("scheduled_continue")
