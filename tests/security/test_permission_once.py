"""A permission request is answered exactly once, however many answers race for it."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import httpx

from tests.conftest import LiveServer, write_scenario
from tests.helpers import count, wait_for_events
from tests.security._support import make_session


async def test_racing_answers_reach_the_agent_once(
    server: LiveServer, client: httpx.AsyncClient, project_dir: Path, fake_claude: dict[str, Any]
) -> None:
    tool = {"tool": "Bash", "input": {"command": "rm -rf build"}, "permission": True}
    write_scenario(fake_claude["scenario"], [[tool, {"text": "done"}]])
    sid = await make_session(client, project_dir, fake_claude)
    r = await client.post(f"/api/sessions/{sid}/messages", json={"text": "go"})
    assert r.status_code == 202
    events = await wait_for_events(client, sid, count("permission_request"))
    pid = next(e for e in events if e["kind"] == "permission_request")["permission_id"]

    choices = ["allow_once", "deny", "allow_always", "deny_stop"] * 5
    async with server.client() as a, server.client() as b:
        answers = await asyncio.gather(
            *(
                (a if i % 2 else b).post(
                    f"/api/permissions/{pid}/decision", json={"decision": choice}
                )
                for i, choice in enumerate(choices)
            )
        )
    codes = sorted(r.status_code for r in answers)
    assert codes == [200] + [409] * (len(choices) - 1), codes
    winner = next(r.json()["decision"] for r in answers if r.status_code == 200)

    events = await wait_for_events(client, sid, count("turn_end"))
    decisions = [e for e in events if e["kind"] == "permission_decision"]
    assert [d["decision"] for d in decisions] == [winner]
    log = [json.loads(x) for x in fake_claude["log"].read_text().splitlines()]
    replies = [
        e["stdin"]
        for e in log
        if e.get("stdin", {}).get("type") == "control_response"
        and e["stdin"]["response"].get("response", {}).get("behavior") in ("allow", "deny")
    ]
    assert len(replies) == 1, replies
    behavior = replies[0]["response"]["response"]["behavior"]
    assert behavior == ("allow" if winner.startswith("allow") else "deny")
    row = (await client.get("/api/permissions", params={"session_id": sid})).json()
    assert len(row) == 1 and row[0]["decision"] == winner
