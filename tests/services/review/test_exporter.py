"""Exporting a session as Markdown and JSON, and reading a JSON export back."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy.engine import Engine
from sqlmodel import Session, select

from app.db.engine import open_database
from app.db.models import Profile
from app.errors import ValidationFailed
from app.schemas import ProfileCreate
from app.services.review import exporter
from app.services.review.export_import import import_json_export
from app.services.store import store
from app.services.store.eventlog import EventLog

# Claude Code names its sessions with UUIDs; an import keeps only ids of that shape.
CLAUDE_ID = "0b1c2d3e-4f50-4a61-8b72-93a4b5c6d7e8"
LONG_OUTPUT = "\n".join(f"line {n}" for n in range(1, 501))


@pytest.fixture
def db(tmp_path: Path) -> tuple[Engine, EventLog]:
    engine = open_database(tmp_path / "data")
    return engine, EventLog(engine)


def make_session(db: tuple[Engine, EventLog], cwd: Path) -> str:
    engine, events = db
    profile = store.create_profile(
        engine,
        data=ProfileCreate(
            name="work",
            backend="claude",
            cwd=str(cwd),
            model="sonnet",
            env={"ANTHROPIC_API_KEY": "sk-secret"},
            mcp_servers={
                "docs": {"type": "http", "url": "https://x.test", "headers": {"Auth": "t0ken"}}
            },
        ),
    )
    chat = store.create_session(engine, profile_id=profile.id, title="Fix the login bug")
    store.update_session(engine, chat.id, backend_session_id=CLAUDE_ID, turns=1, cost_usd=0.0123)
    add = events.append
    add(chat.id, "user_message", {"text": "Please touch a"})
    add(chat.id, "session_info", {"model": "claude-sonnet-9", "permission_mode": "default"})
    for piece in ("Sure", ", ", "touching."):
        add(chat.id, "text_delta", {"text": piece, "message_id": "m1"})
    add(chat.id, "assistant_message", {"text": "Sure, touching.", "message_id": "m1"})
    add(chat.id, "thought", {"text": "Need a shell.\nThen done.", "message_id": "m1"})
    add(
        chat.id,
        "tool_call",
        {
            "tool_call_id": "t1",
            "tool": "Bash",
            "title": "touch a",
            "input": {"command": "touch a", "description": "Create a"},
            "tool_kind": "execute",
        },
    )
    add(
        chat.id,
        "permission_request",
        {"permission_id": "p1", "tool": "Bash", "input": {"command": "touch a"}, "title": ""},
    )
    add(
        chat.id,
        "permission_decision",
        {"permission_id": "p1", "tool": "Bash", "decision": "allow_once", "source": "user"},
    )
    add(chat.id, "tool_result", {"tool_call_id": "t1", "output": LONG_OUTPUT, "is_error": False})
    add(
        chat.id,
        "tool_call",
        {"tool_call_id": "t2", "tool": "Read", "title": "a.md", "input": {"file_path": "a.md"}},
    )
    add(chat.id, "tool_result", {"tool_call_id": "t2", "output": "```py\nx\n```", "is_error": True})
    add(chat.id, "backend_session", {"backend_session_id": CLAUDE_ID})
    add(
        chat.id,
        "turn_end",
        {"stop_reason": "success", "is_error": False, "cost_usd": 0.0123, "duration_ms": 3200},
    )
    add(chat.id, "mode_changed", {"mode": "acceptEdits", "source": "user"})
    add(chat.id, "user_message", {"text": "Again"})
    for piece in ("Half a", " sentence"):
        add(chat.id, "text_delta", {"text": piece, "message_id": "m2"})
    add(chat.id, "error", {"message": "claude stopped unexpectedly.", "detail": "boom on stderr"})
    add(chat.id, "note", {"text": "Earlier we agreed on X.", "note": "compact_summary"})
    events.flush_sync()  # appended on a running event loop: stored in the background
    return chat.id


def test_markdown_has_what_matters(db: tuple[Engine, EventLog], tmp_path: Path) -> None:
    sid = make_session(db, tmp_path)
    md = exporter.export_markdown(db[0], db[1], sid)
    assert md.startswith("# Fix the login bug\n")
    for fact in ("**Backend:** claude", "**Model:** sonnet", f"**Folder:** `{tmp_path}`"):
        assert fact in md
    assert "### You\n\nPlease touch a" in md
    # Deltas of a completed message are folded into it, not repeated.
    assert md.count("Sure, touching.") == 1 and "touching.Sure" not in md
    assert "> **Thinking**\n>\n> Need a shell.\n> Then done." in md
    assert "**Tool: Bash** — Create a\n\n```bash\ntouch a\n```" in md
    assert "**Permission:** Bash `touch a` — allowed once by user" in md
    assert md.count("Permission:") == 1
    assert "line 80\n" in md and "line 81\n" not in md
    assert "… [truncated: first 80 of 500 lines shown]" in md
    # Output holding a fence gets a longer one, so it cannot end the block early.
    assert "*Error output:*\n\n````\n```py\nx\n```\n````" in md
    assert "*Turn ended · 3.2 s · $0.0123*" in md
    assert "*Permission mode: acceptEdits*" in md
    assert "Half a sentence\n\n*(message incomplete)*" in md
    assert "> **Error:** claude stopped unexpectedly." in md and "boom on stderr" in md
    assert "> **Summary of the earlier conversation**" in md
    assert "claude-sonnet-9" not in md  # the profile's model wins over session_info
    assert md.index("Please touch a") < md.index("Sure, touching.") < md.index("Again")


def test_markdown_shows_answers_plans_models_and_rewinds(
    db: tuple[Engine, EventLog], tmp_path: Path
) -> None:
    engine, events = db
    sid = make_session(db, tmp_path)
    store.update_session(engine, sid, model="haiku")
    q = {"questions": [{"question": "Which DB?", "header": "DB", "options": []}]}
    events.append(
        sid,
        "permission_request",
        {"permission_id": "q1", "tool": "AskUserQuestion", "input": q, "prompt": "question"},
    )
    events.append(
        sid,
        "permission_decision",
        {
            "permission_id": "q1",
            "tool": "AskUserQuestion",
            "decision": "allow_once",
            "source": "user",
            "answers": {"Which DB?": "SQLite"},
        },
    )
    events.append(
        sid,
        "permission_request",
        {
            "permission_id": "p2",
            "tool": "ExitPlanMode",
            "input": {"plan": "1. do it"},
            "prompt": "plan",
        },
    )
    events.append(
        sid,
        "permission_decision",
        {
            "permission_id": "p2",
            "tool": "ExitPlanMode",
            "decision": "allow_once",
            "source": "user",
            "mode": "acceptEdits",
        },
    )
    events.append(sid, "model_changed", {"model": "haiku", "source": "user"})
    events.append(
        sid, "rewind", {"event_seq": 1, "files": ["/p/a.py"], "insertions": 0, "deletions": 2}
    )
    events.flush_sync()
    md = exporter.export_markdown(engine, events, sid)
    assert "**Model:** haiku" in md
    assert "- Which DB? → SQLite" in md
    assert "**Permission:** ExitPlanMode — allowed once by user, continuing in `acceptEdits`" in md
    assert "> **Plan**\n>\n> 1. do it" in md
    assert "*Model: `haiku`*" in md
    assert "*Files rewound to before message 1: `/p/a.py`*" in md


def test_markdown_leaves_out_kinds_it_does_not_know(
    db: tuple[Engine, EventLog], tmp_path: Path
) -> None:
    sid = make_session(db, tmp_path)
    for kind in ("header", "permission", "from_the_future"):
        db[1].append(sid, kind, {"text": f"odd {kind}"})
    md = exporter.export_markdown(db[0], db[1], sid)
    assert "odd " not in md and md.startswith("# Fix the login bug")


def test_json_export_holds_everything_but_secrets(
    db: tuple[Engine, EventLog], tmp_path: Path
) -> None:
    sid = make_session(db, tmp_path)
    doc = exporter.export_document(db[0], db[1], sid)
    assert doc["format"] == exporter.FORMAT
    assert doc["session"]["id"] == sid and doc["session"]["title"] == "Fix the login bug"
    assert doc["profile"]["cwd"] == str(tmp_path) and doc["profile"]["model"] == "sonnet"
    assert doc["events"] == db[1].list(sid)
    text = exporter.dumps(doc)
    assert "sk-secret" not in text and "t0ken" not in text
    assert doc["profile"]["env"] == {"ANTHROPIC_API_KEY": exporter.REDACTED}
    assert doc["profile"]["mcp_servers"]["docs"]["headers"] == {"Auth": exporter.REDACTED}
    assert json.loads(text) == doc


async def test_json_round_trip_into_a_new_database(
    db: tuple[Engine, EventLog], tmp_path: Path
) -> None:
    sid = make_session(db, tmp_path)
    doc = json.loads(exporter.dumps(exporter.export_document(db[0], db[1], sid)))
    engine = open_database(tmp_path / "other")
    events = EventLog(engine)
    result = await import_json_export(engine, events, doc)
    chat = result.chat
    assert chat.id != sid
    assert (chat.title, chat.backend, chat.backend_session_id) == (
        "Fix the login bug",
        "claude",
        CLAUDE_ID,
    )
    assert (chat.turns, chat.cost_usd, chat.status) == (1, 0.0123, "idle")

    def core(items: list[dict[str, Any]]) -> list[tuple[int, str, dict[str, Any]]]:
        envelope = ("seq", "kind", "session_id", "at")
        return [
            (e["seq"], e["kind"], {k: v for k, v in e.items() if k not in envelope}) for e in items
        ]

    assert core(events.list(chat.id)) == core(db[1].list(sid))
    profile = store.get_profile(engine, chat.profile_id)
    assert (profile.name, profile.cwd, profile.model) == (
        "Imported · work",
        str(tmp_path),
        "sonnet",
    )
    assert profile.env == {} and profile.mcp_servers == {}
    assert [c.field for c in result.changes] == ["profile.env", "profile.mcp_servers"]


async def test_reimport_into_the_same_database_reuses_the_profile(
    db: tuple[Engine, EventLog], tmp_path: Path
) -> None:
    sid = make_session(db, tmp_path)
    doc = exporter.export_document(db[0], db[1], sid)
    chat = (await import_json_export(db[0], db[1], doc)).chat
    assert chat.profile_id == doc["profile"]["id"]
    with Session(db[0]) as s:
        assert len(s.exec(select(Profile)).all()) == 1


@pytest.mark.parametrize(
    ("document", "message"),
    [
        ([], "not an Angelia session export"),
        ({"format": "something.else"}, "unsupported export format"),
        ({"session": {"backend": "claude"}, "events": []}, "profile"),
        (
            {"session": {"backend": "claude"}, "profile": {"cwd": "/x"}, "events": [{"seq": 1}]},
            "events.0.kind",
        ),
        (
            {
                "session": {"backend": "claude"},
                "profile": {"cwd": "/x"},
                "events": [{"seq": 1, "kind": "a"}, {"seq": 1, "kind": "b"}],
            },
            "twice",
        ),
    ],
)
async def test_bad_exports_are_refused(
    db: tuple[Engine, EventLog], document: Any, message: str
) -> None:
    with pytest.raises(ValidationFailed, match=message):
        await import_json_export(db[0], db[1], document)


def test_filenames_are_safe() -> None:
    assert exporter.export_filename("Fix: the login bug", "abcdefghij", "md") == (
        "Fix-the-login-bug-abcdefgh.md",
        "Fix-the-login-bug-abcdefgh.md",
    )
    plain, wide = exporter.export_filename("../../etc/passwd", "abcdefghij", "json")
    assert plain == wide == "etc-passwd-abcdefgh.json"
    assert exporter.export_filename("", "abcdefghij", "md")[0] == "session-abcdefgh.md"
    assert exporter.export_filename("日本語", "abcdefghij", "md") == (
        "session-abcdefgh.md",
        "日本語-abcdefgh.md",
    )
    header = exporter.content_disposition('Café "quoted"', "abcdefghij", "md")
    assert header == (
        'attachment; filename="Cafe-quoted-abcdefgh.md"; '
        "filename*=UTF-8''Caf%C3%A9-quoted-abcdefgh.md"
    )
