"""One session floods its stream while another's agent asks for an approval: the request
reaches that session's stream (what its page shows) within a second of the agent asking,
the answer reaches the agent within a second of being given, and the flood loses nothing.

The server is a real ``angelia serve`` process and the client another process, as a
browser tab would be; the agent stamps when it wrote its request and when it read the
answer (tests/fakes/fake_claude.py's log).
"""

from __future__ import annotations

import asyncio
import json
import sys
import time
from pathlib import Path
from typing import Any

import httpx

from tests.api.test_chat import make_session
from tests.browser.test_approvals import bash
from tests.conftest import FAKE_CLAUDE, write_scenario
from tests.faults._support import ServerProcess
from tests.helpers import Event, count, send, wait_for_events

# One-character pieces, written as fast as the fake can: tens of thousands a second.
FLOOD = 200_000
BOUND_S = 1.0


def fake(tmp_path: Path, name: str) -> dict[str, Any]:
    scenario, log = tmp_path / f"{name}.json", tmp_path / f"{name}.jsonl"
    env = {"FAKE_CLAUDE_SCENARIO": str(scenario), "FAKE_CLAUDE_LOG": str(log)}
    return {"command": [sys.executable, str(FAKE_CLAUDE)], "env": env, "scenario": scenario}


def logged(path: Path) -> list[dict[str, Any]]:
    return [json.loads(x) for x in path.read_text().splitlines()] if path.exists() else []


def deltas(events: list[Event]) -> int:
    return sum(len(e["text"]) for e in events if e["kind"] == "text_delta")


async def first_request(client: httpx.AsyncClient, sid: str) -> tuple[Event, float]:
    """Read the session's stream, as its page does, until a permission request arrives:
    (that event, when it arrived)."""
    async with client.stream("GET", f"/api/sessions/{sid}/stream") as resp:
        assert resp.status_code == 200
        async for line in resp.aiter_lines():
            if line.startswith("data:") and '"permission_request"' in line:
                event: Event = json.loads(line.removeprefix("data:"))
                if event["kind"] == "permission_request":
                    return event, time.time()
    raise AssertionError("the stream ended before the request came")


async def test_an_approval_beside_a_flood_is_shown_and_answered_within_a_second(
    tmp_path: Path, project_dir: Path
) -> None:
    flood, asker = fake(tmp_path, "flood"), fake(tmp_path, "asker")
    write_scenario(flood["scenario"], [[{"text": "x" * FLOOD, "chunks": FLOOD}]])
    write_scenario(asker["scenario"], [[bash("touch beside-the-flood"), {"text": "done"}]])
    asker_log = Path(asker["env"]["FAKE_CLAUDE_LOG"])
    server = ServerProcess(tmp_path / "served", tmp_path).start()
    try:
        async with server.client() as client, server.client() as page:
            flooding = await make_session(client, project_dir, flood)
            asking = await make_session(client, project_dir, asker)
            await send(client, flooding, "flood")
            await wait_for_events(client, flooding, lambda ev: deltas(ev) >= 1000, timeout=60)

            shown = asyncio.create_task(first_request(page, asking))
            await send(client, asking, "touch a file")
            request, seen_at = await asyncio.wait_for(shown, 60)
            [asked] = [e for e in logged(asker_log) if e.get("asked") == "can_use_tool"]

            given_at = time.time()
            r = await client.post(
                f"/api/permissions/{request['permission_id']}/decision",
                json={"decision": "allow_once"},
            )
            assert r.status_code == 200, r.text
            await wait_for_events(client, asking, count("turn_end"), timeout=60)
            [answer] = [
                e for e in logged(asker_log) if e.get("stdin", {}).get("type") == "control_response"
            ]
            # Still flooding once the approval was answered: it happened beside the flood.
            session = (await client.get(f"/api/sessions/{flooding}")).json()
            assert session["status"] == "working", session
            shown_s, answered_s = seen_at - asked["at"], answer["at"] - given_at
            assert shown_s < BOUND_S and answered_s < BOUND_S, (shown_s, answered_s)

            # The flood lost and doubled nothing.
            events = await wait_for_events(client, flooding, count("turn_end"), timeout=120)
            assert deltas(events) == FLOOD
            [message] = [e for e in events if e["kind"] == "assistant_message"]
            assert message["text"] == "x" * FLOOD
            assert [e["seq"] for e in events] == list(range(1, len(events) + 1))
    finally:
        server.stop()
