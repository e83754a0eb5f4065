"""The real OpenCode through the app: modes, MCP servers, models, a waiting interrupt.

The set-up is ``common``'s, the fake model's rules ``test_real_opencode.py``'s. OpenCode's
modes are its agents; the brain's inline config makes ``plan`` refuse edits and adds an
``accept-edits`` agent, and these tests show what each really lets through.
"""

# The fixtures are imported by name, which pytest needs and pyflakes calls redefinitions.
# ruff: noqa: F811

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.fakes.fake_model_server import FakeModelServer
from tests.helpers import count, kinds, of_kind, send, wait_for_events
from tests.real.common import (  # noqa: F401 (fixtures, found by name)
    opencode_bin,
    opencode_env,
    opencode_profile,
    opencode_session,
)
from tests.real.conftest import ProfileFactory
from tests.real.steps import (
    TIMEOUT,
    decide,
    main_requests,
    the_pending_request,
    turn_of,
)
from tests.real.test_real_opencode import RULES

pytestmark = pytest.mark.real_cli

MORE_RULES: list[dict[str, Any]] = [
    {"match": "read the notes", "tool": "read", "input": {"filePath": "notes.txt"}},
    {"match": "read the env", "tool": "read", "input": {"filePath": ".env"}},
    {"match": "write the file", "tool": "write", "input": {"filePath": "w.txt", "content": "x\n"}},
    {"match": "use mark", "tool": "mark_mark", "input": {"text": "apricot"}},
    *RULES,
]


@pytest.fixture
def fake_rules() -> dict[str, Any]:
    return {"rules": MORE_RULES}


def offered_tools(entry: dict[str, Any]) -> set[str]:
    return {t["function"]["name"] for t in entry["body"]["tools"]}


async def set_mode(client: httpx.AsyncClient, sid: str, mode: str) -> httpx.Response:
    return await client.post(f"/api/sessions/{sid}/mode", json={"mode": mode, "confirm": True})


async def test_plan_mode_offers_no_edit_tools(
    client: httpx.AsyncClient,
    make_profile: ProfileFactory,
    opencode_bin: Path,
    opencode_env: dict[str, str],
    project_dir: Path,
    fake_model: FakeModelServer,
) -> None:
    command = [str(opencode_bin), "acp"]
    profile = await make_profile("opencode", command, opencode_env, permission_mode="plan")
    r = await client.post("/api/sessions", json={"profile_id": profile["id"]})
    sid = r.json()["id"]

    await send(client, sid, "write the file")
    events = await wait_for_events(client, sid, count("turn_end"), timeout=TIMEOUT)
    # OpenCode's plan agent, with the brain's "edit": "deny", drops write and edit from
    # the tools it offers, so the model cannot even try (the fake then just answers).
    tools = offered_tools(main_requests(fake_model)[-1])
    assert "bash" in tools and not tools & {"write", "edit"}, tools
    assert not (project_dir / "w.txt").exists()
    assert not of_kind(events, "permission_request") and not of_kind(events, "tool_call")
    # Commands still ask in OpenCode's plan mode; the app refuses them
    # (test_real_plan_mode.py).


async def test_accept_edits_mid_session_writes_unasked_and_commands_still_ask(
    client: httpx.AsyncClient, opencode_session: str, project_dir: Path
) -> None:
    sid = opencode_session
    await send(client, sid, "say hi")
    await wait_for_events(client, sid, count("turn_end"), timeout=TIMEOUT)
    r = await set_mode(client, sid, "acceptEdits")
    assert r.status_code == 200 and r.json()["permission_mode"] == "acceptEdits", r.text

    await send(client, sid, "write the file")
    events = await wait_for_events(client, sid, count("turn_end", 2), timeout=TIMEOUT)
    assert (project_dir / "w.txt").read_text() == "x\n"
    second = turn_of(events, 2)
    assert not of_kind(second, "permission_request"), kinds(second)
    assert [r["is_error"] for r in of_kind(second, "tool_result")] == [False]

    await send(client, sid, "run touch")
    request = await the_pending_request(client, sid)
    assert request["tool"] == "Bash"
    await decide(client, request["id"], "allow_once")
    await wait_for_events(client, sid, count("turn_end", 3), timeout=TIMEOUT)
    assert (project_dir / "made_by_fake.txt").exists()

    # Back to default: writes ask again.
    assert (await set_mode(client, sid, "default")).status_code == 200
    (project_dir / "w.txt").unlink()
    await send(client, sid, "write the file")
    request = await the_pending_request(client, sid)
    assert request["tool"] == "Edit" and request["input"]["file_path"] == str(project_dir / "w.txt")
    await decide(client, request["id"], "deny")
    await wait_for_events(client, sid, count("turn_end", 4), timeout=TIMEOUT)
    assert not (project_dir / "w.txt").exists()


