"""The chat transcript: which events the page shows, how stored ones are shaped for it.

The page render and the SSE stream both use ``templates/_event.html``, so a reload shows
what the stream showed.
"""

from __future__ import annotations

import re
from collections.abc import Collection
from datetime import datetime
from typing import Any

from fastapi.templating import Jinja2Templates

from app.services.store.eventlog import EventLog
from app.services.store.records import EventDict
from app.web.formatting import as_number, as_text
from app.web.nesting import nest_subagents

# Every kind the page knows how to show; the session page subscribes to exactly these
# SSE event names, so a kind added later is ignored by old pages instead of garbling them.
EVENT_KINDS: tuple[str, ...] = (
    "user_message",
    "text_delta",
    "assistant_message",
    "thought",
    "tool_call",
    "tool_result",
    "permission_request",
    "permission_decision",
    "turn_end",
    "backend_session",
    "session_info",
    "mode_changed",
    "model_changed",
    "models",
    "error",
    "status",
    "queued_sent",
    "queued_dropped",
    "queued_edited",
    "note",
    "plan",
    "usage",
    "commands",
    "title",
    "rewind",
    "task",
    "compacted",
    "steer_landed",
)
# EventSource also fires "error" for connection failures, so a stored ``error`` event is
# better sent under another name (``sse_event_name``); the page listens to both.
_SSE_NAMES = {"error": "agent_error"}
SSE_SWAP_EVENTS = ",".join([*EVENT_KINDS, *_SSE_NAMES.values()])


def sse_event_name(kind: str) -> str:
    """The SSE ``event:`` name for an event kind (``error`` would clash with EventSource's own)."""
    return _SSE_NAMES.get(kind, kind)


# A thought longer than this after the event before it is not timed: the gap is more
# likely an idle session (or an import) than thinking.
_MAX_THOUGHT_MS = 30 * 60 * 1000


def _parse_at(value: object) -> datetime | None:
    if not isinstance(value, str) or not value:
        return None
    try:
        return datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None


def thought_duration_ms(thought: EventDict, previous_at: object) -> int | None:
    """How long the agent thought, when it is known.

    A backend that times its thinking says so in ``duration_ms``. Otherwise a thought
    arrives whole when the thinking is over, so the time since the event before it (the
    prompt, a tool result) is how long it took.
    """
    known = as_number(thought.get("duration_ms"))
    if known is not None:
        return int(known) if known >= 0 else None
    end, start = _parse_at(thought.get("at")), _parse_at(previous_at)
    if end is None or start is None:
        return None
    ms = int((end - start).total_seconds() * 1000)
    return ms if 0 <= ms <= _MAX_THOUGHT_MS else None


def with_thought_duration(event: EventDict, previous_at: object) -> EventDict:
    """``event`` with ``duration_ms`` filled in when it is a thought that can be timed."""
    if event.get("kind") != "thought" or "duration_ms" in event:
        return event
    ms = thought_duration_ms(event, previous_at)
    return event if ms is None else {**event, "duration_ms": ms}


_ADVICE_GIVEN = re.compile(
    r"send (?:a|the|your) message|start a new session|restore the folder|install",
    re.IGNORECASE,
)
_AUTH_PROBLEM = re.compile(
    r"not logged in|please log ?in|/login|authenticat|api[ _-]?key|unauthori[sz]ed|\b401\b"
    r"|credit balance",
    re.IGNORECASE,
)
_BUSY_PROBLEM = re.compile(r"rate.?limit|overloaded|\b429\b|\b529\b|too many requests", re.I)


def error_advice(event: EventDict) -> str:
    """What the user can do about an error card, unless its message already says so."""
    message = as_text(event.get("message"))
    if event.get("resume_failed") or _ADVICE_GIVEN.search(message):
        return ""
    if _AUTH_PROBLEM.search(message):
        return (
            "Check the CLI's login: run it once in a terminal and sign in, or put its API "
            "key in the profile's environment. Then send your message again."
        )
    if _BUSY_PROBLEM.search(message):
        return "The model's service is busy or rate-limited: wait a minute, then send again."
    return (
        "Send a message to start the agent again. If this keeps happening, open Details "
        "for the CLI's own output and check the profile's settings."
    )


