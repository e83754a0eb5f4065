"""A subagent's work, end to end: real Claude Code runs an ``Agent`` call, the fake model
plays both the main agent and the subagent, and Angelia links everything the subagent
does (its tool call, the approval it needs, the result) to that call."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.helpers import count, of_kind, send, wait_for_events
from tests.real.test_real_claude_permissions import the_pending_request

pytestmark = pytest.mark.real_cli


@pytest.fixture
def fake_rules() -> dict[str, Any]:
    agent = {
        "description": "Make a file",
        "prompt": "BASH: touch from_subagent.txt",
        "subagent_type": "general-purpose",
        "run_in_background": False,
    }
    return {"rules": [{"match": "delegate", "tool": "Agent", "input": agent}], "after_tool": "done"}


async def test_subagent_events_and_its_approval_nest_under_the_agent_call(
    client: httpx.AsyncClient, claude_session: str, project_dir: Path
) -> None:
    sid = claude_session
    await send(client, sid, "delegate the work")
    request = await the_pending_request(client, sid)
    events = (await client.get(f"/api/sessions/{sid}/events")).json()["events"]
    [agent_call] = [e for e in of_kind(events, "tool_call") if e["tool"] == "Agent"]
    agent_id = agent_call["tool_call_id"]
    assert "parent_tool_call_id" not in agent_call
    [asked] = of_kind(events, "permission_request")
    assert asked["tool"] == "Bash" and asked["parent_tool_call_id"] == agent_id
    assert request["input"]["command"] == "touch from_subagent.txt"

    r = await client.post(
        f"/api/permissions/{request['id']}/decision", json={"decision": "allow_once"}
    )
    assert r.status_code == 200, r.text
    events = await wait_for_events(client, sid, count("turn_end"))
    assert (project_dir / "from_subagent.txt").exists()

    [bash] = [e for e in of_kind(events, "tool_call") if e["tool"] == "Bash"]
    assert bash["parent_tool_call_id"] == agent_id
    bash_results = [
        r for r in of_kind(events, "tool_result") if r["tool_call_id"] == bash["tool_call_id"]
    ]
    assert [r["parent_tool_call_id"] for r in bash_results] == [agent_id]
    [agent_result] = [r for r in of_kind(events, "tool_result") if r["tool_call_id"] == agent_id]
    assert "parent_tool_call_id" not in agent_result

    tasks = of_kind(events, "task")
    assert tasks and all(t["tool_call_id"] == agent_id for t in tasks)
    assert tasks[0]["status"] == "running" and tasks[0]["description"] == "Make a file"
    assert tasks[0]["subagent_type"] == "general-purpose"
    assert tasks[-1]["status"] == "completed"
