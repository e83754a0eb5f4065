"""Approving tool calls, end to end: the real Claude Code CLI, the fake model, Angelia's API.

Allow always stores a rule that answers later requests; a denial's message reaches the
model; a mode switch mid-session lets edits run unasked; an interrupt cancels a pending
request and the session carries on.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.fakes.fake_model_server import FakeModelServer
from tests.helpers import count, kinds, of_kind, send, wait_for_events

pytestmark = pytest.mark.real_cli


async def pending(client: httpx.AsyncClient, session_id: str) -> list[dict[str, Any]]:
    r = await client.get("/api/permissions", params={"status": "pending", "session_id": session_id})
    assert r.status_code == 200, r.text
    rows: list[dict[str, Any]] = r.json()
    return rows


async def the_pending_request(client: httpx.AsyncClient, session_id: str) -> dict[str, Any]:
    await wait_for_events(client, session_id, count("permission_request"))
    rows = await pending(client, session_id)
    assert len(rows) == 1, rows
    return rows[0]


async def decide(
    client: httpx.AsyncClient, permission_id: str, decision: str, message: str | None = None
) -> dict[str, Any]:
    body: dict[str, Any] = {"decision": decision}
    if message is not None:
        body["message"] = message
    r = await client.post(f"/api/permissions/{permission_id}/decision", json=body)
    assert r.status_code == 200, r.text
    row: dict[str, Any] = r.json()
    return row


def tool_results_sent_to_model(fake_model: FakeModelServer) -> list[dict[str, Any]]:
    """Every tool_result block in the newest model request that answered a tool call."""
    after_tool = [e for e in fake_model.message_requests() if e["reply"]["why"] == "after_tool"]
    assert after_tool, [e["reply"] for e in fake_model.message_requests()]
    return [
        block
        for message in after_tool[-1]["body"]["messages"]
        if message.get("role") == "user" and isinstance(message.get("content"), list)
        for block in message["content"]
        if block.get("type") == "tool_result"
    ]


@pytest.mark.conformance("allow_always", backend="claude")
async def test_allow_always_stores_a_rule_that_answers_later_calls(
    client: httpx.AsyncClient,
    claude_profile: dict[str, Any],
    claude_session: str,
    project_dir: Path,
) -> None:
    sid = claude_session
    await send(client, sid, "BASH: touch a")
    request = await the_pending_request(client, sid)
    assert request["input"]["command"] == "touch a"
    decided = await decide(client, request["id"], "allow_always")
    assert decided["decision"] == "allow_always" and decided["rule"] == "Bash(touch:*)"
    await wait_for_events(client, sid, count("turn_end"))
    assert (project_dir / "a").exists()

    r = await client.get(f"/api/profiles/{claude_profile['id']}/rules")
    assert [(x["rule"], x["decision"]) for x in r.json()] == [("Bash(touch:*)", "allow")]

    await send(client, sid, "BASH: touch b")
    events = await wait_for_events(client, sid, count("turn_end", 2))
    assert (project_dir / "b").exists()
    assert not await pending(client, sid)
    second_turn = events[[e["kind"] for e in events].index("turn_end") + 1 :]
    assert of_kind(second_turn, "tool_result"), kinds(second_turn)
    assert not of_kind(second_turn, "error"), of_kind(second_turn, "error")
    decisions = of_kind(second_turn, "permission_decision")
    assert [(d["decision"], d["source"], d["rule"]) for d in decisions] == [
        ("allow_once", "rule", "Bash(touch:*)")
    ], kinds(second_turn)
    # Answered by the rule, so no status flip to "waiting" for the user.
    assert "waiting" not in [e["status"] for e in of_kind(second_turn, "status")], second_turn


async def test_deny_message_reaches_the_model(
    client: httpx.AsyncClient,
    claude_session: str,
    project_dir: Path,
    fake_model: FakeModelServer,
) -> None:
    sid = claude_session
    await send(client, sid, "run touch")
    request = await the_pending_request(client, sid)
    why = "Not in this folder, please use a scratch directory."
    decided = await decide(client, request["id"], "deny", why)
    assert decided["decision"] == "deny" and decided["message"] == why
    events = await wait_for_events(client, sid, count("turn_end"))
    assert not (project_dir / "made_by_fake.txt").exists()

    results = tool_results_sent_to_model(fake_model)
    assert results and results[-1]["is_error"] is True, results
    assert why in json.dumps(results[-1]["content"]), results[-1]
    shown = of_kind(events, "tool_result")
    assert shown and shown[-1]["is_error"] is True and why in shown[-1]["output"], shown
    assert of_kind(events, "assistant_message")[-1]["text"] == "done"


async def test_accept_edits_mid_session_lets_write_run_unasked(
    client: httpx.AsyncClient,
    claude_session: str,
    project_dir: Path,
    fake_model: FakeModelServer,
) -> None:
    sid = claude_session
    target = project_dir / "w.txt"
    fake_model.set_rules(
        {
            "rules": [
                {
                    "match": "write the file",
                    "tool": "Write",
                    "input": {"file_path": str(target), "content": "x"},
                }
            ]
        }
    )
    await send(client, sid, "say hi")
    await wait_for_events(client, sid, count("turn_end"))

    r = await client.post(f"/api/sessions/{sid}/mode", json={"mode": "acceptEdits"})
    assert r.status_code == 200, r.text
    assert r.json()["permission_mode"] == "acceptEdits"

    await send(client, sid, "write the file")
    events = await wait_for_events(client, sid, count("turn_end", 2))
    assert target.read_text() == "x"
    assert not of_kind(events, "permission_request"), kinds(events)
    assert not await pending(client, sid)
    calls = of_kind(events, "tool_call")
    assert [c["tool"] for c in calls] == ["Write"], calls
    results = of_kind(events, "tool_result")
    assert len(results) == 1 and results[0]["is_error"] is False, results
    modes = of_kind(events, "mode_changed")
    # The switch is recorded as the user's; the CLI's echo of it may add a second event (see
    # test_a_mode_switch_is_recorded_once).
    assert ("acceptEdits", "user") in [(m["mode"], m["source"]) for m in modes], modes
    assert {m["mode"] for m in modes} == {"acceptEdits"}, modes
    session = (await client.get(f"/api/sessions/{sid}")).json()
    assert session["permission_mode"] == "acceptEdits"


async def test_a_mode_switch_is_recorded_once(
    client: httpx.AsyncClient, claude_session: str
) -> None:
    sid = claude_session
    await send(client, sid, "say hi")
    await wait_for_events(client, sid, count("turn_end"))
    r = await client.post(f"/api/sessions/{sid}/mode", json={"mode": "plan"})
    assert r.status_code == 200, r.text
    await send(client, sid, "say hi again")
    events = await wait_for_events(client, sid, count("turn_end", 2))
    modes = [(m["mode"], m["source"]) for m in of_kind(events, "mode_changed")]
    assert modes == [("plan", "user")]


@pytest.mark.conformance("interrupt", backend="claude")
async def test_interrupt_cancels_a_pending_request(
    client: httpx.AsyncClient,
    claude_session: str,
    project_dir: Path,
    fake_model: FakeModelServer,
) -> None:
    sid = claude_session
    await send(client, sid, "run touch")
    request = await the_pending_request(client, sid)

    r = await client.post(f"/api/sessions/{sid}/interrupt")
    assert r.status_code == 202, r.text
    events = await wait_for_events(client, sid, count("turn_end"))
    decisions = of_kind(events, "permission_decision")
    assert [(d["permission_id"], d["decision"], d["source"]) for d in decisions] == [
        (request["id"], "cancelled", "cancel")
    ]
    assert not await pending(client, sid)
    assert not (project_dir / "made_by_fake.txt").exists()
    r = await client.post(
        f"/api/permissions/{request['id']}/decision", json={"decision": "allow_once"}
    )
    assert r.status_code == 409, r.text

    first_end = len(events)
    before = len(fake_model.message_requests())
    await send(client, sid, "say hi")
    events = await wait_for_events(client, sid, count("turn_end", 2))
    later = events[first_end:]
    end = of_kind(later, "turn_end")[-1]
    assert end["is_error"] is False, end
    assert not of_kind(later, "error"), of_kind(later, "error")
    # The model gets the new message together with the cancelled call's result. (The CLI puts
    # both into one user message, so the fake answers with its after-tool text.)
    calls = [e for e in fake_model.message_requests()[before:] if e["body"].get("tools")]
    assert len(calls) == 1, [e["reply"] for e in calls]
    last_user = calls[0]["body"]["messages"][-1]
    assert last_user["role"] == "user"
    blocks = last_user["content"]
    assert {"type": "text", "text": "say hi"} in [
        {"type": b.get("type"), "text": b.get("text")} for b in blocks
    ], blocks
    cancelled = [b for b in blocks if b.get("type") == "tool_result"]
    assert cancelled and cancelled[0]["is_error"] is True, blocks
    # Our cancel answer and the interrupt race inside the CLI: either our message or the
    # CLI's own rejection text reaches the model; both say the call did not run.
    text = json.dumps(cancelled[0]["content"])
    assert "The user stopped the turn." in text or "rejected" in text, text
    answers = [a["text"] for a in of_kind(later, "assistant_message")]
    assert answers == [calls[0]["reply"]["text"]], answers
    session = (await client.get(f"/api/sessions/{sid}")).json()
    assert session["status"] == "live", session
