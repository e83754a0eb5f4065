"""Importing Claude Code transcripts: thread rebuild, titles, counts, idempotence."""

from __future__ import annotations

import json
import shutil
from datetime import date
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy.engine import Engine
from sqlmodel import Session, select

from app.db.engine import open_database
from app.db.models import ChatSession, Profile
from app.errors import ValidationFailed
from app.services.review.usage import usage
from app.services.store.eventlog import EventLog
from app.services.transcripts import importer
from app.services.transcripts.claude_transcripts import main_thread
from app.settings import Settings

FIXTURES = Path(__file__).parents[2] / "fixtures" / "claude_projects"
SHOP = "11111111-1111-4111-8111-111111111111"
HAIKU = "22222222-2222-4222-8222-222222222222"
NOTES = "33333333-3333-4333-8333-333333333333"
FIX = "44444444-4444-4444-8444-444444444444"


@pytest.fixture
def db(tmp_path: Path) -> tuple[Engine, EventLog]:
    engine = open_database(tmp_path / "data")
    return engine, EventLog(engine)


@pytest.fixture
def projects(tmp_path: Path) -> Path:
    """A private copy: some tests append to or delete the transcripts."""
    return Path(shutil.copytree(FIXTURES, tmp_path / "projects"))


async def run(db: tuple[Engine, EventLog], path: Path) -> importer.ClaudeImportReport:
    return await importer.import_claude(db[0], db[1], path)


def by_backend_id(report: importer.ClaudeImportReport) -> dict[str, importer.FileReport]:
    return {f.backend_session_id: f for f in report.files}


def events_of(db: tuple[Engine, EventLog], report: Any, backend_id: str) -> list[dict[str, Any]]:
    chat_id = by_backend_id(report)[backend_id].chat_session_id
    assert chat_id is not None
    return db[1].list(chat_id)


def append_lines(path: Path, *entries: dict[str, Any]) -> None:
    with path.open("a") as f:
        for entry in entries:
            f.write(json.dumps(entry) + "\n")


def shop_file(projects: Path) -> Path:
    return projects / "-srv-demo-shop" / f"{SHOP}.jsonl"


async def test_rebuilds_the_main_thread_with_tool_calls_and_results(
    db: tuple[Engine, EventLog], projects: Path
) -> None:
    report = await run(db, projects)
    events = events_of(db, report, SHOP)
    assert [e["kind"] for e in events] == [
        "user_message",
        "thought",
        "assistant_message",
        "tool_call",
        "tool_call",
        "tool_result",
        "tool_result",
        "assistant_message",
        "turn_end",
    ]
    assert events[0]["text"] == "List the files in this project and show me the README"
    calls = [e for e in events if e["kind"] == "tool_call"]
    assert [(c["tool"], c["title"], c["tool_kind"]) for c in calls] == [
        ("Bash", "ls", "execute"),
        ("Read", "/srv/demo/shop/README.md", "read"),
    ]
    # The Read result hangs off a side branch (a parallel call); it is put back.
    results = {e["tool_call_id"]: e["output"] for e in events if e["kind"] == "tool_result"}
    assert results == {"toolu_01": "README.md\nsrc\ntests", "toolu_02": "# Shop\nA demo shop."}
    everything = json.dumps(events)
    assert "No TODO comments found" not in everything  # sidechain
    assert "local-command-caveat" not in everything  # meta
    end = events[-1]
    assert end["duration_ms"] == 8000 and end["stop_reason"] == "end_turn"
    assert end["usage"]["input_tokens"] == 420 and end["usage"]["output_tokens"] == 75
    assert end["cost_usd"] is None
    # When and on which model it ran, so the usage page dates it by the turn, not the import.
    assert (end["model"], end["timestamp"]) == ("claude-opus-5-5", "2026-11-02T10:00:09.000Z")
    days = [g.key for g in usage(db[0], group="day", offset_minutes=0).groups]
    assert "2026-11-02" in days and date.today().isoformat() not in days, days


