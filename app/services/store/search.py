"""Full-text search over every session's text, tool inputs and outputs (SQLite FTS5).

Rows are written by the same call that stores an event (``index_event``), so the
index can never lag behind the transcript.
"""

from __future__ import annotations

import json
import re
from typing import Any

from markupsafe import escape
from sqlalchemy import text
from sqlalchemy.engine import Connection, Engine

SEARCHABLE = frozenset({"user_message", "assistant_message", "thought", "tool_call", "tool_result"})
_START, _END = "\x02", "\x03"
_TERM = re.compile(r'[^\s"]+')


# Indexing costs about 12 ms per MB on the one writer thread that stores every session's
# events, so a 20 MB tool result would hold all of them back for a quarter second. What
# anyone searches for is near the start of a file or output; the rest is still stored
# and shown, just not found by search.
MAX_INDEXED_CHARS = 1024 * 1024


def indexed_text(kind: str, payload: dict[str, Any]) -> str | None:
    if kind not in SEARCHABLE:
        return None
    if kind == "tool_call":
        text = f"{payload.get('title', '')} {json.dumps(payload.get('input', {}))}"
    elif kind == "tool_result":
        text = str(payload.get("output", ""))
    else:
        text = str(payload.get("text", ""))
    return text[:MAX_INDEXED_CHARS]


def index_event(
    conn: Connection, row_id: int, session_id: str, seq: int, kind: str, payload: dict[str, Any]
) -> None:
    body = indexed_text(kind, payload)
    if body:
        conn.execute(
            text(
                "INSERT INTO event_fts (rowid, body, session_id, seq, kind) "
                "VALUES (:id, :body, :sid, :seq, :kind)"
            ),
            {"id": row_id, "body": body, "sid": session_id, "seq": seq, "kind": kind},
        )


def delete_session_index(conn: Connection, session_id: str) -> None:
    conn.execute(text("DELETE FROM event_fts WHERE session_id = :sid"), {"sid": session_id})


def to_match_query(q: str) -> str:
    """User words → an FTS5 query: every word must appear (prefix match on the last).

    Quoting each term keeps FTS5's own syntax (AND, NEAR, column filters, quotes) from
    turning a user's search box into a syntax error.
    """
    # A NUL would end FTS5's string literal early; it is never part of a word anyway.
    terms = _TERM.findall(q.replace("\x00", " "))
    if not terms:
        return ""
    quoted = ['"' + t.replace('"', '""') + '"' for t in terms]
    quoted[-1] += "*"
    return " ".join(quoted)


def snippet_html(raw: str) -> str:
    """Escape the snippet, then turn the match markers into <mark> elements."""
    escaped = str(escape(raw))
    return escaped.replace(_START, "<mark>").replace(_END, "</mark>")


def search(
    engine: Engine, q: str, *, limit: int = 50, session_id: str | None = None
) -> list[dict[str, Any]]:
    match = to_match_query(q)
    if not match:
        return []
    sql = (
        "SELECT f.session_id, f.seq, f.kind, "
        f"snippet(event_fts, 0, '{_START}', '{_END}', '…', 12) AS snip, "
        "s.title, e.created_at "
        "FROM event_fts f JOIN chat_session s ON s.id = f.session_id "
        "JOIN event e ON e.id = f.rowid "
        "WHERE event_fts MATCH :q" + (" AND f.session_id = :sid" if session_id else "") + " "
        "ORDER BY f.rowid DESC LIMIT :limit"
    )
    params: dict[str, Any] = {"q": match, "limit": limit}
    if session_id:
        params["sid"] = session_id
    with engine.connect() as conn:
        rows = conn.execute(text(sql), params).all()
    return [
        {
            "session_id": r.session_id,
            "session_title": r.title,
            "seq": r.seq,
            "kind": r.kind,
            "snippet": r.snip.replace(_START, "").replace(_END, ""),
            "snippet_html": snippet_html(r.snip),
            "at": str(r.created_at),
            "url": f"/sessions/{r.session_id}#e-{r.seq}",
        }
        for r in rows
    ]