async def test_bypass_allows_what_is_asked_but_a_deny_rule_still_wins(
    client: httpx.AsyncClient,
    opencode_profile: dict[str, Any],
    opencode_session: str,
    project_dir: Path,
) -> None:
    sid = opencode_session
    victim = project_dir / "victim.txt"
    victim.write_text("keep me")
    r = await client.post(
        f"/api/profiles/{opencode_profile['id']}/rules",
        json={"rule": "Bash(rm:*)", "decision": "deny"},
    )
    assert r.status_code == 201, r.text
    assert (await set_mode(client, sid, "bypassPermissions")).status_code == 200

    await send(client, sid, "run touch")
    await wait_for_events(client, sid, count("turn_end"), timeout=TIMEOUT)
    await send(client, sid, "remove the victim")
    events = await wait_for_events(client, sid, count("turn_end", 2), timeout=TIMEOUT)
    assert (project_dir / "made_by_fake.txt").exists() and victim.read_text() == "keep me"
    decisions = of_kind(events, "permission_decision")
    assert [(d["decision"], d["source"]) for d in decisions] == [
        ("allow_once", "mode"),
        ("deny", "rule"),
    ]
    assert "waiting" not in [e["status"] for e in of_kind(events, "status")]

    # dontAsk, kept by the app: what would ask is refused without a card.
    assert (await set_mode(client, sid, "dontAsk")).status_code == 200
    (project_dir / "made_by_fake.txt").unlink()
    await send(client, sid, "run touch")
    events = await wait_for_events(client, sid, count("turn_end", 3), timeout=TIMEOUT)
    assert not (project_dir / "made_by_fake.txt").exists()
    last = of_kind(events, "permission_decision")[-1]
    assert (last["decision"], last["source"]) == ("deny", "mode"), last
    session = (await client.get(f"/api/sessions/{sid}")).json()
    assert session["permission_mode"] == "dontAsk"


@pytest.mark.conformance("model_switch", backend="opencode")
async def test_model_switch_reaches_the_model(
    client: httpx.AsyncClient, opencode_session: str, fake_model: FakeModelServer
) -> None:
    sid = opencode_session
    await send(client, sid, "first turn")
    await wait_for_events(client, sid, count("turn_end"), timeout=TIMEOUT)
    offered = (await client.get(f"/api/sessions/{sid}/models")).json()
    # No model chosen in the profile yet: OpenCode's config picks fake/fake-model.
    assert offered["current"] == "", offered
    assert {"fake/fake-model", "fake/fake-model-2"} <= {m["id"] for m in offered["models"]}
    r = await client.post(f"/api/sessions/{sid}/model", json={"model": "fake/no-such-model"})
    assert r.status_code == 422 and "fake/fake-model-2" in r.text, r.text
    r = await client.post(f"/api/sessions/{sid}/model", json={"model": "fake/fake-model-2"})
    assert r.status_code == 200, r.text
    assert (await client.get(f"/api/sessions/{sid}/models")).json()["current"] == (
        "fake/fake-model-2"
    )

    await send(client, sid, "second turn")
    await wait_for_events(client, sid, count("turn_end", 2), timeout=TIMEOUT)
    models = [
        (e["body"]["model"], "second turn" in json.dumps(e["body"]))
        for e in main_requests(fake_model)
    ]
    assert models[0] == ("fake-model", False) and models[-1] == ("fake-model-2", True), models


