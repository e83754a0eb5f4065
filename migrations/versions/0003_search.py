"""Full-text search over events (SQLite FTS5), built for the events already stored.

Revision ID: 0003
Revises: 0002
Create Date: 2026-12-02
"""

from __future__ import annotations

from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None

# The same text the app indexes when it stores a new event (app/services/store/search.py).
_BACKFILL = """
INSERT INTO event_fts (rowid, body, session_id, seq, kind)
SELECT id,
       CASE kind
         WHEN 'tool_call' THEN coalesce(json_extract(payload, '$.title'), '') || ' '
                               || coalesce(json_extract(payload, '$.input'), '')
         WHEN 'tool_result' THEN coalesce(json_extract(payload, '$.output'), '')
         ELSE coalesce(json_extract(payload, '$.text'), '')
       END,
       session_id, seq, kind
FROM event
WHERE kind IN ('user_message', 'assistant_message', 'thought', 'tool_call', 'tool_result')
"""


def upgrade() -> None:
    op.execute(
        "CREATE VIRTUAL TABLE event_fts USING fts5("
        "body, session_id UNINDEXED, seq UNINDEXED, kind UNINDEXED, "
        "tokenize = 'unicode61 remove_diacritics 2')"
    )
    op.execute(_BACKFILL)


def downgrade() -> None:
    op.execute("DROP TABLE event_fts")
