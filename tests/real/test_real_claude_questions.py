"""Claude's questions and plans, end to end: real Claude Code, the fake model, Angelia's API.

The fake model calls ``AskUserQuestion``; the app shows it as a question, the user's answers
go back with the allow, and the model reads them in the tool result.
"""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from tests.fakes.fake_model_server import FakeModelServer
from tests.helpers import count, of_kind, send, wait_for_events
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
