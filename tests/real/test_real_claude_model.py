"""Switching the model mid-session with the real Claude Code CLI and the fake model server.

The fake echoes whatever model a request names, so the request log shows which model
Claude Code asked for after the switch, and after the session's CLI was started again.
"""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from tests.conftest import LiveServer
from tests.fakes.fake_model_server import FakeModelServer, request_texts
from tests.helpers import count, of_kind, send, wait_for_events
from tests.real.steps import backend_pid
from tests.real.test_real_claude_app import proc_identity

pytestmark = pytest.mark.real_cli


def models_asked_for(fake_model: FakeModelServer, text: str) -> list[str]:
    """The model of every main-loop request (the one offering tools) about ``text``."""
    return [
        str(e["body"].get("model"))
        for e in fake_model.message_requests()
        if e["body"].get("tools") and any(text in t for t in request_texts(e))
    ]


@pytest.mark.conformance("model_switch", backend="claude")
async def test_switch_model_mid_session_and_keep_it_after_a_restart(
    server: LiveServer,
    client: httpx.AsyncClient,
    claude_session: str,
    fake_model: FakeModelServer,
) -> None:
    sid = claude_session
    r = await client.get(f"/api/sessions/{sid}/models")
    assert r.status_code == 200, r.text
    before_start = r.json()
    assert {"default", "opus", "haiku"} <= {m["id"] for m in before_start["models"]}

    await send(client, sid, "first turn")
    await wait_for_events(client, sid, count("turn_end"))
    offered = (await client.get(f"/api/sessions/{sid}/models")).json()
    # Now the CLI's own list (its initialize reply), with descriptions.
    assert "haiku" in {m["id"] for m in offered["models"]}
    assert all(m["description"] for m in offered["models"]), offered
    first_models = models_asked_for(fake_model, "first turn")
    assert first_models and all("haiku" not in m for m in first_models), first_models

    r = await client.post(f"/api/sessions/{sid}/model", json={"model": "haiku"})
    assert r.status_code == 200, r.text
    assert r.json()["model"] == "haiku"
    pid = backend_pid(server, sid)

    await send(client, sid, "second turn")
    events = await wait_for_events(client, sid, count("turn_end", 2))
    assert [e["model"] for e in of_kind(events, "model_changed")] == ["haiku"]
    assert backend_pid(server, sid) == pid  # switched in place, no restart
    second = models_asked_for(fake_model, "second turn")
    assert second and all("haiku" in m for m in second), second

    # The choice survives the CLI being started again (it resumes with --model).
    await server.app.state.angelia.manager.stop_brain(sid)
    await send(client, sid, "third turn")
    await wait_for_events(client, sid, count("turn_end", 3))
    argv, _ = proc_identity(backend_pid(server, sid))
    assert argv[argv.index("--model") + 1] == "haiku", argv
    third = models_asked_for(fake_model, "third turn")
    assert third and all("haiku" in m for m in third), third

    r = await client.get(f"/api/sessions/{sid}/models")
    assert r.json()["current"] == "haiku"


@pytest.mark.parametrize("bad", ["", " ", "a b", "x" * 201, "$(rm -rf /)"])
async def test_a_bad_model_name_is_refused(
    client: httpx.AsyncClient, claude_session: str, bad: str
) -> None:
    r = await client.post(f"/api/sessions/{claude_session}/model", json={"model": bad})
    assert r.status_code == 422, r.text
    session: dict[str, Any] = (await client.get(f"/api/sessions/{claude_session}")).json()
    assert session["model"] is None
