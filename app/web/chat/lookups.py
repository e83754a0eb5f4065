"""Single stored events the pages need beside the page of events they show.

A card rendered on its own (the decision route's answer, an SSE message) cannot see the
rest of the transcript, so what it needs from other events is looked up here by the
identifiers in their payloads.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import select
from sqlalchemy.engine import Engine

from app.services.store.eventlog import EVENT_TABLE, EventDict


def _newest(engine: Engine, session_id: str, kind: str, key: str, value: str) -> EventDict | None:
    """The payload of the session's newest ``kind`` event whose ``key`` is ``value``."""
    t = EVENT_TABLE
    stmt = (
        select(t.c.payload)
        .where(t.c.session_id == session_id, t.c.kind == kind)
        .where(t.c.payload[key].as_string() == value)
        .order_by(t.c.seq.desc())
        .limit(1)
    )
    with engine.connect() as conn:
        payload = conn.execute(stmt).scalar()
    return payload if isinstance(payload, dict) else None


def request_event(engine: Engine, session_id: str, permission_id: str) -> EventDict | None:
    """The ``permission_request`` event that asked ``permission_id``."""
    return _newest(engine, session_id, "permission_request", "permission_id", permission_id)


def subagent_of(engine: Engine, session_id: str, tool_call_id: str) -> dict[str, Any]:
    """``{description, subagent_type}`` of the subagent the tool call ``tool_call_id`` runs,
    from the call's input or, failing that, its task reports ({} when neither is stored)."""
    out: dict[str, Any] = {}
    call = _newest(engine, session_id, "tool_call", "tool_call_id", tool_call_id)
    task = _newest(engine, session_id, "task", "tool_call_id", tool_call_id)
    tool_input = call.get("input") if call else None
    for source in (tool_input if isinstance(tool_input, dict) else {}, task or {}):
        for key in ("description", "subagent_type"):
            value = source.get(key)
            if isinstance(value, str) and value and not out.get(key):
                out[key] = value
    return out
