"""Claude's questions and plans, end to end: real Claude Code, the fake model, Angelia's API.

The fake model calls ``AskUserQuestion``; the app shows it as a question, the user's answers
go back with the allow, and the model reads them in the tool result.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.fakes.fake_model_server import FakeModelServer
from tests.helpers import count, of_kind, send, wait_for_events
from tests.real.conftest import ProfileFactory
from tests.real.test_real_claude_permissions import the_pending_request, tool_results_sent_to_model

pytestmark = pytest.mark.real_cli

QUESTIONS = [
    {
        "question": "Which database should I use?",
        "header": "Database",
        "options": [
            {"label": "SQLite", "description": "one file, no server"},
            {"label": "Postgres", "description": "a server"},
        ],
        "multiSelect": False,
    },
    {
        "question": "Which extras?",
        "header": "Extras",
        "options": [
            {"label": "Auth", "description": "logins"},
            {"label": "Search", "description": "FTS"},
        ],
        "multiSelect": True,
    },
]


@pytest.fixture
def fake_rules() -> dict[str, Any]:
    return {
        "rules": [
            {"match": "ask me", "tool": "AskUserQuestion", "input": {"questions": QUESTIONS}},
        ],
        "after_tool": "thanks for answering",
    }


async def test_a_question_is_answered_with_labels_and_the_model_reads_them(
    client: httpx.AsyncClient, claude_session: str, fake_model: FakeModelServer
) -> None:
    sid = claude_session
    await send(client, sid, "ask me about the database")
    request = await the_pending_request(client, sid)
    assert request["kind"] == "question" and request["tool"] == "AskUserQuestion"
    assert request["input"]["questions"] == QUESTIONS
    assert [o["choice"] for o in request["options"]] == ["allow_once", "deny"]

    # Wrong answers are refused and the question stays pending.
    r = await client.post(
        f"/api/permissions/{request['id']}/decision",
        json={"decision": "allow_once", "answers": {"Which database should I use?": "SQLite"}},
    )
    assert r.status_code == 422 and "Which extras?" in r.text, r.text
    r = await client.post(
        f"/api/permissions/{request['id']}/decision", json={"decision": "allow_always"}
    )
    assert r.status_code == 422, r.text

    answers = {"Which database should I use?": "SQLite", "Which extras?": ["Auth", "Search"]}
    r = await client.post(
        f"/api/permissions/{request['id']}/decision",
        json={"decision": "allow_once", "answers": answers},
    )
    assert r.status_code == 200, r.text
    stored = {"Which database should I use?": "SQLite", "Which extras?": "Auth, Search"}
    assert r.json()["answers"] == stored and r.json()["kind"] == "question"

    events = await wait_for_events(client, sid, count("turn_end"))
    [decision] = of_kind(events, "permission_decision")
    assert decision["answers"] == stored and decision["prompt"] == "question"
    [result] = tool_results_sent_to_model(fake_model)
    text = str(result["content"])
    assert '"Which database should I use?"="SQLite"' in text, text
    assert '"Which extras?"="Auth, Search"' in text, text
    assert of_kind(events, "turn_end")[-1]["result"] == "thanks for answering"

    # The audit log keeps the answers.
    r = await client.get("/api/permissions", params={"session_id": sid})
    assert r.json()[0]["answers"] == stored


async def test_declining_a_question_tells_the_model(
    client: httpx.AsyncClient, claude_session: str, fake_model: FakeModelServer
) -> None:
    sid = claude_session
    await send(client, sid, "ask me about the database")
    request = await the_pending_request(client, sid)
    r = await client.post(
        f"/api/permissions/{request['id']}/decision",
        json={"decision": "deny", "message": "decide yourself"},
    )
    assert r.status_code == 200, r.text
    await wait_for_events(client, sid, count("turn_end"))
    [result] = tool_results_sent_to_model(fake_model)
    assert "decide yourself" in str(result["content"])


PLAN = "# Plan\n\n1. write `hello.txt`\n2. say done"


def plan_rules(project_dir: Path) -> dict[str, Any]:
    """Fake model rules: "plan it" asks to approve PLAN, "write it" writes hello.txt."""
    return {
        "rules": [
            # Inline plan, no plan file: the CLI asks with an empty input.
            {
                "match": "plan it",
                "tool": "ExitPlanMode",
                "input": {"plan": PLAN},
                "force": True,
            },
            {
                "match": "write it",
                "tool": "Write",
                "input": {"file_path": str(project_dir / "hello.txt"), "content": "hi\n"},
            },
        ],
        "after_tool": "ok",
    }


async def start_plan_session(
    client: httpx.AsyncClient,
    make_profile: ProfileFactory,
    claude_bin: Path,
    claude_env: dict[str, str],
) -> str:
    """A new session of a real claude profile that starts in plan mode."""
    profile = await make_profile("claude", [str(claude_bin)], claude_env, permission_mode="plan")
    r = await client.post("/api/sessions", json={"profile_id": profile["id"]})
    assert r.status_code == 201, r.text
    return str(r.json()["id"])


@pytest.fixture
async def plan_session(
    client: httpx.AsyncClient,
    make_profile: ProfileFactory,
    claude_bin: Path,
    claude_env: dict[str, str],
    fake_model: FakeModelServer,
    project_dir: Path,
) -> str:
    fake_model.set_rules(plan_rules(project_dir))
    return await start_plan_session(client, make_profile, claude_bin, claude_env)


@pytest.mark.conformance("plan_mode", backend="claude")
async def test_approving_a_plan_shows_it_and_switches_to_accept_edits(
    client: httpx.AsyncClient, plan_session: str, fake_model: FakeModelServer, project_dir: Path
) -> None:
    sid = plan_session
    await send(client, sid, "plan it")
    request = await the_pending_request(client, sid)
    assert request["kind"] == "plan" and request["tool"] == "ExitPlanMode"
    assert request["input"]["plan"] == PLAN  # taken from the tool_use block
    r = await client.post(
        f"/api/permissions/{request['id']}/decision",
        json={"decision": "allow_once", "mode": "plan"},
    )
    assert r.status_code == 422, r.text
    r = await client.post(
        f"/api/permissions/{request['id']}/decision",
        json={"decision": "allow_once", "mode": "acceptEdits"},
    )
    assert r.status_code == 200, r.text
    events = await wait_for_events(client, sid, count("turn_end"))
    [decision] = of_kind(events, "permission_decision")
    assert decision["prompt"] == "plan" and decision["mode"] == "acceptEdits"
    # The allow itself carries the mode (setMode), so the CLI goes straight there.
    assert [(e["mode"], e["source"]) for e in of_kind(events, "mode_changed")] == [
        ("acceptEdits", "plan")
    ]
    [result] = tool_results_sent_to_model(fake_model)
    assert "approved exiting plan mode" in str(result["content"])
    session = (await client.get(f"/api/sessions/{sid}")).json()
    assert session["permission_mode"] == "acceptEdits"

    # In acceptEdits the next edit runs without asking.
    await send(client, sid, "write it")
    events = await wait_for_events(client, sid, count("turn_end", 2))
    assert (project_dir / "hello.txt").read_text() == "hi\n"
    assert len(of_kind(events, "permission_request")) == 1
    assert (await client.get(f"/api/sessions/{sid}")).json()["permission_mode"] == "acceptEdits"


async def test_keep_planning_sends_the_feedback_and_stays_in_plan_mode(
    client: httpx.AsyncClient, plan_session: str, fake_model: FakeModelServer
) -> None:
    sid = plan_session
    await send(client, sid, "plan it")
    request = await the_pending_request(client, sid)
    r = await client.post(
        f"/api/permissions/{request['id']}/decision",
        json={"decision": "deny", "message": "add a test step"},
    )
    assert r.status_code == 200, r.text
    await wait_for_events(client, sid, count("turn_end"))
    [result] = tool_results_sent_to_model(fake_model)
    assert "add a test step" in str(result["content"])
    assert (await client.get(f"/api/sessions/{sid}")).json()["permission_mode"] in (None, "plan")


async def test_approving_a_plan_to_ask_for_edits_still_asks_before_a_write(
    client: httpx.AsyncClient, plan_session: str, project_dir: Path
) -> None:
    sid = plan_session
    await send(client, sid, "plan it")
    request = await the_pending_request(client, sid)
    r = await client.post(
        f"/api/permissions/{request['id']}/decision",
        json={"decision": "allow_once", "mode": "default"},
    )
    assert r.status_code == 200, r.text
    events = await wait_for_events(client, sid, count("turn_end"))
    assert [(e["mode"], e["source"]) for e in of_kind(events, "mode_changed")] == [
        ("default", "plan")
    ]
    assert (await client.get(f"/api/sessions/{sid}")).json()["permission_mode"] == "default"
    await send(client, sid, "write it")
    write = await wait_for_events(client, sid, count("permission_request", 2))
    assert of_kind(write, "permission_request")[-1]["tool"] == "Write"
    assert not (project_dir / "hello.txt").exists()
