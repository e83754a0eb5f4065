"""Review comments: a comment on one line of a session's diff, sent to its agent.

Revision ID: 0009
Revises: 0008
Create Date: 2026-12-05
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0009"
down_revision = "0008"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "review_comment",
        sa.Column("id", sa.String(), primary_key=True),
        sa.Column(
            "session_id",
            sa.String(),
            sa.ForeignKey("chat_session.id", ondelete="CASCADE"),
            nullable=False,
        ),
        sa.Column("path", sa.String(), nullable=False),
        sa.Column("line", sa.Integer(), nullable=False),
        sa.Column("side", sa.String(), nullable=False),
        sa.Column("body", sa.String(), nullable=False),
        sa.Column("quote", sa.String(), nullable=False),
        sa.Column("context", sa.String(), nullable=False),
        sa.Column("status", sa.String(), nullable=False),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.Column("sent_at", sa.DateTime(), nullable=True),
        sa.Column("sent_seq", sa.Integer(), nullable=True),
    )
    op.create_index("ix_review_comment_session_id", "review_comment", ["session_id"])


def downgrade() -> None:
    op.drop_index("ix_review_comment_session_id", "review_comment")
    op.drop_table("review_comment")