async def test_every_event_is_marked_with_its_entry(
    db: tuple[Engine, EventLog], projects: Path
) -> None:
    report = await run(db, projects)
    for backend_id in (SHOP, HAIKU, NOTES, FIX):
        for event in events_of(db, report, backend_id):
            assert event["imported"] is True
            assert isinstance(event["uuid"], str) and event["uuid"]
    first = events_of(db, report, SHOP)[0]
    assert first["uuid"] == "10000002-0000-4000-8000-000000000000"
    assert first["timestamp"] == "2026-11-02T10:00:01.000Z"


async def test_the_newest_branch_wins(db: tuple[Engine, EventLog], projects: Path) -> None:
    events = events_of(db, await run(db, projects), HAIKU)
    prompts = [e["text"] for e in events if e["kind"] == "user_message"]
    assert prompts == ["Write a haiku about tests", "Make it about rain instead"]
    answers = [e["text"] for e in events if e["kind"] == "assistant_message"]
    assert answers[-1].startswith("Rain taps the CI")
    assert not any("rhyme" in e.get("text", "") for e in events)
    assert [e["kind"] for e in events].count("turn_end") == 2


async def test_compact_summary_becomes_a_note(db: tuple[Engine, EventLog], projects: Path) -> None:
    events = events_of(db, await run(db, projects), NOTES)
    assert [e["kind"] for e in events] == ["note", "user_message", "assistant_message", "turn_end"]
    assert events[0]["note"] == "compact_summary"
    assert "continued from a previous conversation" in events[0]["text"]
    # Compaction replaces what came before it; the old entries are not followed.
    assert "Summarise the meeting notes" not in json.dumps(events)


async def test_commands_failed_tools_interrupts_and_api_errors(
    db: tuple[Engine, EventLog], projects: Path
) -> None:
    events = events_of(db, await run(db, projects), FIX)
    assert [e["kind"] for e in events] == [
        "user_message",
        "note",
        "user_message",
        "tool_call",
        "tool_result",
        "assistant_message",
        "turn_end",
        "user_message",
        "error",
        "turn_end",
    ]
    assert events[0]["text"] == "/model opus"
    assert events[1] == {**events[1], "note": "command_output", "text": "Set model to opus"}
    assert events[4]["is_error"] is True and "not been read" in events[4]["output"]
    assert events[6]["stop_reason"] == "interrupted"
    assert events[8]["message"] == "API Error: 529 Overloaded"
    assert events[9]["is_error"] is True


async def test_titles(db: tuple[Engine, EventLog], projects: Path) -> None:
    report = await run(db, projects)
    with Session(db[0]) as s:
        titles = {c.backend_session_id: c.title for c in s.exec(select(ChatSession))}
    assert titles == {
        SHOP: "List project files",  # aiTitle
        HAIKU: "Haiku drafts",  # customTitle beats the summary line
        NOTES: "Meeting notes and follow-up email",  # summary
        FIX: "Fix the failing test in tests/test_api.py",  # first real prompt, not /model
    }
    assert {f.title for f in report.files} == set(titles.values())


async def test_counts(db: tuple[Engine, EventLog], projects: Path) -> None:
    report = await run(db, projects)
    assert report.sessions_created == 4 and report.sessions_updated == 0
    assert report.events_added == 9 + 6 + 4 + 10
    assert report.malformed_lines == 2
    assert report.lines_skipped == 16
    # The subagent transcript under <session>/subagents/ is not a session of its own.
    assert len(report.files) == 4
    haiku = by_backend_id(report)[HAIKU]
    assert (haiku.lines, haiku.malformed_lines, haiku.lines_imported) == (10, 2, 4)
    assert haiku.lines_skipped == 4 and haiku.status == "created"


