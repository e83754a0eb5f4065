"""Angelia end to end with the real pi, through its ACP adapter pi-acp, offline.

pi (``@earendil-works/pi-coding-agent``) runs on Node.js 22 from the CLI cache; pi-acp
starts it as ``pi --mode rpc`` from PATH, which the backend wraps so that Angelia's
permission gate (``app/brains/acp/agents/pi_gate.ts``) is loaded with ``-e``. Each test gets a fresh
HOME whose ``~/.pi/agent`` points a ``fake`` provider at the scripted fake model server
(OpenAI chat.completions) and drives the app through its public HTTP API. The fixtures
(``common``) serve ``test_real_pi_permissions.py`` too, which tests the gate's questions.

What pi showed here (and ``docs/backends.md`` records):

* ``session/load`` replays the history with no replay marker, before it answers;
* it has no ``session/set_model``; the model is its ``model`` config option, and pi-acp
  follows a switch with its thinking level as a ``current_mode_update``;
* a bash call's output comes only in pi-acp's ``_meta.terminal_output``;
* MCP servers passed per session are ignored, but the gate can register them in pi.
"""

# The fixtures are imported by name, which pytest needs and pyflakes calls redefinitions.
# ruff: noqa: F811

from __future__ import annotations

import time
from pathlib import Path

import httpx
import pytest

from app.settings import Settings
from tests.conftest import LiveServer
from tests.fakes.fake_model_server import FakeModelServer
from tests.helpers import count, of_kind, send, wait_for_events
from tests.real.common import (  # noqa: F401 (fixtures, found by name)
    node22_bin,
    pi_acp_bin,
    pi_bin,
    pi_env,
    pi_profile,
    pi_session,
)
from tests.real.steps import (
    TIMEOUT,
    assert_resumed_quietly,
    decide,
    requests_with,
    restarted_app,
    the_pending_request,
)

pytestmark = pytest.mark.real_cli

# -- tests --------------------------------------------------------------------------------------


@pytest.mark.conformance("resume", backend="pi")
async def test_restart_loads_the_session_without_showing_it_twice(
    settings: Settings,
    server: LiveServer,
    client: httpx.AsyncClient,
    pi_session: str,
    project_dir: Path,
    fake_model: FakeModelServer,
) -> None:
    sid = pi_session
    # A tool call too, so the replay (user and agent chunks, tool calls) has all it can hold.
    await send(client, sid, "run touch, and remember the word apricot")
    request = await the_pending_request(client, sid)
    await decide(client, request["id"], "allow_once")
    await wait_for_events(client, sid, count("turn_end"), timeout=TIMEOUT)
    backend_session_id = (await client.get(f"/api/sessions/{sid}")).json()["backend_session_id"]
    assert backend_session_id
    await server.stop()

    async with restarted_app(settings) as client2:
        assert (await client2.get(f"/api/sessions/{sid}")).json()["status"] == "idle"
        started = time.monotonic()
        await send(client2, sid, "say again")
        events = await wait_for_events(client2, sid, count("turn_end", 2), timeout=TIMEOUT)
        took = time.monotonic() - started
        session = (await client2.get(f"/api/sessions/{sid}")).json()
        # The reloaded pi has the gate too: a command still asks, and "no" holds.
        await send(client2, sid, "BASH: touch after_restart.txt")
        asked = await the_pending_request(client2, sid)
        assert asked["input"]["command"] == "touch after_restart.txt", asked
        await decide(client2, asked["id"], "deny")
        await wait_for_events(client2, sid, count("turn_end", 3), timeout=TIMEOUT)
    assert not (project_dir / "after_restart.txt").exists()

    # session/load replayed the first turn with no marker; none of it is shown again.
    earlier = ("remember the word apricot", "done")
    assert_resumed_quietly(events, session, backend_session_id, fake_model, earlier)
    print(f"pi turn after a restart (start, session/load, turn): {took:.2f} s")


@pytest.mark.conformance("model_switch", backend="pi")
async def test_model_switch_goes_through_the_model_option(
    client: httpx.AsyncClient, pi_session: str, fake_model: FakeModelServer
) -> None:
    sid = pi_session
    await send(client, sid, "first turn")
    await wait_for_events(client, sid, count("turn_end"), timeout=TIMEOUT)
    offered = (await client.get(f"/api/sessions/{sid}/models")).json()
    ids = {m["id"] for m in offered["models"]}
    assert {"fake/fake-model", "fake/fake-model-2"} <= ids, offered
    events = (await client.get(f"/api/sessions/{sid}/events")).json()["events"]
    assert [m["current"] for m in of_kind(events, "models")] == ["fake/fake-model"]
    r = await client.post(f"/api/sessions/{sid}/model", json={"model": "no-such-model"})
    assert r.status_code == 422 and "fake/fake-model-2" in r.text, r.text
    # pi has no session/set_model; the brain uses its "model" config option.
    mode = (await client.get(f"/api/sessions/{sid}")).json()["permission_mode"]
    r = await client.post(f"/api/sessions/{sid}/model", json={"model": "fake/fake-model-2"})
    assert r.status_code == 200, r.text
    # pi-acp follows the switch with its thinking level as a current_mode_update ("off");
    # that is not a permission mode, and the session's mode stays as it was.
    session = (await client.get(f"/api/sessions/{sid}")).json()
    assert session["permission_mode"] == mode and mode != "off", session
    assert (await client.get(f"/api/sessions/{sid}/models")).json()["current"] == (
        "fake/fake-model-2"
    )
    await send(client, sid, "second turn")
    events = await wait_for_events(client, sid, count("turn_end", 2), timeout=TIMEOUT)
    assert [m["current"] for m in of_kind(events, "models")][-1] == "fake/fake-model-2"
    assert not of_kind(events, "mode_changed"), of_kind(events, "mode_changed")
    first = requests_with(fake_model, "first turn")[0]  # later ones carry it as history
    second = requests_with(fake_model, "second turn")
    assert first["body"]["model"] == "fake-model"
    assert second and all(e["body"]["model"] == "fake-model-2" for e in second), second


async def test_bash_output_shows_as_the_result(
    client: httpx.AsyncClient, pi_session: str, project_dir: Path
) -> None:
    sid = pi_session
    (project_dir / "listed.txt").write_text("x")
    await send(client, sid, "BASH: ls; echo shown-by-bash")
    request = await the_pending_request(client, sid)
    await decide(client, request["id"], "allow_once")
    events = await wait_for_events(client, sid, count("turn_end"), timeout=TIMEOUT)
    (result,) = of_kind(events, "tool_result")
    assert result["is_error"] is False, result
    assert result["output"].split() == ["listed.txt", "shown-by-bash"], result
