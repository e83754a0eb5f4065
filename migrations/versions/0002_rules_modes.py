"""Permission rules per profile, per-session permission mode, profile timeouts.

Revision ID: 0002
Revises: 0001
Create Date: 2026-12-02
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "permission_rule",
        sa.Column("id", sa.String(), primary_key=True),
        sa.Column("profile_id", sa.String(), sa.ForeignKey("profile.id"), nullable=False),
        sa.Column("rule", sa.String(), nullable=False),
        sa.Column("decision", sa.String(), nullable=False),
        sa.Column("created_at", sa.DateTime(), nullable=False),
    )
    op.create_index("ix_permission_rule_profile_id", "permission_rule", ["profile_id"])
    with op.batch_alter_table("profile") as batch:
        batch.add_column(
            sa.Column("permission_timeout_s", sa.Integer(), nullable=False, server_default="600")
        )
        batch.add_column(sa.Column("idle_timeout_s", sa.Integer(), nullable=True))
        batch.add_column(sa.Column("reasoning_effort", sa.String(), nullable=True))
    with op.batch_alter_table("chat_session") as batch:
        batch.add_column(sa.Column("permission_mode", sa.String(), nullable=True))
    with op.batch_alter_table("permission_request") as batch:
        batch.add_column(sa.Column("tool_call_id", sa.String(), nullable=False, server_default=""))
        batch.add_column(sa.Column("rule", sa.String(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("permission_request") as batch:
        batch.drop_column("rule")
        batch.drop_column("tool_call_id")
    with op.batch_alter_table("chat_session") as batch:
        batch.drop_column("permission_mode")
    with op.batch_alter_table("profile") as batch:
        batch.drop_column("reasoning_effort")
        batch.drop_column("idle_timeout_s")
        batch.drop_column("permission_timeout_s")
    op.drop_table("permission_rule")
