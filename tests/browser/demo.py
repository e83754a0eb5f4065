"""Sessions that show every kind of transcript item, for the UI tests and screenshots.

A finished conversation is written straight into the event table, with timestamps a
few seconds apart, so it reads like a real one (thinking durations, turn times). The
page renders stored events exactly as it renders live ones.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
from sqlalchemy import insert, update

from app.db.models import ChatSession, Event
from app.services.permissions.preview import build_preview
from app.services.permissions.rules import suggest_rule
from tests.conftest import LiveServer

AUTH_BEFORE = """\
from datetime import datetime, timedelta


def token_expiry(issued: datetime) -> datetime:
    expires = datetime.now() + timedelta(minutes=30)
    return expires
"""
AUTH_AFTER = AUTH_BEFORE.replace("datetime.now()", "clock.now()")
TEST_OUTPUT = """\
============================= test session starts ==============================
collected 4 items

tests/test_login.py ..F.                                                 [100%]

=================================== FAILURES ===================================
___________________________ test_token_still_valid ____________________________
    def test_token_still_valid(frozen_clock):
        token = login("ada", "secret")
>       assert token.expires > frozen_clock.now()
E       AssertionError: assert datetime(2026, 12, 2, 9, 29, 59) > datetime(2026, 12, 2, 9, 30)
=========================== short test summary info ============================
FAILED tests/test_login.py::test_token_still_valid - AssertionError
========================= 1 failed, 3 passed in 0.41s =========================="""
REPLY = """\
The test freezes `frozen_clock`, but `token_expiry` reads the wall clock with
`datetime.now()`. On a slow CI machine the two drift apart by a second and the
assertion fails. Reading the injected clock fixes it:

```python
def token_expiry(issued: datetime) -> datetime:
    expires = clock.now() + timedelta(minutes=30)
    return expires
```

I'll make that change in `src/auth.py`."""
DONE = "Done: `src/auth.py` now uses the injected clock, and the test passes 50 runs in a row."


def _at(start: datetime, seconds: float) -> datetime:
    return start + timedelta(seconds=seconds)


async def make_profile(
    client: httpx.AsyncClient, cwd: Path, name: str = "app", **extra: Any
) -> str:
    body = {"name": name, "backend": "claude", "cwd": str(cwd), "model": "sonnet", **extra}
    r = await client.post("/api/profiles", json=body)
    assert r.status_code == 201, r.text
    profile_id: str = r.json()["id"]
    return profile_id


async def make_session(client: httpx.AsyncClient, profile_id: str, title: str) -> str:
    r = await client.post("/api/sessions", json={"profile_id": profile_id, "title": title})
    assert r.status_code == 201, r.text
    sid: str = r.json()["id"]
    return sid


def write_events(
    server: LiveServer, sid: str, events: list[tuple[float, str, dict[str, Any]]]
) -> None:
    """Store (seconds after the first, kind, payload) rows as the session's events."""
    state = server.app.state.angelia
    start = datetime.now(UTC) - timedelta(minutes=5)
    first = state.events.last_seq(sid) + 1
    rows = [
        {
            "session_id": sid,
            "seq": first + i,
            "kind": kind,
            "payload": payload,
            "created_at": _at(start, seconds),
        }
        for i, (seconds, kind, payload) in enumerate(events)
    ]
    with state.engine.begin() as conn:
        conn.execute(insert(Event.__table__), rows)  # type: ignore[attr-defined]
    state.events.forget(sid)


def set_session(server: LiveServer, sid: str, **fields: Any) -> None:
    """Change stored session fields directly (including ``updated_at``, which the store
    would set to now)."""
    table = ChatSession.__table__  # type: ignore[attr-defined]
    with server.app.state.angelia.engine.begin() as conn:
        conn.execute(update(table).where(table.c.id == sid).values(**fields))