async def test_sessions_and_profiles(db: tuple[Engine, EventLog], projects: Path) -> None:
    engine = db[0]
    with Session(engine) as s:
        mine = Profile(name="mine", backend="claude", cwd="/srv/demo/shop")
        s.add(mine)
        s.commit()
        mine_id = mine.id
    await run(db, projects)
    with Session(engine) as s:
        chats = {c.backend_session_id: c for c in s.exec(select(ChatSession))}
        profiles = {p.id: p for p in s.exec(select(Profile))}
    # An existing claude profile for the folder is used; a gone folder still gets one.
    assert chats[SHOP].profile_id == chats[HAIKU].profile_id == mine_id
    notes = profiles[chats[NOTES].profile_id]
    assert chats[FIX].profile_id == notes.id
    assert (notes.name, notes.backend, notes.cwd) == (
        "Imported · notes",
        "claude",
        "/srv/demo/notes",
    )
    assert len(profiles) == 2
    shop = chats[SHOP]
    assert (shop.backend, shop.status, shop.turns) == ("claude", "idle", 1)
    assert (shop.input_tokens, shop.output_tokens, shop.cost_usd) == (420, 75, 0.0)
    assert shop.created_at.isoformat().startswith("2026-11-02T10:00:01")
    assert shop.updated_at.isoformat().startswith("2026-11-02T10:00:09")


async def test_a_second_import_adds_nothing(db: tuple[Engine, EventLog], projects: Path) -> None:
    first = await run(db, projects)
    second = await run(db, projects)
    assert (second.sessions_created, second.sessions_updated, second.events_added) == (0, 0, 0)
    assert {f.status for f in second.files} == {"unchanged"}
    assert second.lines_skipped == first.lines_skipped
    assert second.malformed_lines == first.malformed_lines
    with Session(db[0]) as s:
        assert len(s.exec(select(ChatSession)).all()) == 4


async def test_appended_lines_are_added_at_the_end(
    db: tuple[Engine, EventLog], projects: Path
) -> None:
    report = await run(db, projects)
    before = events_of(db, report, SHOP)
    base = {"isSidechain": False, "cwd": "/srv/demo/shop", "sessionId": SHOP, "type": "user"}
    append_lines(
        shop_file(projects),
        {
            **base,
            "uuid": "u-5",
            "parentUuid": "10000009-0000-4000-8000-000000000000",
            "timestamp": "2026-11-02T11:00:00.000Z",
            "message": {"role": "user", "content": "Now run the tests"},
        },
        {
            **base,
            "type": "assistant",
            "uuid": "a-5",
            "parentUuid": "u-5",
            "timestamp": "2026-11-02T11:00:04.500Z",
            "message": {
                "id": "msg_05",
                "role": "assistant",
                "content": [{"type": "text", "text": "All 3 tests pass."}],
                "stop_reason": "end_turn",
                "usage": {"input_tokens": 50, "output_tokens": 7},
            },
        },
    )
    again = await run(db, projects)
    assert (again.sessions_created, again.sessions_updated, again.events_added) == (0, 1, 3)
    assert by_backend_id(again)[SHOP].status == "updated"
    after = events_of(db, again, SHOP)
    assert after[: len(before)] == before
    added = after[len(before) :]
    assert [e["kind"] for e in added] == ["user_message", "assistant_message", "turn_end"]
    assert [e["seq"] for e in added] == [10, 11, 12]
    assert added[-1]["duration_ms"] == 4500
    with Session(db[0]) as s:
        chat = s.exec(select(ChatSession).where(ChatSession.backend_session_id == SHOP)).one()
    assert (chat.turns, chat.input_tokens) == (2, 470)
    third = await run(db, projects)
    assert third.events_added == 0


async def test_the_copy_stays_when_the_file_is_deleted(
    db: tuple[Engine, EventLog], projects: Path
) -> None:
    report = await run(db, projects)
    events = events_of(db, report, SHOP)
    shop_file(projects).unlink()
    again = await run(db, projects)
    assert SHOP not in by_backend_id(again)
    assert events_of(db, report, SHOP) == events


async def test_malformed_lines_are_counted_never_fatal(
    db: tuple[Engine, EventLog], tmp_path: Path
) -> None:
    project = tmp_path / "projects" / "-x"
    project.mkdir(parents=True)
    (project / "junk.jsonl").write_bytes(b'{"type":\n\xff\xfe not utf-8\n[1, 2]\n\n"text"\n')
    shutil.copy(FIXTURES / "-srv-demo-shop" / f"{HAIKU}.jsonl", project)
    report = await run(db, tmp_path / "projects")
    files = by_backend_id(report)
    assert files["junk"].status == "skipped" and files["junk"].malformed_lines == 4
    assert files["junk"].reason == "no conversation in this file"
    assert files[HAIKU].status == "created"
    assert report.malformed_lines == 6