def fold_events(events: list[EventDict], finished_after: Collection[str] = ()) -> list[EventDict]:
    """Shape a stored event list for the page.

    - text deltas of a message that later completed are dropped (the full message
      follows, in this list or, for ``finished_after``'s message ids, after it);
    - the deltas of a message still streaming become one ``text_stream`` item at the
      position of its first delta, as the live page builds it;
    - a ``permission_request`` gets its ``permission_decision`` as ``decision`` (the
      decision event stays in the list);
    - a ``tool_call`` gets ``state``: done, failed, stopped (its turn ended without a
      result) or running;
    - a ``thought`` gets ``duration_ms`` when it can be timed (``thought_duration_ms``);
    - every ``plan`` but the newest gets ``superseded`` (each plan replaces the last);
    - a queued ``user_message`` gets what became of it (``settle_queue``);
    - a subagent's work moves under the tool call that runs it (``nest_subagents``).
    Input dicts are never modified.
    """
    completed: set[str] = set(finished_after)
    dropped: set[int] = set()
    for index in range(len(events) - 1, -1, -1):
        event = events[index]
        kind = event.get("kind")
        if kind == "assistant_message":
            completed.add(str(event.get("message_id") or ""))
        elif kind == "text_delta" and str(event.get("message_id") or "") in completed:
            dropped.add(index)

    decisions: dict[str, EventDict] = {}
    results: dict[str, EventDict] = {}
    last_turn_end = -1
    last_plan = -1
    for index, event in enumerate(events):
        kind = event.get("kind")
        if kind == "permission_decision":
            decisions.setdefault(str(event.get("permission_id") or ""), event)
        elif kind == "tool_result":
            results.setdefault(str(event.get("tool_call_id") or ""), event)
        elif kind == "turn_end":
            last_turn_end = index
        elif kind == "plan":
            last_plan = index

    out: list[EventDict] = []
    streams: dict[str, tuple[EventDict, list[str]]] = {}
    for index, event in enumerate(events):
        if index in dropped:
            continue
        kind = event.get("kind")
        if kind == "text_delta":
            mid = str(event.get("message_id") or "")
            if mid not in streams:
                item: EventDict = {
                    "kind": "text_stream",
                    "message_id": mid,
                    "session_id": event.get("session_id"),
                    "at": event.get("at"),
                    "text": "",
                    "seq": event.get("seq"),
                }
                streams[mid] = (item, [])
                out.append(item)
            item, parts = streams[mid]
            parts.append(str(event.get("text") or ""))
            item["seq"] = event.get("seq")
        elif kind == "permission_request":
            item = dict(event)
            decision = decisions.get(str(event.get("permission_id") or ""))
            if decision is not None:
                item["decision"] = decision
            out.append(item)
        elif kind == "tool_call":
            item = dict(event)
            result = results.get(str(event.get("tool_call_id") or ""))
            if result is not None:
                item["state"] = "failed" if result.get("is_error") else "done"
            else:
                item["state"] = "stopped" if index < last_turn_end else "running"
            out.append(item)
        elif kind == "thought":
            previous = events[index - 1].get("at") if index else None
            out.append(with_thought_duration(event, previous))
        elif kind == "plan" and index < last_plan:
            out.append({**event, "superseded": True})
        else:
            out.append(event)
    for item, parts in streams.values():
        item["text"] = "".join(parts)
    settle_queue(out)
    return nest_subagents(out)


_QUEUE_OUTCOMES = {"queued_sent": "sent", "queued_dropped": "dropped"}


def completed_later(log: EventLog, session_id: str, events: list[EventDict]) -> set[str]:
    """The message ids of ``events``' text deltas whose full message was stored after them.

    A page of events that stops inside a message's stream (the page loaded above a later
    one, or the window around a search hit) would otherwise show those pieces again as a
    message still streaming. A message is finished within its turn, so only the events up
    to the first turn end after the page are read.
    """
    ids = {str(e.get("message_id") or "") for e in events if e.get("kind") == "text_delta"}
    if not ids:
        return set()
    last = int(events[-1]["seq"])
    end = log.list(session_id, after=last, kind="turn_end", limit=1)
    before = int(end[0]["seq"]) if end else None
    later = log.list(session_id, after=last, before=before, kind="assistant_message")
    return ids & {str(e.get("message_id") or "") for e in later}


def settle_queue(items: list[EventDict]) -> None:
    """Apply the queue's events to the queued messages they name, in place.

    A message sent while the agent was busy is a ``user_message`` with ``queued``; a later
    ``queued_sent``, ``queued_dropped`` or ``queued_edited`` names it by ``queued_seq``.
    The message gets ``queue_state`` ("sent" or "dropped"; none while it waits) and the
    text that finally went (``edited`` when that changed); each such event whose message
    is in ``items`` gets ``settled``, so the page does not apply it again. Events stored
    before ``queued_seq`` existed name the oldest waiting message with their text.
    A message that went (or was dropped) moves to just before the event saying so: it is
    stored where it was typed, but it reached the agent there, after the turn it waited
    for. Changed items are replaced by copies.
    """
    by_seq: dict[int, EventDict] = {}
    waiting: list[EventDict] = []
    # The settled queue event (by id) and the message that moves to its place.
    moves: dict[int, EventDict] = {}
    for index, item in enumerate(items):
        kind = item.get("kind")
        if kind == "user_message" and item.get("queued"):
            items[index] = message = dict(item)
            by_seq[int(item.get("seq") or 0)] = message
            waiting.append(message)
            continue
        if kind not in ("queued_sent", "queued_dropped", "queued_edited"):
            continue
        named = item.get("queued_seq")
        if isinstance(named, int):
            target = by_seq.get(named)
        else:
            text = item.get("text")
            target = next((m for m in waiting if m.get("text") == text), None)
        if target is None:
            continue
        items[index] = settled = {**item, "settled": True}
        text = item.get("text")
        if isinstance(text, str) and text != target.get("text"):
            target.update(text=text, edited=True)
        if kind in _QUEUE_OUTCOMES and target in waiting:
            target["queue_state"] = _QUEUE_OUTCOMES[str(kind)]
            waiting.remove(target)
            moves[id(settled)] = target
    if moves:
        moved = {id(message) for message in moves.values()}
        placed: list[EventDict] = []
        for item in items:
            if id(item) in moves:
                placed.append(moves[id(item)])
            if id(item) not in moved:
                placed.append(item)
        items[:] = placed


def render_event(templates: Jinja2Templates, event: EventDict, **context: Any) -> str:
    """One event as the HTML fragment the page would show for it (for SSE).

    Extra keyword arguments (e.g. ``install_hint``) are passed to the template.
    """
    template = templates.get_template("_event.html")
    return str(template.render({**context, "e": event}))
