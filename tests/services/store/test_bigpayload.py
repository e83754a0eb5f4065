"""Payloads of megabytes are encoded on the preparer's thread: other sessions' events go
on to the writer meanwhile, the big event's session keeps its order, and a flush or a
close covers what is still being prepared."""

from __future__ import annotations

import json
import threading
from datetime import UTC, datetime
from pathlib import Path

from sqlalchemy.engine import Engine

from app.services.store.bigpayload import BIG_PAYLOAD_CHARS, Preparer, encode_gently, is_big
from app.services.store.eventlog import EventLog, StoredEvent
from app.services.store.records import encode_payload
from tests.services.store.test_eventwriter import new_session, take

BIG_TEXT = "x" * (BIG_PAYLOAD_CHARS * 4) + 'é\n"\\' + "\ud83d"


def record(sid: str, seq: int, body: str) -> StoredEvent:
    return StoredEvent(sid, seq, "tool_result", datetime.now(UTC), body, {"text": "t"})


def test_a_big_payloads_session_waits_behind_it_and_other_sessions_do_not() -> None:
    release = threading.Event()
    forwarded: list[object] = []

    def slow_encode(r: StoredEvent) -> None:
        assert release.wait(10)
        r.payload_json = '{"text":"big"}'

    preparer = Preparer(forwarded.append, slow_encode)
    big = record("a", 1, "")
    assert preparer.take(big)
    # Another session's event is not held: it goes straight to the writer.
    assert not preparer.take(record("b", 1, '{"text":"b"}'))
    # The big event's own session follows it, and so does a barrier.
    after = record("a", 2, '{"text":"a2"}')
    assert preparer.take(after)
    barrier = object()
    assert preparer.take_barrier(barrier)
    assert forwarded == []
    release.set()
    preparer.close(10)
    assert forwarded == [big, after, barrier]
    assert big.payload_json == '{"text":"big"}'
    # Once it has all passed, nothing of session "a" is held any more.
    assert not preparer.take(record("a", 3, '{"text":"a3"}'))
    assert not preparer.take_barrier(object())


def test_an_encoding_that_fails_still_reaches_the_writer_in_its_place() -> None:
    forwarded: list[object] = []

    def broken(r: StoredEvent) -> None:
        raise MemoryError("no room")

    preparer = Preparer(forwarded.append, broken)
    big = record("a", 1, "")
    assert preparer.take(big)
    preparer.close(10)
    assert forwarded == [big]
    assert "unstorable" in json.loads(big.payload_json)


def test_sliced_encoding_is_the_same_text_as_encoding_at_once() -> None:
    payload = {"content": [{"type": "text", "text": BIG_TEXT}], "n": 1, "ok": None}
    assert is_big(payload)
    assert not is_big({"text": "small"})
    pauses: list[int] = []
    text = encode_gently(payload, lambda: pauses.append(1))
    assert text == encode_payload(payload)
    assert len(pauses) >= 2


async def test_a_big_event_is_stored_in_order_with_its_sessions_others(
    engine: Engine, tmp_path: Path
) -> None:
    a = new_session(engine, tmp_path)
    b = new_session(engine, tmp_path)
    events = EventLog(engine)
    with events.subscribe(a) as sub:
        events.append(a, "user_message", {"text": "before"})
        events.append(a, "tool_result", {"text": BIG_TEXT})
        events.append(a, "user_message", {"text": "after"})
        events.append(b, "user_message", {"text": "elsewhere"})
        await events.flush()
        # flush() waited for the big one too: all is stored, in each session's order.
        assert [(e["seq"], e["text"]) for e in events.list(a)] == [
            (1, "before"),
            (2, BIG_TEXT),
            (3, "after"),
        ]
        assert [e["text"] for e in events.list(b)] == ["elsewhere"]
        got = await take(sub, 3)
    assert [e.seq for e in got] == [1, 2, 3]
    assert json.loads(got[1].json)["text"] == BIG_TEXT
    await events.close()


async def test_close_stores_a_big_event_still_being_prepared(
    engine: Engine, tmp_path: Path
) -> None:
    a = new_session(engine, tmp_path)
    events = EventLog(engine)
    events.append(a, "tool_result", {"text": BIG_TEXT})
    events.append(a, "user_message", {"text": "last"})
    await events.close()
    again = EventLog(engine)
    assert [e["seq"] for e in again.list(a)] == [1, 2]
    assert again.list(a)[0]["text"] == BIG_TEXT
    await again.close()
