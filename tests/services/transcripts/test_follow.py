"""Following a terminal session's transcript as it grows: half-written lines, unknown
lines, turns left open until the file ends them, and a prompt stop."""

from __future__ import annotations

import asyncio
import json
import shutil
import time
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy.engine import Engine

from app.db.engine import open_database
from app.services.store.eventlog import EventLog
from app.services.transcripts import importer
from app.services.transcripts.claude_reader import TranscriptReader
from app.services.transcripts.follow import Follower, find_transcript

SID = "cccccccc-3333-4333-8333-333333333333"
CWD = "/srv/live/app"
WAIT_S = 10.0


def entry(uuid: str, parent: str | None, kind: str, **message: Any) -> dict[str, Any]:
    return {
        "type": kind,
        "uuid": uuid,
        "parentUuid": parent,
        "sessionId": SID,
        "cwd": CWD,
        "timestamp": f"2026-12-04T10:00:{len(uuid):02d}Z",
        "message": {"role": kind, **message},
    }


PROMPT = entry("u1", None, "user", content="Make a file")
CALL = entry(
    "a1",
    "u1",
    "assistant",
    id="msg_1",
    model="claude-fake-1",
    stop_reason="tool_use",
    usage={"input_tokens": 10, "output_tokens": 5},
    content=[{"type": "tool_use", "id": "toolu_1", "name": "Bash", "input": {"command": "ls"}}],
)
RESULT = entry(
    "u2",
    "a1",
    "user",
    content=[{"type": "tool_result", "tool_use_id": "toolu_1", "content": "a.txt"}],
)
ANSWER = entry(
    "a2",
    "u2",
    "assistant",
    id="msg_2",
    model="claude-fake-1",
    stop_reason="end_turn",
    usage={"input_tokens": 20, "output_tokens": 7},
    content=[{"type": "text", "text": "Made it."}],
)
UNKNOWN = {"type": "hologram-state", "sessionId": SID, "beams": 3}


def line(obj: dict[str, Any]) -> str:
    return json.dumps(obj) + "\n"


def write(path: Path, text: str) -> None:
    with path.open("a") as f:
        f.write(text)


@pytest.fixture
def db(tmp_path: Path) -> tuple[Engine, EventLog]:
    engine = open_database(tmp_path / "data")
    return engine, EventLog(engine)


@pytest.fixture
def transcript(tmp_path: Path) -> Path:
    folder = tmp_path / "projects" / "-srv-live-app"
    folder.mkdir(parents=True)
    return folder / f"{SID}.jsonl"


@pytest.fixture
async def follower(tmp_path: Path, db: tuple[Engine, EventLog]) -> AsyncIterator[Follower]:
    # An empty /proc: no claude runs anywhere, so only the idle time ends a following.
    proc = tmp_path / "proc"
    proc.mkdir()
    follower = Follower(db[0], db[1], idle_s=3600, check_ms=200, proc=proc)
    try:
        yield follower
    finally:
        await follower.close()


async def wait_for(check: Callable[[], bool], what: str) -> None:
    deadline = time.monotonic() + WAIT_S
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError(f"not within {WAIT_S} s: {what}")
        await asyncio.sleep(0.05)


def kinds(events: EventLog, chat_id: str) -> list[str]:
    return [e["kind"] for e in events.list(chat_id)]


def test_reader_leaves_a_half_written_line_for_later(transcript: Path) -> None:
    half = line(CALL)
    transcript.write_text(line(PROMPT) + "garbage that is no JSON\n" + half[:40])
    reader = TranscriptReader(transcript)
    assert reader.read(complete_only=True) == 2
    assert [e["uuid"] for e in reader.transcript.entries] == ["u1"]
    assert reader.transcript.malformed == 1
    write(transcript, half[40:])
    assert reader.read(complete_only=True) == 1
    assert [e["uuid"] for e in reader.transcript.entries] == ["u1", "a1"]
    assert reader.transcript.malformed == 1


