"""Paired devices (the remote origin's sessions), and push subscriptions tied to them.

Revision ID: 0015
Revises: 0014
Create Date: 2026-12-07
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0015"
down_revision = "0014"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "device",
        sa.Column("id", sa.String(), primary_key=True),
        sa.Column("secret_hash", sa.String(), nullable=False, unique=True),
        sa.Column("name", sa.String(), nullable=False),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.Column("last_seen_at", sa.DateTime(), nullable=False),
    )
    with op.batch_alter_table("push_subscription") as batch:
        batch.add_column(sa.Column("device_id", sa.String(), nullable=True))
        batch.create_foreign_key(
            "fk_push_subscription_device_id", "device", ["device_id"], ["id"], ondelete="CASCADE"
        )
        batch.create_index("ix_push_subscription_device_id", ["device_id"])


def downgrade() -> None:
    with op.batch_alter_table("push_subscription") as batch:
        batch.drop_index("ix_push_subscription_device_id")
        batch.drop_constraint("fk_push_subscription_device_id", type_="foreignkey")
        batch.drop_column("device_id")
    op.drop_table("device")
