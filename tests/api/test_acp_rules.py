"""ACP agents go through the same permission machinery: rules answer by option."""

from __future__ import annotations

from pathlib import Path

import httpx

from tests.fakes.fake_acp_agent import FakeAcpFiles
from tests.helpers import count, of_kind, send, wait_for_events

SHELL = {
    "id": "t1",
    "title": "touch made.txt",
    "kind": "execute",
    "input": {"command": "touch made.txt"},
}


async def test_a_stored_rule_answers_an_acp_request_by_selecting_its_option(
    client: httpx.AsyncClient, tmp_path: Path
) -> None:
    files = FakeAcpFiles(tmp_path)
    files.scenario([{"tool": SHELL, "permission": True}, {"text": "after"}])
    r = await client.post(
        "/api/profiles",
        json=files.profile(),
    )
    assert r.status_code == 201, r.text
    pid = r.json()["id"]
    r = await client.post(
        f"/api/profiles/{pid}/rules", json={"rule": "Bash(touch:*)", "decision": "allow"}
    )
    assert r.status_code == 201
    sid = (await client.post("/api/sessions", json={"profile_id": pid})).json()["id"]
    await send(client, sid, "go")
    events = await wait_for_events(client, sid, count("turn_end"))
    request = of_kind(events, "permission_request")[0]
    assert request["tool"] == "Bash" and request["input"]["command"] == "touch made.txt"
    decision = of_kind(events, "permission_decision")[0]
    assert (decision["source"], decision["rule"]) == ("rule", "Bash(touch:*)")
    answers = [line for line in files.log_path.read_text().splitlines() if "allow-once" in line]
    assert answers, "the agent never received the allow option"


async def test_the_agent_names_the_session_unless_the_user_did(
    client: httpx.AsyncClient, tmp_path: Path
) -> None:
    files = FakeAcpFiles(tmp_path)
    files.scenario(
        [{"update": {"title": "Fix the login test"}}, {"text": "ok"}],
        [{"update": {"title": "Other"}}, {"text": "ok"}],
    )
    r = await client.post(
        "/api/profiles",
        json=files.profile(),
    )
    sid = (await client.post("/api/sessions", json={"profile_id": r.json()["id"]})).json()["id"]
    await send(client, sid, "the login test fails")
    await wait_for_events(client, sid, count("turn_end"))
    assert (await client.get(f"/api/sessions/{sid}")).json()["title"] == "Fix the login test"
    await client.patch(f"/api/sessions/{sid}", json={"title": "Mine"})
    await send(client, sid, "more")
    await wait_for_events(client, sid, count("turn_end", 2))
    assert (await client.get(f"/api/sessions/{sid}")).json()["title"] == "Mine"
