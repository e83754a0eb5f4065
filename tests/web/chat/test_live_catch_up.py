"""A live stream's client that fell behind: the text pieces waiting for it are joined,
every piece's text once and in order, and a replay from the log is exact."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest
from sqlalchemy.engine import Engine
from starlette.requests import Request

from app.db.engine import open_database
from app.services.store.catchup import join_text_runs
from app.services.store.eventlog import EventLog
from app.services.store.records import StoredEvent, encode_payload
from app.web.chat.streaming import replay_then_follow
from tests.services.store.test_eventwriter import new_session

AT = datetime(2026, 1, 1, tzinfo=UTC)


def event(seq: int, kind: str, **payload: object) -> StoredEvent:
    return StoredEvent("s", seq, kind, AT, encode_payload(payload), dict(payload))


def test_runs_of_one_messages_pieces_are_joined_and_nothing_else_is() -> None:
    events = [
        event(1, "text_delta", text="Hel", message_id="a"),
        event(2, "text_delta", text="lo", message_id="a"),
        event(3, "text_delta", text=" there", message_id="b"),
        event(4, "tool_call", name="Bash"),
        event(5, "text_delta", text="x", message_id="b"),
        event(6, "text_delta", text="y", message_id="b", parent_tool_call_id="t1"),
        event(7, "text_delta", text="z", message_id="b", parent_tool_call_id="t1"),
    ]
    joined = join_text_runs(events)
    assert [(e.seq, e.kind, e.payload.get("text")) for e in joined] == [
        (2, "text_delta", "Hello"),
        (3, "text_delta", " there"),
        (4, "tool_call", None),
        (5, "text_delta", "x"),
        (7, "text_delta", "yz"),
    ]
    # The joined event is what the API sends: its own JSON, the last piece's seq and time.
    assert '"text":"Hello"' in joined[0].json and '"seq":2' in joined[0].json
    assert joined[4].payload["parent_tool_call_id"] == "t1"
    # Each says how many stored events it stands for: those just before its own seq.
    assert [e.payload.get("joined") for e in joined] == [2, None, None, None, 2]
    # One event at a time (a client that keeps up) goes out as stored.
    assert join_text_runs(events[:1]) == events[:1]


@pytest.fixture
def engine(tmp_path: Path) -> Iterator[Engine]:
    engine = open_database(tmp_path / "data")
    yield engine
    engine.dispose()


async def test_a_client_behind_a_flood_gets_it_joined_and_a_replay_gets_it_exactly(
    engine: Engine, tmp_path: Path
) -> None:
    sid = new_session(engine, tmp_path)
    events = EventLog(engine)
    request = Request({"type": "http", "method": "GET", "path": "/", "headers": []})
    stream = replay_then_follow(events, sid, 0, request)
    first = asyncio.ensure_future(anext(stream))  # subscribed, nothing stored yet
    await asyncio.sleep(0.05)
    pieces = [f"{n} " for n in range(1000)]
    for piece in pieces:
        events.append(sid, "text_delta", {"text": piece, "message_id": "m"})
    events.append(sid, "turn_end", {})
    await events.flush()

    # What is ready comes as one list: the stream writes it to the client at once.
    got = list(await first)
    while got[-1].kind != "turn_end":
        got += await asyncio.wait_for(anext(stream), timeout=10)
    texts = [e.payload["text"] for e in got if e.kind == "text_delta"]
    assert "".join(texts) == "".join(pieces)
    # Fell behind from the first piece: far fewer events than pieces, in order.
    assert len(texts) < 100, len(texts)
    assert [e.seq for e in got] == sorted(e.seq for e in got)
    assert got[-1].seq == 1001
    await stream.aclose()

    # Replayed from the log (a reconnect with Last-Event-ID 0): every piece as stored.
    replay = replay_then_follow(events, sid, 0, request)
    stored: list[StoredEvent] = []
    while len(stored) < 1001:
        stored += await anext(replay)
    assert [e.payload.get("text") for e in stored[:1000]] == pieces
    await replay.aclose()
    await events.close()