def test_reader_starts_again_when_the_file_is_rewritten(transcript: Path) -> None:
    transcript.write_text(line(PROMPT) + line(CALL))
    reader = TranscriptReader(transcript)
    reader.read()
    transcript.write_text(line(PROMPT))
    assert reader.read() == 1
    assert [e["uuid"] for e in reader.transcript.entries] == ["u1"]


async def test_unknown_lines_are_kept_raw_and_bookkeeping_is_not(
    db: tuple[Engine, EventLog], transcript: Path
) -> None:
    bookkeeping = {"type": "cost-state", "sessionId": SID, "totalCostUSD": 0.1}
    answer = ANSWER | {"parentUuid": "u1"}
    transcript.write_text(line(PROMPT) + line(UNKNOWN) + line(bookkeeping) + line(answer))
    report = await importer.import_claude(db[0], db[1], transcript)
    chat_id = report.files[0].chat_session_id
    assert chat_id is not None
    events = db[1].list(chat_id)
    assert [e["kind"] for e in events] == [
        "user_message",
        "note",
        "assistant_message",
        "turn_end",
    ]
    raw = events[1]
    assert raw["note"] == "unknown_line" and raw["line_type"] == "hologram-state"
    assert json.loads(raw["text"]) == UNKNOWN
    again = await importer.import_claude(db[0], db[1], transcript)
    assert again.files[0].status == "unchanged"
    assert len(db[1].list(chat_id)) == len(events)


async def test_a_followed_file_shows_each_addition_and_closes_the_turn_once(
    db: tuple[Engine, EventLog], transcript: Path, follower: Follower
) -> None:
    events = db[1]
    transcript.write_text(line(PROMPT) + line(CALL))
    report = await follower.follow(transcript)
    chat_id = report.chat_session_id
    assert report.status == "created" and chat_id is not None
    assert follower.is_following(chat_id)
    # The model asked for a tool: the turn goes on, so no footer yet.
    assert kinds(events, chat_id) == ["user_message", "tool_call"]

    whole = line(RESULT)
    write(transcript, whole[:30])
    write(transcript, whole[30:])
    await wait_for(lambda: "tool_result" in kinds(events, chat_id), "the tool's result")
    assert "turn_end" not in kinds(events, chat_id)

    write(transcript, line(UNKNOWN) + line(ANSWER))
    await wait_for(lambda: "turn_end" in kinds(events, chat_id), "the turn's end")
    shown = events.list(chat_id)
    assert [e["kind"] for e in shown] == [
        "user_message",
        "tool_call",
        "tool_result",
        "note",
        "assistant_message",
        "turn_end",
    ]
    end = shown[-1]
    # One footer for the whole turn, with both responses' tokens.
    assert end["usage"]["input_tokens"] == 30 and end["usage"]["output_tokens"] == 12
    assert end["model"] == "claude-fake-1"

    # An import of the same file meanwhile goes through the follower: nothing twice.
    again = await importer.import_claude(db[0], events, transcript)
    assert again.files[0].events_added == 0
    assert len(events.list(chat_id)) == len(shown)


async def test_stopping_imports_the_rest_and_closes_the_open_turn(
    db: tuple[Engine, EventLog], transcript: Path, follower: Follower
) -> None:
    transcript.write_text(line(PROMPT) + line(CALL))
    chat_id = (await follower.follow(transcript)).chat_session_id
    assert chat_id is not None
    started = time.monotonic()
    assert await follower.stop(chat_id)
    assert time.monotonic() - started < 3
    assert not follower.is_following(chat_id)
    assert kinds(db[1], chat_id) == ["user_message", "tool_call", "turn_end"]
    assert not await follower.stop(chat_id)


async def test_an_idle_file_with_no_cli_left_is_let_go(
    db: tuple[Engine, EventLog], transcript: Path, tmp_path: Path
) -> None:
    transcript.write_text(line(PROMPT) + line(CALL))
    proc = tmp_path / "proc"
    proc.mkdir()
    follower = Follower(db[0], db[1], idle_s=0.3, check_ms=100, proc=proc)
    try:
        chat_id = (await follower.follow(transcript)).chat_session_id
        assert chat_id is not None
        await wait_for(lambda: not follower.is_following(chat_id), "the following to end")
        await wait_for(lambda: "turn_end" in kinds(db[1], chat_id), "the turn closed")
    finally:
        await follower.close()


