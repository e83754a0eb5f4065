"""The gauge's figures from stored usage events, and when Compact is offered."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import event
from sqlalchemy.engine import Engine

from app.services.sessions.context import Gauge, compact_refusal, gauge_of, gauges
from app.services.store import store
from app.services.store.eventlog import EventLog
from tests.services.store.test_eventwriter import new_session


@pytest.mark.parametrize(
    ("payload", "expected"),
    [
        ({"used": 0, "size": 100}, Gauge(0, 100, "green", 0)),
        ({"used": 59, "size": 100}, Gauge(59, 100, "green", 59)),
        ({"used": 60, "size": 100}, Gauge(60, 100, "amber", 60)),
        ({"used": 79, "size": 100}, Gauge(79, 100, "amber", 79)),
        ({"used": 80, "size": 100}, Gauge(80, 100, "red", 80)),
        ({"used": 250, "size": 100}, Gauge(250, 100, "red", 100)),
        # A window that is not reported is not guessed.
        ({"used": 5, "size": 0}, Gauge(5, None, "unknown", None)),
        ({"used": -1, "size": 100}, None),
        ({"used": True, "size": 100}, None),
        ({"used": "80", "size": 100}, None),
        ({}, None),
        (None, None),
    ],
)
def test_levels_at_the_thresholds(payload: dict[str, Any] | None, expected: Gauge | None) -> None:
    got = gauge_of(payload)
    if expected is None:
        assert got.level == "unknown" and got.percent is None and got.size is None
    else:
        assert got == expected


def test_the_newest_figures_of_every_row_in_one_query(
    engine: Engine,
    events: EventLog,
    tmp_path: Path,
) -> None:
    ids = [new_session(engine, tmp_path) for _ in range(3)]
    for used in (10, 50, 90):
        events.append(ids[0], "usage", {"used": used, "size": 100})
        events.append(ids[0], "text_delta", {"text": "x"})
    events.append(ids[1], "usage", {"used": 61, "size": 100})
    events.flush_sync()
    statements: list[str] = []

    def count(*args: Any) -> None:
        statements.append(str(args[2]))

    event.listen(engine, "before_cursor_execute", count)
    try:
        found = gauges(engine, [*ids, ids[0]])
    finally:
        event.remove(engine, "before_cursor_execute", count)
    assert len(statements) == 1, statements
    assert [found[i].level for i in ids] == ["red", "amber", "unknown"]
    assert found[ids[0]].used == 90
    assert gauges(engine, []) == {}


def test_compact_is_offered_where_the_backend_lists_it(
    engine: Engine,
    events: EventLog,
    tmp_path: Path,
) -> None:
    sid = new_session(engine, tmp_path)
    assert compact_refusal(engine, events, sid).startswith("Nothing to compact yet")
    # Claude Code has /compact once a conversation exists, even before it lists it again.
    store.update_session(engine, sid, backend_session_id="11111111-1111-4111-8111-111111111111")
    assert compact_refusal(engine, events, sid) == ""
    events.append(sid, "session_info", {"slash_commands": ["clear", "compact"]})
    events.flush_sync()
    assert compact_refusal(engine, events, sid) == ""
    # The newest list is the one that counts.
    events.append(sid, "commands", {"commands": ["review"]})
    events.flush_sync()
    assert compact_refusal(engine, events, sid) == "The claude agent offers no compact command."
    # Lists carry descriptions now: {"name", "description"} entries count by their name.
    described = [{"name": "compact", "description": "Clear the history, keep a summary"}]
    events.append(sid, "commands", {"commands": described})
    events.flush_sync()
    assert compact_refusal(engine, events, sid) == ""
