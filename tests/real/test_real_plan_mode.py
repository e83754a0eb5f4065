"""Plan mode with the real OpenCode: nothing in the folder changes, whatever the user allows.

OpenCode's own plan agent withholds its edit tools but still asks before a command (and
runs it once allowed, per the reference notes). The app refuses every such question in
plan mode, so a user who presses Allow on every card still finds the folder as it was:
there is no card to allow. Reads still run.

claude-agent-acp asks to leave plan mode (its ExitPlanMode) as a ``switch_mode`` tool
call: that question is the plan's approval, so it waits for the user.

OpenCode's fixtures come from ``test_real_opencode.py`` (the pinned binary and its
offline setup).
"""

# The fixtures are imported by name, which pytest needs and pyflakes calls redefinitions.
# ruff: noqa: F811

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import httpx
import pytest

from app.services.permissions.readonly import plan_mode_denial
from tests.fakes.fake_model_server import FakeModelServer
from tests.helpers import Event, count, of_kind, send, wait_for_events
from tests.real import test_real_opencode as base
from tests.real.common import opencode_bin, opencode_env  # noqa: F401 (fixtures, found by name)
from tests.real.conftest import ProfileFactory
from tests.real.steps import (
    TIMEOUT,
    decide,
    permission_rows,
    requests_with,
    the_pending_request,
)
from tests.real.test_real_claude_questions import plan_rules

pytestmark = pytest.mark.real_cli

RULES: list[dict[str, Any]] = [
    {"match": "write the file", "tool": "write", "input": {"filePath": "w.txt", "content": "x\n"}},
    {"match": "read the notes", "tool": "read", "input": {"filePath": "notes.txt"}},
    base.bash("touch planned", "touch planned.txt"),
    base.bash("remove the notes", "rm notes.txt"),
]


@pytest.fixture
def fake_rules() -> dict[str, Any]:
    return {"rules": RULES}


def folder_state(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in folder.rglob("*") if p.is_file()}


async def allow_every_card_until_the_turn_ends(
    client: httpx.AsyncClient, sid: str, turn: int
) -> tuple[list[Event], list[str]]:
    """Press Allow once on every card that waits, until turn ``turn`` has ended.

    Returns the events and the ids of the cards that were there to allow.
    """
    allowed: list[str] = []
    loop = asyncio.get_running_loop()
    deadline = loop.time() + TIMEOUT
    while loop.time() < deadline:
        r = await client.get("/api/permissions", params={"session_id": sid, "status": "pending"})
        for row in r.json():
            await decide(client, row["id"], "allow_once")
            allowed.append(row["id"])
        events = (await client.get(f"/api/sessions/{sid}/events")).json()["events"]
        if len(of_kind(events, "turn_end")) >= turn:
            return events, allowed
        await asyncio.sleep(0.1)
    raise AssertionError(f"turn {turn} did not end; allowed {allowed}")


@pytest.mark.conformance("plan_mode", backend="opencode")
async def test_opencode_in_plan_mode_leaves_the_folder_untouched_when_every_card_is_allowed(
    client: httpx.AsyncClient,
    make_profile: ProfileFactory,
    opencode_bin: Path,
    opencode_env: dict[str, str],
    project_dir: Path,
    fake_model: FakeModelServer,
) -> None:
    (project_dir / "notes.txt").write_text("apricot jam\n")
    before = folder_state(project_dir)
    command = [str(opencode_bin), "acp"]
    profile = await make_profile("opencode", command, opencode_env, permission_mode="plan")
    r = await client.post("/api/sessions", json={"profile_id": profile["id"]})
    sid = r.json()["id"]

    allowed: list[str] = []
    for turn, text in enumerate(
        ["write the file", "touch planned", "remove the notes", "read the notes"], start=1
    ):
        await send(client, sid, text)
        events, cards = await allow_every_card_until_the_turn_ends(client, sid, turn)
        allowed += cards

    assert folder_state(project_dir) == before
    assert allowed == []
    # Both commands were asked about and refused by plan mode, with the reason shown.
    decisions = of_kind(events, "permission_decision")
    assert [(d["tool"], d["decision"], d["source"]) for d in decisions] == [
        ("Bash", "deny", "mode"),
        ("Bash", "deny", "mode"),
    ]
    assert {d["message"] for d in decisions} == {plan_mode_denial("Bash")}
    rows = await permission_rows(client, sid)
    assert sorted(r["input"]["command"] for r in rows) == ["rm notes.txt", "touch planned.txt"]
    # The read ran unasked and its text reached the model.
    assert requests_with(fake_model, "apricot jam")


async def test_claude_acp_asks_the_user_to_approve_its_plan(
    client: httpx.AsyncClient,
    make_profile: ProfileFactory,
    claude_acp_bin: Path,
    claude_acp_env: dict[str, str],
    project_dir: Path,
    fake_model: FakeModelServer,
) -> None:
    fake_model.set_rules(plan_rules(project_dir))
    command = [str(claude_acp_bin)]
    profile = await make_profile("claude-acp", command, claude_acp_env, permission_mode="plan")
    r = await client.post("/api/sessions", json={"profile_id": profile["id"]})
    sid = r.json()["id"]
    await send(client, sid, "plan it")
    request = await the_pending_request(client, sid)
    assert request["title"] == "Approve Plan", request
    await decide(client, request["id"], "allow_once")
    events = await wait_for_events(client, sid, count("turn_end"), timeout=TIMEOUT)
    [decision] = of_kind(events, "permission_decision")
    assert (decision["decision"], decision["source"]) == ("allow_once", "user")
