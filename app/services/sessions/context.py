"""How full a session's context is, and compacting it.

The figures are the newest stored ``usage`` event of the session (every backend that
reports them emits one: ACP agents from ``usage_update``, Claude Code from its per-call
usage), so they survive a restart and need no column of their own. A session without
one shows "unknown": nothing is estimated.

Compacting is the backend's own command, ``/compact``, sent as a message: Claude Code
dispatches it as a command, and an ACP agent runs the command it advertised by that
name. It is offered only where the backend lists it.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import asdict, dataclass
from typing import Any, Literal

from sqlalchemy import select
from sqlalchemy.engine import Engine

from app.db.models import ChatSession
from app.errors import ConflictError
from app.services.sessions.closed import closed_of
from app.services.sessions.commands import offered_commands
from app.services.store import store
from app.services.store.eventlog import EVENT_TABLE, EventLog

__all__ = [
    "COMPACT_COMMAND",
    "Gauge",
    "check_compact",
    "compact_refusal",
    "gauge_of",
    "gauges",
]

COMPACT_COMMAND = "compact"
# Below AMBER the context is green; from RED on the backend is close to compacting (or
# refusing) on its own.
AMBER = 0.6
RED = 0.8

Level = Literal["green", "amber", "red", "unknown"]


@dataclass(frozen=True)
class Gauge:
    """``used`` of ``size`` tokens; ``level`` is "unknown" when either is not reported."""

    used: int | None
    size: int | None
    level: Level
    percent: int | None

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


UNKNOWN = Gauge(None, None, "unknown", None)


def gauge_of(payload: dict[str, Any] | None) -> Gauge:
    """The gauge for a stored ``usage`` payload (``{used, size}``), or for none."""
    if not payload:
        return UNKNOWN
    used, size = _count(payload.get("used")), _count(payload.get("size"))
    if used is None or not size:
        return Gauge(used, None, "unknown", None)
    share = used / size
    level: Level = "red" if share >= RED else "amber" if share >= AMBER else "green"
    return Gauge(used, size, level, min(100, round(share * 100)))


def gauges(engine: Engine, session_ids: Iterable[str]) -> dict[str, Gauge]:
    """Every listed session's gauge, from one query (unknown where nothing is stored)."""
    ids = list(dict.fromkeys(session_ids))
    if not ids:
        return {}
    t = EVENT_TABLE
    sessions = ChatSession.__table__  # type: ignore[attr-defined]
    # Per session, the index on (session_id, seq) read backwards from the end stops at
    # the newest usage event, which a live session wrote a turn ago at most.
    newest = (
        select(t.c.payload)
        .where(t.c.session_id == sessions.c.id, t.c.kind == "usage")
        .order_by(t.c.seq.desc())
        .limit(1)
        .scalar_subquery()
    )
    stmt = select(sessions.c.id, newest.label("payload")).where(sessions.c.id.in_(ids))
    with engine.connect() as conn:
        found = {row.id: row.payload for row in conn.execute(stmt)}
    return {sid: gauge_of(_dict(found.get(sid))) for sid in ids}


def compact_refusal(engine: Engine, events: EventLog, session_id: str) -> str:
    """Why this session cannot be compacted now ("" when it can)."""
    chat = store.get_session(engine, session_id)
    if closed := closed_of(chat):
        return closed.refusal("compacting it")
    commands = offered_commands(events, session_id)
    if commands is None:
        if chat.backend == "claude" and chat.backend_session_id:
            # Every Claude Code has /compact; its list comes again with the next turn.
            return ""
        return "Nothing to compact yet: the agent has not started a conversation."
    if COMPACT_COMMAND not in commands:
        return f"The {chat.backend} agent offers no compact command."
    return ""


def check_compact(engine: Engine, events: EventLog, session_id: str, *, busy: bool) -> None:
    """Raises ConflictError (409) with the reason when compacting cannot start now.

    A running turn refuses rather than queues: the figures the user acted on would be
    stale by the time it ran, and the turn may compact by itself.
    """
    if busy:
        raise ConflictError(
            "The agent is working: compact once its turn has ended (or stop it first)."
        )
    if reason := compact_refusal(engine, events, session_id):
        raise ConflictError(reason)


def _count(value: Any) -> int | None:
    if isinstance(value, bool) or not isinstance(value, int):
        return None
    return value if value >= 0 else None


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}