def finished_conversation(cwd: Path) -> list[tuple[float, str, dict[str, Any]]]:
    """One whole turn: thinking, tools, a diff, an answered approval, Markdown, a footer."""
    edit = {"file_path": "src/auth.py", "old_string": "datetime.now()", "new_string": "clock.now()"}
    (cwd / "src").mkdir(exist_ok=True)
    (cwd / "src" / "auth.py").write_text(AUTH_BEFORE)
    preview = build_preview("Edit", edit, str(cwd))
    return [
        (
            0,
            "user_message",
            {"text": "The login test fails on CI about once in ten runs. Can you look?"},
        ),
        (
            0.8,
            "session_info",
            {
                "model": "claude-sonnet-4-5",
                "permission_mode": "default",
                "api_key_source": "ANTHROPIC_API_KEY",
                "cli_version": "2.1.332",
                "tools": ["Bash", "Read", "Edit"],
                "slash_commands": ["compact", "clear", "review", "init", "cost"],
            },
        ),
        (
            4.9,
            "thought",
            {
                "text": "Flaky only on CI: probably timing. Read the test, then run it.",
                "message_id": "m1",
            },
        ),
        (
            5.2,
            "tool_call",
            {
                "tool_call_id": "t1",
                "tool": "Read",
                "title": "tests/test_login.py",
                "input": {"file_path": "tests/test_login.py"},
                "tool_kind": "read",
            },
        ),
        (5.3, "tool_result", {"tool_call_id": "t1", "output": "def test_token_still_valid(...)"}),
        (
            6.0,
            "tool_call",
            {
                "tool_call_id": "t2",
                "tool": "Bash",
                "title": "pytest tests/test_login.py -q",
                "input": {"command": "pytest tests/test_login.py -q"},
                "tool_kind": "execute",
            },
        ),
        (7.9, "tool_result", {"tool_call_id": "t2", "output": TEST_OUTPUT, "is_error": True}),
        (12.4, "assistant_message", {"text": REPLY, "message_id": "m2"}),
        (
            12.9,
            "tool_call",
            {
                "tool_call_id": "t3",
                "tool": "Edit",
                "title": "src/auth.py",
                "input": edit,
                "tool_kind": "edit",
            },
        ),
        (
            13.0,
            "permission_request",
            {
                "permission_id": "demo-p1",
                "tool": "Edit",
                "input": edit,
                "title": "src/auth.py",
                "reason": "",
                "tool_call_id": "t3",
                "preview": preview,
                "always_rule": suggest_rule("Edit", edit, str(cwd)),
                "status": "pending",
            },
        ),
        (
            16.2,
            "permission_decision",
            {
                "permission_id": "demo-p1",
                "tool": "Edit",
                "decision": "allow_once",
                "source": "user",
                "message": "",
                "rule": "",
            },
        ),
        (
            16.4,
            "tool_result",
            {"tool_call_id": "t3", "output": "The file src/auth.py has been updated."},
        ),
        (18.1, "assistant_message", {"text": DONE, "message_id": "m3"}),
        (
            18.4,
            "turn_end",
            {
                "stop_reason": "end_turn",
                "is_error": False,
                "cost_usd": 0.0421,
                "duration_ms": 18400,
                "usage": {"input_tokens": 12400, "output_tokens": 1310},
                "result": DONE,
                "errors": [],
            },
        ),
    ]


async def finished_session(
    server: LiveServer, client: httpx.AsyncClient, cwd: Path, profile_id: str | None = None
) -> str:
    """A session holding ``finished_conversation`` with its header totals."""
    profile_id = profile_id or await make_profile(client, cwd)
    sid = await make_session(client, profile_id, "Fix flaky login test")
    write_events(server, sid, finished_conversation(cwd))
    set_session(
        server,
        sid,
        cost_usd=0.0421,
        input_tokens=12400,
        output_tokens=1310,
        turns=1,
        backend_session_id="demo-backend-session",
    )
    return sid


LONG_OUTPUT_LINES = 2000


def plan(*statuses: str) -> dict[str, Any]:
    steps = ("Reproduce the failure", "Find the clock call", "Fix it", "Run the test 50 times")
    return {
        "entries": [
            {"content": step, "priority": "high" if i == 2 else "medium", "status": status}
            for i, (step, status) in enumerate(zip(steps, statuses, strict=False))
        ]
    }


def later_items() -> list[tuple[str, dict[str, Any]]]:
    """The kinds the finished conversation lacks, as (kind, payload) to append live."""
    output = "\n".join(
        f"PASSED tests/test_login.py::test_token_still_valid[{i}]" for i in range(LONG_OUTPUT_LINES)
    )
    return [
        ("user_message", {"text": "Run it 2000 times to be sure."}),
        ("plan", plan("in_progress", "pending", "pending", "pending")),
        ("plan", plan("completed", "completed", "in_progress", "pending")),
        (
            "tool_call",
            {
                "tool_call_id": "t9",
                "tool": "Bash",
                "title": "pytest --count 2000 tests/test_login.py",
                "input": {"command": "pytest --count 2000 tests/test_login.py"},
                "tool_kind": "execute",
            },
        ),
        ("tool_result", {"tool_call_id": "t9", "output": output}),
        (
            "tool_call",
            {
                "tool_call_id": "t10",
                "tool": "Grep",
                "title": "datetime.now",
                "input": {"pattern": "datetime.now"},
                "tool_kind": "search",
            },
        ),
        ("commands", {"commands": ["review", "compact", "plan"]}),
        (
            "permission_decision",
            {
                "permission_id": "earlier-page",
                "tool": "Bash",
                "decision": "deny",
                "source": "rule",
                "message": "",
                "rule": "Bash(rm:*)",
            },
        ),
        (
            "error",
            {
                "message": "Claude Code exited with code 1 in the middle of a turn.",
                "detail": "Error: connect ECONNREFUSED 127.0.0.1:443\n    at afterConnect",
            },
        ),
        (
            "turn_end",
            {
                "stop_reason": "error_during_execution",
                "is_error": True,
                "cost_usd": 0.0105,
                "duration_ms": 64000,
                "usage": {"input_tokens": 2100, "output_tokens": 90},
                "errors": [],
            },
        ),
    ]
