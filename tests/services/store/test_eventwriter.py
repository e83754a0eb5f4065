"""The event log's writer thread: batches, order, a locked or refusing database, shutdown,
and one encoding per event shared by every subscriber."""

from __future__ import annotations

import asyncio
import json
import logging
import sqlite3
from pathlib import Path

import pytest
from sqlalchemy.engine import Engine

from app.schemas import ProfileCreate
from app.services.store import store
from app.services.store.eventlog import EventLog, StoredEvent, Subscription


def new_session(engine: Engine, cwd: Path) -> str:
    profile = store.create_profile(
        engine, data=ProfileCreate(name="p", backend="claude", cwd=str(cwd))
    )
    return store.create_session(engine, profile_id=profile.id, title="t").id


async def take(sub: Subscription, n: int) -> list[StoredEvent]:
    out: list[StoredEvent] = []
    while len(out) < n:
        item = await asyncio.wait_for(sub.queue.get(), timeout=10)
        assert item is not None
        out.append(item)
    return out


async def test_a_burst_is_stored_in_few_transactions_in_order(
    engine: Engine, tmp_path: Path
) -> None:
    sid = new_session(engine, tmp_path)
    events = EventLog(engine)
    for n in range(2000):
        events.append(sid, "user_message", {"text": f"m{n}"})
    await events.flush()
    stored = events.list(sid)
    assert [e["seq"] for e in stored] == list(range(1, 2001))
    assert [e["text"] for e in stored] == [f"m{n}" for n in range(2000)]
    # Everything appended while a commit was running rides along in the next one.
    assert events.writer.commits < 100, events.writer.commits
    await events.close()


