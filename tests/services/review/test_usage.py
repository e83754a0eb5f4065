"""The usage sums: per day, profile, model and backend, from stored turn results."""

from __future__ import annotations

from datetime import date
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import text
from sqlalchemy.engine import Engine

from app.db.engine import open_database
from app.schemas import ProfileCreate
from app.services.review.usage import local_offset_minutes, usage
from app.services.store import store
from app.services.store.eventlog import EventLog


@pytest.fixture
def engine(tmp_path: Path) -> Engine:
    return open_database(tmp_path / "data")


def profile(engine: Engine, name: str, backend: str, cwd: Path, model: str | None = None) -> str:
    data = ProfileCreate(name=name, backend=backend, cwd=str(cwd), model=model)
    return store.create_profile(engine, data=data).id


def turn(engine: Engine, session_id: str, at: str, **payload: Any) -> None:
    """A stored turn result, dated ``at`` (UTC)."""
    seq = (
        EventLog(engine).append(session_id, "turn_end", {"stop_reason": "end_turn", **payload}).seq
    )
    with engine.begin() as conn:
        conn.execute(
            text("UPDATE event SET created_at = :at WHERE session_id = :s AND seq = :seq"),
            {"at": at, "s": session_id, "seq": seq},
        )


@pytest.fixture
def seeded(engine: Engine, tmp_path: Path) -> dict[str, str]:
    work = profile(engine, "work", "claude", tmp_path)
    side = profile(engine, "side", "gemini", tmp_path, model="gemini-2.5-pro")
    a = store.create_session(engine, profile_id=work, title="a").id
    b = store.create_session(engine, profile_id=work, title="b").id
    c = store.create_session(engine, profile_id=side, title="c").id
    usage_a = {"input_tokens": 100, "output_tokens": 10, "cache_read_input_tokens": 1000}
    turn(engine, a, "2026-12-01 10:00:00", cost_usd=0.5, usage=usage_a, model="claude-sonnet")
    turn(engine, a, "2026-12-02 10:00:00", cost_usd=0.25, usage=usage_a, model="claude-opus")
    turn(engine, b, "2026-12-02 11:00:00", cost_usd=0.25, usage=usage_a, model="claude-opus")
    # gemini reports tokens (ACP names) but no cost, and no model in the payload.
    usage_c = {"input_tokens": 7, "output_tokens": 3, "cached_read_tokens": 5}
    turn(engine, c, "2026-12-02 12:00:00", cost_usd=None, usage=usage_c)
    # Garbage from a CLI counts as nothing.
    turn(engine, c, "2026-12-03 12:00:00", cost_usd="free", usage={"input_tokens": -4})
    EventLog(engine).append(a, "user_message", {"text": "not a turn"})
    return {"work": work, "side": side}


def rows(found: Any) -> dict[str, dict[str, Any]]:
    return {r.key: r.to_dict() for r in found.groups}


def test_per_day_sums_tokens_cost_turns_and_sessions(engine: Engine, seeded: Any) -> None:
    found = usage(engine, group="day", offset_minutes=0)
    days = rows(found)
    assert list(days) == ["2026-12-01", "2026-12-02", "2026-12-03"]
    assert days["2026-12-02"] == {
        "key": "2026-12-02",
        "label": "2026-12-02",
        "cost_usd": 0.5,
        "input_tokens": 207,
        "output_tokens": 23,
        "cache_read_tokens": 2005,
        "turns": 3,
        "sessions": 3,
    }
    # No turn of that day reported a cost: none is made up.
    assert days["2026-12-03"]["cost_usd"] is None
    assert days["2026-12-03"]["input_tokens"] == 0
    total = found.total.to_dict()
    assert (total["cost_usd"], total["turns"], total["sessions"]) == (1.0, 5, 3)


def test_profile_model_and_backend_groups(engine: Engine, seeded: dict[str, str]) -> None:
    by_profile = rows(usage(engine, group="profile", offset_minutes=0))
    assert by_profile[seeded["work"]]["label"] == "work"
    assert by_profile[seeded["work"]]["cost_usd"] == 1.0
    assert by_profile[seeded["side"]]["cost_usd"] is None
    by_model = rows(usage(engine, group="model", offset_minutes=0))
    # The turn's own model first, then the profile's.
    assert set(by_model) == {"claude-sonnet", "claude-opus", "gemini-2.5-pro"}
    assert by_model["claude-opus"]["turns"] == 2
    assert by_model["gemini-2.5-pro"]["input_tokens"] == 7
    by_backend = rows(usage(engine, group="backend", offset_minutes=0))
    assert {k: v["turns"] for k, v in by_backend.items()} == {"claude": 3, "gemini": 2}


def test_a_period_is_whole_local_days(engine: Engine, seeded: Any) -> None:
    found = usage(
        engine, group="day", since=date(2026, 12, 2), until=date(2026, 12, 2), offset_minutes=0
    )
    assert list(rows(found)) == ["2026-12-02"]
    assert found.total.turns == 3
    # Thirteen hours east, 11:00 UTC on the 2nd is already midnight of the 3rd there:
    # the days move with the machine's clock.
    east = rows(usage(engine, group="day", offset_minutes=13 * 60))
    assert {k: v["turns"] for k, v in east.items()} == {
        "2026-12-01": 1,
        "2026-12-02": 1,
        "2026-12-03": 2,
        "2026-12-04": 1,
    }


def test_days_split_by_profile_for_the_stacked_chart(engine: Engine, seeded: Any) -> None:
    found = usage(engine, group="day", split=True, offset_minutes=0)
    keys = [r.key for r in found.groups]
    assert f"2026-12-02|{seeded['work']}" in keys and f"2026-12-02|{seeded['side']}" in keys
    labels = {r.label for r in found.groups}
    assert "2026-12-02|work" in labels


def test_nothing_stored_gives_empty_groups_and_a_zero_total(engine: Engine) -> None:
    found = usage(engine)
    assert found.groups == []
    assert found.total.turns == 0 and found.total.cost_usd is None


def test_the_local_offset_is_whole_minutes() -> None:
    assert isinstance(local_offset_minutes(), int)


def test_a_turn_with_its_own_time_is_dated_by_it(engine: Engine, tmp_path: Path) -> None:
    # An imported turn is stored today but ran when its transcript says.
    owner = profile(engine, "p", "claude", tmp_path)
    sid = store.create_session(engine, profile_id=owner, title="").id
    EventLog(engine).append(
        sid, "turn_end", {"timestamp": "2026-11-01T23:30:00.000Z", "usage": {"input_tokens": 5}}
    )
    assert [r.key for r in usage(engine, offset_minutes=0).groups] == ["2026-11-01"]
    assert [r.key for r in usage(engine, offset_minutes=60).groups] == ["2026-11-02"]
    inside = usage(engine, since=date(2026, 11, 1), until=date(2026, 11, 1), offset_minutes=0)
    assert inside.total.input_tokens == 5
    assert usage(engine, since=date(2026, 11, 2), offset_minutes=0).total.turns == 0
