"""Permission machinery with the fake Claude: rules, timeout, restart, queue, modes, audit."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx

from app.main import create_app
from app.settings import Settings
from tests.api.test_chat import fake_log, make_session
from tests.conftest import LiveServer, write_scenario
from tests.helpers import count, of_kind, send, wait_for_events


def bash(command: str) -> dict[str, Any]:
    return {"tool": "Bash", "input": {"command": command}, "permission": True}


async def pending(client: httpx.AsyncClient, sid: str) -> list[dict[str, Any]]:
    r = await client.get("/api/permissions", params={"status": "pending", "session_id": sid})
    result: list[dict[str, Any]] = r.json()
    return result


async def profile_id(client: httpx.AsyncClient, sid: str) -> str:
    pid: str = (await client.get(f"/api/sessions/{sid}")).json()["profile_id"]
    return pid


async def test_rules_api_validates_and_deletes(
    client: httpx.AsyncClient, project_dir: Path, fake_claude: dict[str, Any]
) -> None:
    sid = await make_session(client, project_dir, fake_claude)
    pid = await profile_id(client, sid)
    r = await client.post(
        f"/api/profiles/{pid}/rules", json={"rule": "Bash(git add:*)", "decision": "allow"}
    )
    assert r.status_code == 201
    rule = r.json()
    assert set(rule) == {"id", "rule", "decision", "created_at"}
    assert rule["rule"] == "Bash(git add:*)"
    bad = await client.post(
        f"/api/profiles/{pid}/rules", json={"rule": "Bash(", "decision": "allow"}
    )
    assert bad.status_code == 422 and bad.json()["detail"][0]["field"] == "rule"
    bad = await client.post(
        f"/api/profiles/{pid}/rules", json={"rule": "Read", "decision": "maybe"}
    )
    assert bad.status_code == 422
    assert [x["id"] for x in (await client.get(f"/api/profiles/{pid}/rules")).json()] == [
        rule["id"]
    ]
    assert (await client.delete(f"/api/profiles/{pid}/rules/{rule['id']}")).status_code == 204
    assert (await client.get(f"/api/profiles/{pid}/rules")).json() == []
    assert (await client.delete(f"/api/profiles/{pid}/rules/{rule['id']}")).status_code == 404


async def test_rules_answer_automatically_and_deny_beats_allow(
    client: httpx.AsyncClient, project_dir: Path, fake_claude: dict[str, Any]
) -> None:
    write_scenario(
        fake_claude["scenario"],
        [[bash("git add a.py"), {"text": "1"}], [bash("git add secret.key"), {"text": "2"}]],
    )
    sid = await make_session(client, project_dir, fake_claude)
    pid = await profile_id(client, sid)
    for rule, decision in (("Bash(git add:*)", "allow"), ("Bash(git add secret.key)", "deny")):
        r = await client.post(
            f"/api/profiles/{pid}/rules", json={"rule": rule, "decision": decision}
        )
        assert r.status_code == 201
    await send(client, sid, "one")
    events = await wait_for_events(client, sid, count("turn_end"))
    decision = of_kind(events, "permission_decision")[0]
    assert (decision["decision"], decision["source"], decision["rule"]) == (
        "allow_once",
        "rule",
        "Bash(git add:*)",
    )
    assert of_kind(events, "tool_result")[0]["output"] == "ran"
    await send(client, sid, "two")
    events = await wait_for_events(client, sid, count("turn_end", 2))
    decision = of_kind(events, "permission_decision")[1]
    assert (decision["decision"], decision["source"]) == ("deny", "rule")
    assert of_kind(events, "tool_result")[1]["is_error"] is True
    audit = (await client.get("/api/permissions", params={"source": "rule"})).json()
    assert len(audit) == 2 and all(a["waited_ms"] is not None for a in audit)


async def test_allow_always_remembers_a_scoped_rule(
    client: httpx.AsyncClient, project_dir: Path, fake_claude: dict[str, Any]
) -> None:
    write_scenario(
        fake_claude["scenario"],
        [[bash("touch a"), {"text": "1"}], [bash("touch b"), {"text": "2"}], [bash("rm b")]],
    )
    sid = await make_session(client, project_dir, fake_claude)
    await send(client, sid, "one")
    await wait_for_events(client, sid, count("permission_request"))
    [req] = await pending(client, sid)
    r = await client.post(
        f"/api/permissions/{req['id']}/decision", json={"decision": "allow_always"}
    )
    assert r.status_code == 200 and r.json()["rule"] == "Bash(touch:*)"
    await wait_for_events(client, sid, count("turn_end"))
    rules = (await client.get(f"/api/profiles/{await profile_id(client, sid)}/rules")).json()
    assert [(x["rule"], x["decision"]) for x in rules] == [("Bash(touch:*)", "allow")]
    await send(client, sid, "two")
    events = await wait_for_events(client, sid, count("turn_end", 2))
    assert of_kind(events, "permission_decision")[1]["source"] == "rule"
    await send(client, sid, "three")
    await wait_for_events(client, sid, count("permission_request", 3))
    assert len(await pending(client, sid)) == 1  # `rm` is not covered by the touch rule


async def test_timeout_denies_with_a_message_the_model_reads(
    client: httpx.AsyncClient, project_dir: Path, fake_claude: dict[str, Any]
) -> None:
    write_scenario(fake_claude["scenario"], [[bash("touch slow"), {"text": "after"}]])
    sid = await make_session(client, project_dir, fake_claude, permission_timeout_s=1)
    await send(client, sid, "go")
    events = await wait_for_events(client, sid, count("turn_end"), timeout=15)
    decision = of_kind(events, "permission_decision")[0]
    assert (decision["decision"], decision["source"]) == ("deny", "timeout")
    result = of_kind(events, "tool_result")[0]
    assert result["is_error"] and "within 1 second" in result["output"]


async def test_message_sent_while_prompt_pending_waits_for_the_answer(
    client: httpx.AsyncClient, project_dir: Path, fake_claude: dict[str, Any]
) -> None:
    write_scenario(
        fake_claude["scenario"], [[bash("touch q"), {"text": "first"}], [{"text": "second"}]]
    )
    sid = await make_session(client, project_dir, fake_claude)
    await send(client, sid, "go")
    await wait_for_events(client, sid, count("permission_request"))
    r = await client.post(f"/api/sessions/{sid}/messages", json={"text": "and then this"})
    assert r.status_code == 202 and r.json()["queued"] is True
    [req] = await pending(client, sid)  # the prompt survived the new message
    stdin_users = [e for e in fake_log(fake_claude) if e.get("stdin", {}).get("type") == "user"]
    assert len(stdin_users) == 1
    await client.post(f"/api/permissions/{req['id']}/decision", json={"decision": "allow_once"})
    events = await wait_for_events(client, sid, count("turn_end", 2))
    assert [e["text"] for e in of_kind(events, "assistant_message")] == ["first", "second"]
    assert of_kind(events, "queued_sent")[0]["text"] == "and then this"
    queued = [e for e in of_kind(events, "user_message") if e.get("queued")]
    assert [q["text"] for q in queued] == ["and then this"]


async def test_restart_while_pending_expires_the_request(
    settings: Settings, project_dir: Path, fake_claude: dict[str, Any]
) -> None:
    write_scenario(
        fake_claude["scenario"], [[bash("touch x"), {"text": "never"}], [{"text": "back"}]]
    )
    first = LiveServer(create_app(settings))
    await first.start()
    async with first.client() as client:
        sid = await make_session(client, project_dir, fake_claude)
        await send(client, sid, "go")
        await wait_for_events(client, sid, count("permission_request"))
        [req] = await pending(client, sid)
    await first.stop()
    second = LiveServer(create_app(settings))
    await second.start()
    try:
        async with second.client() as client:
            got = (await client.get("/api/permissions", params={"session_id": sid})).json()
            assert [(g["id"], g["status"], g["source"]) for g in got] == [
                (req["id"], "expired", "restart")
            ]
            r = await client.post(
                f"/api/permissions/{req['id']}/decision", json={"decision": "allow_once"}
            )
            assert r.status_code == 409
            events = (await client.get(f"/api/sessions/{sid}/events")).json()["events"]
            assert any(
                "approval was waiting" in e.get("message", "") for e in of_kind(events, "error")
            )
            assert (await client.get(f"/api/sessions/{sid}")).json()["status"] == "interrupted"
            write_scenario(fake_claude["scenario"], [[{"text": "back"}]])
            await send(client, sid, "continue")
            events = await wait_for_events(client, sid, count("turn_end"))
            assert of_kind(events, "assistant_message")[-1]["text"] == "back"
    finally:
        await second.stop()


async def test_mode_switch_mid_session_and_bypass_needs_confirmation(
    client: httpx.AsyncClient, project_dir: Path, fake_claude: dict[str, Any]
) -> None:
    write_scenario(fake_claude["scenario"], [[{"text": "one"}]])
    sid = await make_session(client, project_dir, fake_claude)
    await send(client, sid, "hi")
    await wait_for_events(client, sid, count("turn_end"))
    r = await client.post(f"/api/sessions/{sid}/mode", json={"mode": "acceptEdits"})
    assert r.status_code == 200 and r.json()["permission_mode"] == "acceptEdits"
    requests = [
        e["stdin"]["request"]
        for e in fake_log(fake_claude)
        if e.get("stdin", {}).get("type") == "control_request"
    ]
    assert {"subtype": "set_permission_mode", "mode": "acceptEdits"} in requests
    r = await client.post(f"/api/sessions/{sid}/mode", json={"mode": "bypassPermissions"})
    assert r.status_code == 422 and "confirm" in r.text
    r = await client.post(
        f"/api/sessions/{sid}/mode", json={"mode": "bypassPermissions", "confirm": True}
    )
    assert r.status_code == 200 and r.json()["permission_mode"] == "bypassPermissions"
    events = (await client.get(f"/api/sessions/{sid}/events")).json()["events"]
    modes = [(e["mode"], e["source"]) for e in of_kind(events, "mode_changed")]
    assert modes == [("acceptEdits", "user"), ("bypassPermissions", "user")]
