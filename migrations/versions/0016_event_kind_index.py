"""Index events by (session, kind, seq); drop the (session, seq) index the unique constraint
already gives.

A session page asks for the newest event of several kinds; on a 10,000-event session each
of those read every row backwards (about 60 % of the page's 100 ms).

Revision ID: 0016
Revises: 0015
Create Date: 2026-12-07
"""

from __future__ import annotations

from alembic import op

revision = "0016"
down_revision = "0015"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_index("ix_event_session_kind_seq", "event", ["session_id", "kind", "seq"])
    op.drop_index("ix_event_session_seq", table_name="event")


def downgrade() -> None:
    op.create_index("ix_event_session_seq", "event", ["session_id", "seq"])
    op.drop_index("ix_event_session_kind_seq", table_name="event")
