"""Turn results are found by kind and time, for the usage page's sums.

Revision ID: 0006
Revises: 0005
Create Date: 2026-12-04
"""

from __future__ import annotations

from alembic import op

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_index("ix_event_kind_created_at", "event", ["kind", "created_at"])


def downgrade() -> None:
    op.drop_index("ix_event_kind_created_at", table_name="event")