async def test_closing_stops_every_watcher_within_seconds(
    db: tuple[Engine, EventLog], tmp_path: Path
) -> None:
    proc = tmp_path / "proc"
    proc.mkdir()
    follower = Follower(db[0], db[1], proc=proc)
    ids = []
    for n in range(3):
        folder = tmp_path / "projects" / f"-srv-{n}"
        folder.mkdir(parents=True)
        path = folder / f"{n}{SID[1:]}.jsonl"
        path.write_text(line(PROMPT | {"sessionId": path.stem}))
        ids.append((await follower.follow(path)).chat_session_id)
    assert all(i is not None and follower.is_following(i) for i in ids)
    started = time.monotonic()
    await follower.close()
    assert time.monotonic() - started < 3
    assert not any(follower.is_following(i) for i in ids if i)
    # Once closing, nothing new is followed.
    report = await follower.follow(tmp_path / "projects" / "-srv-0" / f"0{SID[1:]}.jsonl")
    assert report.chat_session_id is not None and not follower.is_following(ids[0] or "")


def test_find_transcript(tmp_path: Path, transcript: Path) -> None:
    transcript.write_text(line(PROMPT))
    assert find_transcript(tmp_path / "projects", SID) == transcript
    assert find_transcript(tmp_path / "projects", "../x") is None
    assert find_transcript(tmp_path / "nowhere", SID) is None


async def test_the_terminal_cli_exiting_is_said_once(
    db: tuple[Engine, EventLog], transcript: Path, tmp_path: Path
) -> None:
    # A /proc with one claude whose working folder is the session's.
    proc = tmp_path / "fakeproc"
    (proc / "4242").mkdir(parents=True)
    (proc / "4242" / "cmdline").write_bytes(b"node\0/usr/lib/claude-code/cli.js\0-p\0")
    (proc / "4242" / "cwd").symlink_to(CWD)
    transcript.write_text(line(PROMPT) + line(CALL))
    follower = Follower(db[0], db[1], idle_s=3600, check_ms=100, proc=proc)
    try:
        chat_id = (await follower.follow(transcript)).chat_session_id
        assert chat_id is not None
        assert follower.cli_running(CWD) is True
        await asyncio.sleep(0.5)
        assert "note" not in kinds(db[1], chat_id)
        shutil.rmtree(proc / "4242")
        await wait_for(lambda: "note" in kinds(db[1], chat_id), "the exit said")
        await asyncio.sleep(0.5)
        notes = [e for e in db[1].list(chat_id) if e["kind"] == "note"]
        assert [n["note"] for n in notes] == ["terminal_exited"]
        assert notes[0]["imported"] is True
        # Still followed (the file may yet grow), and still the terminal's session.
        assert follower.is_following(chat_id)
        again = await importer.import_claude(db[0], db[1], transcript)
        assert again.files[0].status == "unchanged"
    finally:
        await follower.close()


async def test_taking_over_after_a_following_ended_by_itself_sticks(
    db: tuple[Engine, EventLog], transcript: Path, tmp_path: Path
) -> None:
    transcript.write_text(line(PROMPT) + line(CALL))
    proc = tmp_path / "proc"
    proc.mkdir()
    follower = Follower(db[0], db[1], idle_s=0.3, check_ms=100, proc=proc)
    try:
        chat_id = (await follower.follow(transcript)).chat_session_id
        assert chat_id is not None
        await wait_for(lambda: not follower.is_following(chat_id), "the following to end")
        # Nothing runs any more, but the page offered Continue here: it must hold.
        assert await follower.take_over(chat_id, CWD) is False
        assert kinds(db[1], chat_id)[-1] == "note"
        report = await follower.follow(transcript)
        assert report.status == "skipped" and not follower.is_following(chat_id)
        # Once the app's, taking over again changes nothing.
        count = len(kinds(db[1], chat_id))
        assert await follower.take_over(chat_id, CWD) is False
        assert len(kinds(db[1], chat_id)) == count
    finally:
        await follower.close()
