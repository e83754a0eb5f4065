"""Steering through the API: a message sent into the running turn, or refused with why.

The fake Claude Code takes a message that arrives mid-turn as its next turn once the
running one ends (as the real CLI does when no tool call is left; the tool-boundary
case is proven against the real CLI in tests/real/test_real_claude_steering.py).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx

from tests.api.test_chat import fake_log, make_session
from tests.conftest import write_scenario
from tests.fakes.fake_acp_agent import FakeAcpFiles
from tests.helpers import count, of_kind, send, wait_for_events

STEER = "use the other file instead"


async def test_a_steering_message_joins_the_running_turn_and_shows_where_it_landed(
    client: httpx.AsyncClient, project_dir: Path, fake_claude: dict[str, Any]
) -> None:
    write_scenario(
        fake_claude["scenario"],
        [[{"text": "working on it"}, {"sleep": 3}], [{"text": "switched files"}]],
    )
    sid = await make_session(client, project_dir, fake_claude)
    await send(client, sid, "edit the file")
    await wait_for_events(client, sid, count("assistant_message"))

    r = await client.post(f"/api/sessions/{sid}/steer", json={"text": STEER})
    assert r.status_code == 202, r.text
    seq = r.json()["seq"]

    events = await wait_for_events(client, sid, count("turn_end"), timeout=30)
    # The backend ended twice; the app shows one turn, with both parts counted.
    [end] = of_kind(events, "turn_end")
    assert end["usage"] == {"input_tokens": 200, "output_tokens": 40}
    [sent] = [e for e in events if e["seq"] == seq]
    assert (sent["kind"], sent["text"], sent["steering"]) == ("user_message", STEER, True)
    [landed] = of_kind(events, "steer_landed")
    assert (landed["message_id"], landed["text"]) == (sent["message_id"], STEER)
    answers = {e["text"]: e["seq"] for e in of_kind(events, "assistant_message")}
    assert answers["working on it"] < seq < landed["seq"] < answers["switched files"] < end["seq"]
    chat = (await client.get(f"/api/sessions/{sid}")).json()
    assert (chat["status"], chat["turns"]) == ("live", 1)

    # Written to the CLI as it came, named by the stored message's id, no queue between.
    written = [
        e["stdin"] for e in fake_log(fake_claude) if e.get("stdin", {}).get("type") == "user"
    ]
    assert [w["message"]["content"] for w in written] == ["edit the file", STEER]
    assert written[1]["uuid"] == sent["message_id"] and "priority" not in written[1]
    assert (await client.get(f"/api/sessions/{sid}/queue")).json() == []

    # A reload shows the message marked as sent into the turn, and where it landed.
    page = (await client.get(f"/sessions/{sid}")).text
    assert "sent into the running turn" in page
    assert f'id="e-{landed["seq"]}"' in page and "Your message reached the agent here" in page


async def test_steering_is_refused_with_a_reason_when_it_cannot_go_in(
    client: httpx.AsyncClient, project_dir: Path, fake_claude: dict[str, Any]
) -> None:
    tool = {"tool": "Bash", "input": {"command": "touch x"}, "permission": True}
    write_scenario(fake_claude["scenario"], [[{"text": "hi"}], [tool, {"text": "done"}]])
    sid = await make_session(client, project_dir, fake_claude)
    assert (await client.get(f"/api/sessions/{sid}/steer")).json() == {
        "can_steer": True,
        "reason": "",
    }

    r = await client.post(f"/api/sessions/{sid}/steer", json={"text": "now"})
    assert r.status_code == 409 and "not working on a turn" in r.json()["detail"]
    await send(client, sid, "hello")
    await wait_for_events(client, sid, count("turn_end"))
    r = await client.post(f"/api/sessions/{sid}/steer", json={"text": "   "})
    assert r.status_code == 422 and "empty" in r.text
    r = await client.post(f"/api/sessions/{sid}/steer", json={"text": "x", "when": "now"})
    assert r.status_code == 422
    r = await client.post("/api/sessions/no-such-session/steer", json={"text": "x"})
    assert r.status_code == 404

    # A prompt waits for the user: the turn is parked on it, so answer it first.
    await send(client, sid, "run it")
    await wait_for_events(client, sid, count("permission_request"))
    r = await client.post(f"/api/sessions/{sid}/steer", json={"text": "meanwhile"})
    assert r.status_code == 409 and "answer it first" in r.json()["detail"]
    events = (await client.get(f"/api/sessions/{sid}/events")).json()["events"]
    assert not any(e.get("text") in ("now", "meanwhile") for e in events)
    assert not any(json.dumps(e.get("stdin", "")).count("meanwhile") for e in fake_log(fake_claude))


async def slow_acp_session(client: httpx.AsyncClient, root: Path) -> str:
    """A session of the fake ACP agent (which cannot steer) whose turn takes a while."""
    files = FakeAcpFiles(root)
    files.scenario([{"text": "thinking"}, {"sleep": 30}])
    r = await client.post("/api/profiles", json=files.profile())
    assert r.status_code == 201, r.text
    r = await client.post("/api/sessions", json={"profile_id": r.json()["id"]})
    sid: str = r.json()["id"]
    return sid


async def test_an_agent_that_cannot_steer_offers_the_queue_and_says_why(
    client: httpx.AsyncClient, tmp_path: Path
) -> None:
    sid = await slow_acp_session(client, tmp_path)
    state = (await client.get(f"/api/sessions/{sid}/steer")).json()
    assert state["can_steer"] is False and "queue it" in state["reason"]

    await send(client, sid, "start")
    await wait_for_events(client, sid, count("text_delta"))
    r = await client.post(f"/api/sessions/{sid}/steer", json={"text": "now please"})
    assert r.status_code == 409 and r.json()["detail"] == state["reason"]
    # Nothing lost: the same message still queues.
    r = await client.post(f"/api/sessions/{sid}/messages", json={"text": "now please"})
    assert r.status_code == 202 and r.json()["queued"] is True
    events = (await client.get(f"/api/sessions/{sid}/events")).json()["events"]
    [stored] = [e for e in events if e.get("text") == "now please"]
    assert stored["queued"] is True and "steering" not in stored
    await client.post(f"/api/sessions/{sid}/interrupt")
