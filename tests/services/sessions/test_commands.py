"""The slash commands a session offers, as its stored events tell them."""

from __future__ import annotations

from pathlib import Path

from sqlalchemy.engine import Engine

from app.services.sessions.commands import command_entries, command_names, offered_commands
from app.services.store.eventlog import EventLog
from tests.services.store.test_eventwriter import new_session


def test_names_and_descriptions_of_both_stored_shapes() -> None:
    listed = ["/compact", "clear", {"name": "review", "description": "Look it over"}, "clear"]
    assert command_names([*listed, 3, "", "x" * 101]) == ["compact", "clear", "review"]
    assert command_entries(listed) == {"compact": "", "clear": "", "review": "Look it over"}
    assert command_entries([{"name": "a", "description": 5}]) == {"a": ""}
    assert command_names("compact") == [] and command_entries(None) == {}


def test_the_newest_list_counts_and_a_bare_one_keeps_the_descriptions(
    engine: Engine,
    events: EventLog,
    tmp_path: Path,
) -> None:
    sid = new_session(engine, tmp_path)
    assert offered_commands(events, sid) is None
    # Claude Code: names at start, then described once.
    events.append(sid, "session_info", {"slash_commands": ["clear", "compact"]})
    events.flush_sync()
    assert offered_commands(events, sid) == {"clear": "", "compact": ""}
    described = [{"name": "compact", "description": "Keep a summary"}, {"name": "clear"}]
    events.append(sid, "commands", {"commands": described})
    events.flush_sync()
    assert offered_commands(events, sid) == {"compact": "Keep a summary", "clear": ""}
    # A later start names them again, in its own order, with one more: the descriptions stay.
    events.append(sid, "session_info", {"slash_commands": ["/clear", "compact", "review"]})
    events.flush_sync()
    assert offered_commands(events, sid) == {"clear": "", "compact": "Keep a summary", "review": ""}
    # An ACP agent's newer described list replaces the whole set.
    events.append(sid, "commands", {"commands": [{"name": "plan", "description": "Plan"}]})
    events.flush_sync()
    assert offered_commands(events, sid) == {"plan": "Plan"}
