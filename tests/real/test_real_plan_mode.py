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

from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.fakes.fake_model_server import FakeModelServer
from tests.helpers import count, of_kind, send, wait_for_events
from tests.real import test_real_opencode as base
from tests.real.common import opencode_bin, opencode_env  # noqa: F401 (fixtures, found by name)
from tests.real.conftest import ProfileFactory
from tests.real.modes import allow_every_card_of_each, assert_plan_mode_refused, folder_state
from tests.real.steps import (
    TIMEOUT,
    decide,
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

    messages = ["write the file", "touch planned", "remove the notes", "read the notes"]
    events, allowed = await allow_every_card_of_each(client, sid, messages)

    assert folder_state(project_dir) == before
    assert allowed == []
    # Both commands were asked about and refused by plan mode, with the reason shown.
    await assert_plan_mode_refused(client, sid, events, ["rm notes.txt", "touch planned.txt"])
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
