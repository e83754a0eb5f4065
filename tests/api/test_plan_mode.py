"""Plan mode through the app: what is not read-only is refused before anyone is asked.

An ACP agent in plan mode that still asks about a command gets the app's "no" at once,
recorded with ``source: mode`` and the reason, and no Allow button is offered for it; a
read still reaches the user. A stored allow rule does not let the command through either.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import httpx
import pytest

from app.services.permissions.readonly import plan_mode_denial
from tests.fakes.fake_acp_agent import FakeAcpFiles
from tests.helpers import count, of_kind, send, wait_for_events

SHELL = {
    "id": "t1",
    "title": "touch planned.txt",
    "kind": "execute",
    "input": {"command": "touch planned.txt"},
}
READ = {"id": "t2", "title": "notes.txt", "kind": "read", "input": {"path": "notes.txt"}}
SEARCH = {"id": "t3", "title": "grep TODO", "kind": "search", "input": {"pattern": "TODO"}}
# How agents ask to leave plan mode: claude-agent-acp ("Approve Plan", switch_mode) and
# Gemini CLI 0.61 (exit_plan_mode, sent as kind "other" under its own title).
EXIT_PLANS = [
    {"id": "t4", "title": "Approve Plan", "kind": "switch_mode", "input": {"plan": "1. touch"}},
    {"id": "t5", "title": "Requesting plan approval for: /tmp/plans/p.md", "kind": "other"},
]
MODES = {"current": "default", "available": ["default", "plan"]}


async def _plan_session(client: httpx.AsyncClient, files: FakeAcpFiles, *, rule: str = "") -> str:
    body = files.profile(name="acp in plan mode", permission_mode="plan")
    r = await client.post("/api/profiles", json=body)
    assert r.status_code == 201, r.text
    pid = r.json()["id"]
    if rule:
        r = await client.post(
            f"/api/profiles/{pid}/rules", json={"rule": rule, "decision": "allow"}
        )
        assert r.status_code == 201, r.text
    r = await client.post("/api/sessions", json={"profile_id": pid})
    assert r.status_code == 201, r.text
    sid: str = r.json()["id"]
    return sid


def _rejected(files: FakeAcpFiles) -> list[str]:
    return [o.get("optionId", o.get("outcome", "")) for o in files.permission_outcomes()]


async def test_a_command_is_denied_by_plan_mode_and_a_read_still_asks(
    client: httpx.AsyncClient, tmp_path: Path
) -> None:
    files = FakeAcpFiles(tmp_path)
    files.scenario(
        [
            {"tool": SHELL, "permission": True},
            {"tool": READ, "permission": True},
            {"text": "planned"},
        ],
        modes=MODES,
    )
    sid = await _plan_session(client, files)
    await send(client, sid, "make a plan")
    events = await wait_for_events(client, sid, count("permission_request", 2))
    shell, read = of_kind(events, "permission_request")
    assert (shell["tool"], shell["input"]["command"]) == ("Bash", "touch planned.txt")
    [decision] = of_kind(events, "permission_decision")
    assert decision["permission_id"] == shell["permission_id"]
    assert (decision["decision"], decision["source"]) == ("deny", "mode")
    assert decision["message"] == plan_mode_denial("Bash")
    assert "Plan mode: only read-only tools run until the plan is approved" in decision["message"]

    # The read waits for the user; the command's card is already decided, with no Allow.
    assert (read["tool"], read["input"]["file_path"]) == ("Read", "notes.txt")
    r = await client.get("/api/permissions", params={"session_id": sid, "status": "pending"})
    assert [p["id"] for p in r.json()] == [read["permission_id"]]
    page = (await client.get(f"/sessions/{sid}")).text
    card = re.search(
        rf'<div class="perm [^"]*" id="perm-{shell["permission_id"]}".*?</details>', page, re.S
    )
    assert card is not None and 'data-status="decided"' in card.group(0), page
    assert "Allow once" not in card.group(0) and plan_mode_denial("Bash") in card.group(0)
    assert page.count('value="allow_once"') == 1  # only the read's card offers Allow

    r = await client.post(
        f"/api/permissions/{read['permission_id']}/decision", json={"decision": "allow_once"}
    )
    assert r.status_code == 200, r.text
    events = await wait_for_events(client, sid, count("turn_end"))
    assert _rejected(files) == ["reject-once", "allow-once"]
    results = {r["tool_call_id"]: r["is_error"] for r in of_kind(events, "tool_result")}
    assert results == {"t1": True, "t2": False}


async def test_plan_mode_beats_an_allow_rule_and_lets_a_search_reach_the_user(
    client: httpx.AsyncClient, tmp_path: Path
) -> None:
    files = FakeAcpFiles(tmp_path)
    files.scenario(
        [{"tool": SHELL, "permission": True}, {"tool": SEARCH, "permission": True}],
        modes=MODES,
    )
    sid = await _plan_session(client, files, rule="Bash(touch:*)")
    await send(client, sid, "make a plan")
    events = await wait_for_events(client, sid, count("permission_request", 2))
    [decision] = of_kind(events, "permission_decision")
    assert (decision["decision"], decision["source"], decision["rule"]) == ("deny", "mode", "")
    search = of_kind(events, "permission_request")[1]
    assert search["tool"] == "grep TODO"
    r = await client.post(
        f"/api/permissions/{search['permission_id']}/decision", json={"decision": "deny"}
    )
    assert r.status_code == 200, r.text
    await wait_for_events(client, sid, count("turn_end"))
    assert _rejected(files) == ["reject-once", "reject-once"]


@pytest.mark.parametrize("exit_plan", EXIT_PLANS, ids=["claude-acp", "gemini"])
async def test_the_agents_request_to_leave_plan_mode_waits_for_the_user(
    client: httpx.AsyncClient, tmp_path: Path, exit_plan: dict[str, Any]
) -> None:
    # Answering it is approving the plan, so plan mode does not answer it.
    files = FakeAcpFiles(tmp_path)
    files.scenario([{"tool": exit_plan, "permission": True}], modes=MODES)
    sid = await _plan_session(client, files)
    await send(client, sid, "make a plan")
    events = await wait_for_events(client, sid, count("permission_request"))
    [request] = of_kind(events, "permission_request")
    r = await client.get("/api/permissions", params={"session_id": sid, "status": "pending"})
    assert [p["id"] for p in r.json()] == [request["permission_id"]]
    r = await client.post(
        f"/api/permissions/{request['permission_id']}/decision", json={"decision": "allow_once"}
    )
    assert r.status_code == 200, r.text
    await wait_for_events(client, sid, count("turn_end"))
    assert _rejected(files) == ["allow-once"]