async def test_a_session_continued_in_angelia_is_left_alone(
    db: tuple[Engine, EventLog], projects: Path
) -> None:
    report = await run(db, projects)
    chat_id = by_backend_id(report)[SHOP].chat_session_id
    assert chat_id is not None
    db[1].append(chat_id, "user_message", {"text": "continued here"})
    append_lines(
        shop_file(projects),
        {
            "type": "user",
            "uuid": "u-9",
            "parentUuid": "10000009-0000-4000-8000-000000000000",
            "sessionId": SHOP,
            "cwd": "/srv/demo/shop",
            "message": {"role": "user", "content": "continued here"},
        },
    )
    again = await run(db, projects)
    item = by_backend_id(again)[SHOP]
    assert item.status == "skipped" and "continued in Angelia" in item.reason
    assert item.chat_session_id == chat_id
    assert [e["text"] for e in db[1].list(chat_id) if e["kind"] == "user_message"][-1] == (
        "continued here"
    )
    assert again.events_added == 0


async def test_a_conversation_started_in_angelia_is_not_imported(
    db: tuple[Engine, EventLog], projects: Path
) -> None:
    engine, events = db
    with Session(engine) as s:
        profile = Profile(name="p", backend="claude", cwd="/srv/demo/shop")
        s.add(profile)
        s.commit()
        chat = ChatSession(profile_id=profile.id, backend="claude", backend_session_id=HAIKU)
        s.add(chat)
        s.commit()
        chat_id = chat.id
    events.append(chat_id, "user_message", {"text": "hello"})
    report = await run(db, projects)
    item = by_backend_id(report)[HAIKU]
    assert item.status == "skipped" and "started in Angelia" in item.reason
    assert item.lines_skipped == 8 and item.malformed_lines == 2
    assert len(events.list(chat_id)) == 1
    assert report.sessions_created == 3


async def test_one_file_or_one_project_dir(db: tuple[Engine, EventLog], projects: Path) -> None:
    report = await run(db, shop_file(projects))
    assert [f.backend_session_id for f in report.files] == [SHOP]
    report = await run(db, projects / "-srv-demo-shop")
    assert {f.backend_session_id for f in report.files} == {SHOP, HAIKU}
    assert report.sessions_created == 1


async def test_bad_paths(db: tuple[Engine, EventLog], tmp_path: Path) -> None:
    with pytest.raises(ValidationFailed, match="does not exist"):
        await run(db, tmp_path / "nowhere")
    (tmp_path / "notes.txt").write_text("x")
    with pytest.raises(ValidationFailed, match="not a .jsonl"):
        await run(db, tmp_path / "notes.txt")


def test_default_projects_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    settings = Settings(data_dir=tmp_path, claude_projects_dir=tmp_path / "p")
    assert importer.default_projects_dir(settings) == tmp_path / "p"
    settings = Settings(data_dir=tmp_path)
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(tmp_path / "cfg"))
    assert importer.default_projects_dir(settings) == tmp_path / "cfg" / "projects"
    monkeypatch.delenv("CLAUDE_CONFIG_DIR")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert importer.default_projects_dir(settings) == tmp_path / "home" / ".claude" / "projects"


def test_main_thread_ignores_sidechain_and_meta_leaves() -> None:
    def entry(uuid: str, parent: str | None, **extra: Any) -> dict[str, Any]:
        return {"type": "user", "uuid": uuid, "parentUuid": parent, **extra}

    entries = [
        entry("a", None),
        entry("b", "a"),
        entry("c", "a"),
        entry("side", None, isSidechain=True),
        entry("meta", "c", isMeta=True),
        {"type": "system", "uuid": "sys", "parentUuid": "b"},
    ]
    # "meta" and "side" are newer leaves but not main ones; "sys" is not a message, so
    # the newest main leaf is the one it leads back to.
    assert [e["uuid"] for e in main_thread(entries)] == ["a", "b"]
    assert main_thread([]) == []
    # A parent loop (a damaged file) ends the walk instead of hanging.
    loop = [entry("x", "y"), entry("y", "x"), entry("z", "x")]
    assert [e["uuid"] for e in main_thread(loop)] == ["x", "y", "z"]
