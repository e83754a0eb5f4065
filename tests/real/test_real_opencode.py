"""Angelia end to end with the real OpenCode (``opencode acp``) against the fake model server.

Each test drives a live Angelia server through its public HTTP API, with a profile of
backend ``opencode`` whose command is the pinned binary from ``.ci/setup``. OpenCode gets a
fresh HOME and XDG folders and a config file (``OPENCODE_CONFIG``) whose ``fake`` provider
points at the fake model server, so nothing leaves 127.0.0.1 and no login is needed.

OpenCode's tools are ``bash``, ``write``, ``edit``, ``read`` …; MCP tools are
``<server>_<tool>``. The fake's rules here call them by those names. Modes, models, images
and MCP servers are in ``test_real_opencode_more.py``; the set-up is ``common``'s.
"""

# The fixtures are imported by name, which pytest needs and pyflakes calls redefinitions.
# ruff: noqa: F811

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx
import pytest

from app.brains.acp.agents.opencode import OpenCodeBrain
from app.settings import Settings
from tests.conftest import LiveServer
from tests.fakes.fake_model_server import FakeModelServer
from tests.helpers import count, kinds, of_kind, send, wait_for_events
from tests.real.common import (  # noqa: F401 (fixtures, found by name)
    opencode_bin,
    opencode_env,
    opencode_profile,
    opencode_session,
)
from tests.real.steps import (
    TIMEOUT,
    assert_resumed_quietly,
    decide,
    permission_rows,
    say_again_after_restart,
    the_pending_request,
    turn_of,
)

pytestmark = pytest.mark.real_cli


def bash(match: str, command: str) -> dict[str, Any]:
    """A fake-model rule: on ``match`` call OpenCode's shell tool with ``command``."""
    return {"match": match, "tool": "bash", "input": {"command": command, "description": match}}


RULES: list[dict[str, Any]] = [
    bash("touch c", "touch c.txt"),
    bash("touch d", "touch d.txt"),
    bash("remove the victim", "rm victim.txt"),
]


@pytest.fixture
def fake_rules() -> dict[str, Any]:
    return {"rules": RULES, "chunk_delay": 0.02}


# -- tests --------------------------------------------------------------------------------------
@pytest.mark.conformance("allow_always", backend="opencode")
async def test_allow_always_answers_the_same_command_pattern_later(
    client: httpx.AsyncClient,
    opencode_profile: dict[str, Any],
    opencode_session: str,
    project_dir: Path,
) -> None:
    sid = opencode_session
    await send(client, sid, "touch c")
    request = await the_pending_request(client, sid)
    decided = await decide(client, request["id"], "allow_always")
    assert decided["rule"] == "Bash(touch:*)", decided
    await wait_for_events(client, sid, count("turn_end"), timeout=TIMEOUT)
    assert (project_dir / "c.txt").exists()
    rules = (await client.get(f"/api/profiles/{opencode_profile['id']}/rules")).json()
    assert [(x["rule"], x["decision"]) for x in rules] == [("Bash(touch:*)", "allow")]

    await send(client, sid, "touch d")
    events = await wait_for_events(client, sid, count("turn_end", 2), timeout=TIMEOUT)
    assert (project_dir / "d.txt").exists()
    # OpenCode's own "always" covers `touch *` for this process, so it does not ask again.
    second = turn_of(events, 2)
    assert not of_kind(second, "permission_request"), kinds(second)
    assert [r["is_error"] for r in of_kind(second, "tool_result")] == [False]
    assert len(await permission_rows(client, sid)) == 1


@pytest.mark.conformance("resume", backend="opencode")
@pytest.mark.parametrize("method", ["resume", "load"])
async def test_restart_resumes_without_showing_the_history_again(
    method: str,
    monkeypatch: pytest.MonkeyPatch,
    settings: Settings,
    server: LiveServer,
    client: httpx.AsyncClient,
    opencode_session: str,
    fake_model: FakeModelServer,
    project_dir: Path,
) -> None:
    """The brain prefers session/resume (no replay). session/load, which OpenCode also
    offers, replays the whole history before it answers, with no marker; forced here, the
    replay must only restore state, not come back as part of the new turn."""
    monkeypatch.setattr(OpenCodeBrain, "resume_methods", (method,))
    sid = opencode_session
    await send(client, sid, "run touch, and remember the word apricot")
    request = await the_pending_request(client, sid)
    await decide(client, request["id"], "allow_once")
    await wait_for_events(client, sid, count("turn_end"), timeout=TIMEOUT)
    backend_session_id = (await client.get(f"/api/sessions/{sid}")).json()["backend_session_id"]
    await server.stop()

    events, session = await say_again_after_restart(settings, sid)

    # Nothing of the first turn (its text, its tool call) comes back as part of the second.
    earlier = ("remember the word apricot", "done")
    assert_resumed_quietly(events, session, backend_session_id, fake_model, earlier)
    assert len(of_kind(events, "tool_call")) == 1