async def test_interrupt_while_a_question_waits_cancels_it(
    client: httpx.AsyncClient, opencode_session: str, project_dir: Path
) -> None:
    sid = opencode_session
    await send(client, sid, "touch c")
    request = await the_pending_request(client, sid)
    r = await client.post(f"/api/sessions/{sid}/interrupt")
    assert r.status_code == 202, r.text
    events = await wait_for_events(client, sid, count("turn_end"), timeout=TIMEOUT)
    decisions = of_kind(events, "permission_decision")
    assert [(d["permission_id"], d["decision"]) for d in decisions] == [
        (request["id"], "cancelled")
    ]
    assert of_kind(events, "turn_end")[0]["stop_reason"] == "cancelled"
    assert [r["is_error"] for r in of_kind(events, "tool_result")] == [True]
    assert not (project_dir / "c.txt").exists()
    await send(client, sid, "say hi")
    events = await wait_for_events(client, sid, count("turn_end", 2), timeout=TIMEOUT)
    assert of_kind(events, "assistant_message")[-1]["text"] == "hello from fake"


def model_saw(fake_model: FakeModelServer, text: str) -> bool:
    return any(text in json.dumps(e["body"]) for e in fake_model.requests())


async def test_reads_run_unasked_but_env_files_ask_and_rules_apply(
    client: httpx.AsyncClient,
    opencode_profile: dict[str, Any],
    opencode_session: str,
    project_dir: Path,
    fake_model: FakeModelServer,
) -> None:
    sid = opencode_session
    (project_dir / "notes.txt").write_text("plain notes")
    (project_dir / ".env").write_text("SECRET=apricot-42")
    r = await client.post(
        f"/api/profiles/{opencode_profile['id']}/rules",
        json={"rule": "Read(.env)", "decision": "deny"},
    )
    assert r.status_code == 201, r.text

    await send(client, sid, "read the notes")
    events = await wait_for_events(client, sid, count("turn_end"), timeout=TIMEOUT)
    assert not of_kind(events, "permission_request"), kinds(events)
    assert [c["tool"] for c in of_kind(events, "tool_call")] == ["Read"]
    assert model_saw(fake_model, "plain notes")

    # OpenCode asks before reading .env, with no input of its own; the brain keeps the
    # path it announced, so the rule on the path answers.
    await send(client, sid, "read the env")
    events = await wait_for_events(client, sid, count("turn_end", 2), timeout=TIMEOUT)
    second = turn_of(events, 2)
    asked = of_kind(second, "permission_request")
    assert [(a["tool"], a["input"].get("file_path")) for a in asked] == [("Read", ".env")]
    decisions = of_kind(second, "permission_decision")
    assert [(d["decision"], d["rule"]) for d in decisions] == [("deny", "Read(.env)")]
    assert [r["is_error"] for r in of_kind(second, "tool_result")] == [True]
    assert not model_saw(fake_model, "apricot-42")


async def test_a_read_the_profile_disallows_asks_instead_of_running(
    client: httpx.AsyncClient,
    make_profile: ProfileFactory,
    opencode_bin: Path,
    opencode_env: dict[str, str],
    project_dir: Path,
    fake_model: FakeModelServer,
) -> None:
    (project_dir / "notes.txt").write_text("plain notes")
    command = [str(opencode_bin), "acp"]
    profile = await make_profile(
        "opencode", command, opencode_env, disallowed_tools=["Read(notes.txt)"]
    )
    sid = (await client.post("/api/sessions", json={"profile_id": profile["id"]})).json()["id"]
    await send(client, sid, "read the notes")
    events = await wait_for_events(client, sid, count("permission_request"), timeout=TIMEOUT)
    asked = of_kind(events, "permission_request")[0]
    assert (asked["tool"], asked["input"].get("file_path")) == ("Read", "notes.txt"), asked
    # Whoever refuses it (the user here, or a deny rule made of the disallowed tool), the
    # read does not happen.
    pending = await client.get("/api/permissions", params={"status": "pending", "session_id": sid})
    for row in pending.json():
        await decide(client, row["id"], "deny")
    events = await wait_for_events(client, sid, count("turn_end"), timeout=TIMEOUT)
    assert [r["is_error"] for r in of_kind(events, "tool_result")] == [True]
    assert not model_saw(fake_model, "plain notes")