async def test_appending_never_waits_for_a_locked_database(
    engine: Engine, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Another process holds the write lock: the loop goes on, the events wait (and are
    retried) in order, nobody sees them until they are stored, then everybody does."""
    sid = new_session(engine, tmp_path)
    events = EventLog(engine, busy_timeout_s=0.05)
    locker = sqlite3.connect(tmp_path / "data" / "angelia.db", isolation_level=None)
    locker.execute("BEGIN IMMEDIATE")
    try:
        with events.subscribe(sid) as sub, caplog.at_level(logging.ERROR):
            for n in range(5):
                events.append(sid, "user_message", {"text": f"m{n}"})
            # The loop is free: other work runs while the writer keeps failing.
            ticks = 0
            for _ in range(20):
                await asyncio.sleep(0.02)
                ticks += 1
            assert ticks == 20
            assert sub.queue.empty(), "an event was handed out before it was stored"
            assert events.list(sid) == []
            locker.execute("ROLLBACK")
            got = await take(sub, 5)
        assert [e.seq for e in got] == [1, 2, 3, 4, 5]
        assert any("retrying" in r.getMessage() for r in caplog.records)
        assert [e["text"] for e in events.list(sid)] == [f"m{n}" for n in range(5)]
    finally:
        locker.close()
        await events.close()


async def test_a_refused_row_is_dropped_without_holding_up_the_rest(
    engine: Engine, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    sid = new_session(engine, tmp_path)
    events = EventLog(engine)
    with caplog.at_level(logging.ERROR):
        events.append("no-such-session", "user_message", {"text": "orphan"})
        events.append(sid, "user_message", {"text": "kept"})
        await events.flush()
    assert [e["text"] for e in events.list(sid)] == ["kept"]
    assert events.writer.dropped == 1
    assert any("dropped event no-such-session #1" in r.getMessage() for r in caplog.records)
    await events.close()


async def test_close_stores_what_is_still_queued(engine: Engine, tmp_path: Path) -> None:
    sid = new_session(engine, tmp_path)
    events = EventLog(engine)
    for n in range(500):
        events.append(sid, "user_message", {"text": f"m{n}"})
    await events.close()
    assert len(EventLog(engine).list(sid)) == 500


def test_without_an_event_loop_append_returns_once_stored(engine: Engine, tmp_path: Path) -> None:
    sid = new_session(engine, tmp_path)
    events = EventLog(engine)
    events.append(sid, "user_message", {"text": "at once"})
    assert [e["text"] for e in events.list(sid)] == ["at once"]
    assert EventLog(engine).last_seq(sid) == 1


async def test_every_subscriber_gets_the_same_encoded_event(engine: Engine, tmp_path: Path) -> None:
    sid = new_session(engine, tmp_path)
    events = EventLog(engine)
    # A payload field named like an envelope field loses to the envelope, as in as_dict.
    payload = {"text": 'héllo "there"\n', "kind": "from-the-payload", "n": [1, 2.5, None]}
    with events.subscribe(sid) as a, events.subscribe(sid) as b:
        appended = events.append(sid, "user_message", payload)
        [first] = await take(a, 1)
        [second] = await take(b, 1)
    assert first is second
    assert first.json is second.json
    decoded = json.loads(first.json)
    assert appended is first
    assert decoded == first.as_dict()
    assert decoded["kind"] == "user_message" and decoded["text"] == payload["text"]
    # Read back from SQLite, the stored text is reused as it is.
    [replayed] = events.records(sid)
    assert replayed.payload_json == first.payload_json
    assert json.loads(replayed.json) == decoded
    await events.close()


async def test_close_streams_ends_every_subscription(engine: Engine, tmp_path: Path) -> None:
    sid = new_session(engine, tmp_path)
    events = EventLog(engine)
    with events.subscribe(sid) as sub:
        events.close_streams()
        assert await asyncio.wait_for(sub.queue.get(), 1) is None
    with events.subscribe(sid) as later:
        assert await asyncio.wait_for(later.queue.get(), 1) is None


async def test_a_reader_waits_for_its_own_backlog_only_and_a_refused_one_releases_it(
    engine: Engine, tmp_path: Path
) -> None:
    flooding, quiet = new_session(engine, tmp_path), new_session(engine, tmp_path)
    events = EventLog(engine)
    for n in range(5000):
        events.append(flooding, "text_delta", {"text": f"{n} "})
    # Another session's reader is not held up by that backlog: it does not even yield.
    waiting = events.caught_up(quiet, 0)
    with pytest.raises(StopIteration):
        waiting.send(None)
    # The flooding one goes on once at most 100 of its events are left to store.
    await asyncio.wait_for(events.caught_up(flooding, 100), timeout=30)
    assert len(events.list(flooding)) >= 4900
    # Events the database refuses (their session is gone) still count as done.
    for n in range(3):
        events.append("no-such-session", "text_delta", {"text": f"{n}"})
    await asyncio.wait_for(events.caught_up("no-such-session", 0), timeout=30)
    assert events.writer.dropped == 3
    await events.close()


async def test_once_the_log_is_closed_nobody_waits_for_the_writer(
    engine: Engine, tmp_path: Path
) -> None:
    sid = new_session(engine, tmp_path)
    events = EventLog(engine)
    events.append(sid, "text_delta", {"text": "stored"})
    await events.close()
    # Appended after the writer stopped: never stored, and a reader must not wait for it.
    events.append(sid, "text_delta", {"text": "too late"})
    await asyncio.wait_for(events.caught_up(sid, 0), timeout=5)


async def test_the_log_is_copied_back_into_the_database_by_a_thread_of_its_own(
    engine: Engine, tmp_path: Path
) -> None:
    # A commit checkpoints only once the log is ten times SQLite's default long...
    with engine.connect() as conn:
        assert conn.exec_driver_sql("PRAGMA wal_autocheckpoint").scalar() == 10_000
    sid = new_session(engine, tmp_path)
    events = EventLog(engine)
    db = tmp_path / "data" / "angelia.db"
    before = db.stat().st_size
    # ... so after an 8 MB tool result (2,000 pages) it is the checkpoint thread that
    # copies the event into the database file, and soon.
    events.append(sid, "tool_result", {"output": "x" * 8_000_000})
    await events.flush()
    # (The file grows while the copy runs; the count goes up once it has returned.)
    for _ in range(200):
        if db.stat().st_size > before + 8_000_000 and events.writer.checkpoints >= 1:
            break
        await asyncio.sleep(0.05)
    assert db.stat().st_size > before + 8_000_000
    assert events.writer.checkpoints >= 1
    await events.close()
