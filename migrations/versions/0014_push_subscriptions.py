"""Web Push subscriptions, each tied to the browser sign-in it came from.

Revision ID: 0014
Revises: 0013
Create Date: 2026-12-07
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0014"
down_revision = "0013"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "push_subscription",
        sa.Column("id", sa.String(), primary_key=True),
        sa.Column("endpoint", sa.String(), nullable=False, unique=True),
        sa.Column("p256dh", sa.String(), nullable=False),
        sa.Column("auth", sa.String(), nullable=False),
        sa.Column(
            "signin_id",
            sa.String(),
            sa.ForeignKey("sign_in.id", ondelete="CASCADE"),
            nullable=True,
        ),
        sa.Column("created_at", sa.DateTime(), nullable=False),
    )
    op.create_index("ix_push_subscription_signin_id", "push_subscription", ["signin_id"])


def downgrade() -> None:
    op.drop_index("ix_push_subscription_signin_id", "push_subscription")
    op.drop_table("push_subscription")
