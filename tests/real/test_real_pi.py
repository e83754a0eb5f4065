"""Angelia end to end with the real pi, through its ACP adapter pi-acp, offline.

pi (``@earendil-works/pi-coding-agent``) runs on Node.js 22 from the CLI cache; pi-acp
starts it as ``pi --mode rpc`` from PATH, which the backend wraps so that Angelia's
permission gate (``app/brains/pi_gate.ts``) is loaded with ``-e``. Each test gets a fresh
HOME whose ``~/.pi/agent`` points a ``fake`` provider at the scripted fake model server
(OpenAI chat.completions) and drives the app through its public HTTP API. The fixtures
here serve ``test_real_pi_permissions.py`` too, which tests the gate's questions.

What pi showed here (and ``docs/backends.md`` records):

* ``session/load`` replays the history with no replay marker, before it answers;
* it has no ``session/set_model``; the model is its ``model`` config option, and pi-acp
  follows a switch with its thinking level as a ``current_mode_update``;
* a bash call's output comes only in pi-acp's ``_meta.terminal_output``;
* MCP servers passed per session are ignored, but the gate can register them in pi.
"""

from __future__ import annotations

import asyncio
import base64
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

import httpx
import pytest

from app.main import create_app
from app.settings import Settings
from tests.conftest import LiveServer
from tests.fakes.fake_model_server import FakeModelServer, request_texts
from tests.helpers import count, kinds, of_kind, read_sse, send, setup_executable, wait_for_events
from tests.real.conftest import ProfileFactory
from tests.real.steps import TIMEOUT, decide, interrupt_a_slow_reply, the_pending_request
from tests.real.test_real_claude_images_rewind import png

pytestmark = pytest.mark.real_cli

# Pinned in .ci/setup too; keep both in step.
PI_VERSION = "1.6.0"
PI_ACP_VERSION = "0.0.34"
NODE22_VERSION = "22.23.5"
# A first start (node, pi-acp, pi and its extensions) plus a turn, with room to spare.
FAKE_MCP_SERVER = Path(__file__).parents[1] / "fakes" / "stdio_mcp_server.py"
# What the gate tells pi (and so the model) about a call it blocked.
DENIED = "Not allowed: the user (or a rule of theirs) denied this tool call."


def _cache() -> Path:
    return Path(os.environ.get("ANGELIA_CLI_CACHE") or Path.home() / ".cache" / "angelia-clis")


@pytest.fixture(scope="session")
def pi_acp_bin() -> Path:
    """The real pi-acp executable."""
    default = _cache() / f"pi-acp-{PI_ACP_VERSION}" / "node_modules" / ".bin" / "pi-acp"
    return setup_executable("ANGELIA_PI_ACP_BIN", default, "pi-acp")


@pytest.fixture(scope="session")
def pi_bin() -> Path:
    """The real pi executable (pi-acp finds it on PATH)."""
    default = _cache() / f"pi-coding-agent-{PI_VERSION}" / "node_modules" / ".bin" / "pi"
    return setup_executable("ANGELIA_PI_BIN", default, "pi")


@pytest.fixture(scope="session")
def node22_bin() -> Path:
    """Node.js 22, which pi needs (the machine's own node may be older)."""
    arch = {"x86_64": "x64", "aarch64": "arm64"}.get(os.uname().machine, os.uname().machine)
    package = f"node-linux-{arch}"
    default = _cache() / f"node-{NODE22_VERSION}" / "node_modules" / package / "bin" / "node"
    return setup_executable("ANGELIA_NODE22_BIN", default, "Node.js 22")


@pytest.fixture
def pi_env(
    fake_model: FakeModelServer, tmp_path: Path, pi_bin: Path, node22_bin: Path
) -> dict[str, str]:
    """The complete environment for pi-acp and pi talking to ``fake_model``.

    A fresh HOME whose ``~/.pi/agent`` has a ``fake`` provider with two models and no
    start-up chatter; PATH has Node 22 first, then pi, and before both a stub ``npm`` that
    fails at once, so pi-acp's ``npm view`` version lookup on every session/new does not
    wait for a registry the loopback namespace cannot reach.
    """
    home = tmp_path / "pi-home"
    agent_dir = home / ".pi" / "agent"
    agent_dir.mkdir(parents=True)
    models = {
        "providers": {
            "fake": {
                "baseUrl": f"{fake_model.url}/v1",
                "api": "openai-completions",
                "apiKey": "fake-key",
                "compat": {"supportsDeveloperRole": False, "supportsReasoningEffort": False},
                # "input" lets images through (pi replaces them with a note otherwise).
                "models": [
                    {"id": "fake-model", "input": ["text", "image"]},
                    {"id": "fake-model-2", "input": ["text", "image"]},
                ],
            }
        }
    }
    settings = {
        "defaultProvider": "fake",
        "defaultModel": "fake-model",
        "enableInstallTelemetry": False,
        "quietStartup": True,
    }
    (agent_dir / "models.json").write_text(json.dumps(models))
    (agent_dir / "settings.json").write_text(json.dumps(settings))
    stubs = tmp_path / "pi-stubs"
    stubs.mkdir()
    npm = stubs / "npm"
    npm.write_text("#!/bin/sh\nexit 1\n")
    npm.chmod(0o755)
    path = [
        str(stubs),
        str(node22_bin.parent),
        str(pi_bin.parent),
        "/usr/local/bin",
        "/usr/bin",
        "/bin",
    ]
    return {
        "PATH": os.pathsep.join(path),
        "HOME": str(home),
        "PI_OFFLINE": "1",
        "PI_SKIP_VERSION_CHECK": "1",
        "PI_TELEMETRY": "0",
    }


@pytest.fixture
async def pi_profile(
    make_profile: ProfileFactory, pi_acp_bin: Path, pi_env: dict[str, str]
) -> dict[str, Any]:
    return await make_profile("pi", [str(pi_acp_bin)], pi_env)


@pytest.fixture
async def pi_session(client: httpx.AsyncClient, pi_profile: dict[str, Any]) -> str:
    """A fresh chat session running the real pi; it starts on the first message."""
    r = await client.post("/api/sessions", json={"profile_id": pi_profile["id"]})
    assert r.status_code == 201, r.text
    session_id: str = r.json()["id"]
    return session_id


# -- helpers ------------------------------------------------------------------------------------
def chat_requests(fake_model: FakeModelServer) -> list[dict[str, Any]]:
    """pi's model calls: every one is a streamed chat.completions with its tools."""
    return [e for e in fake_model.requests() if e["path"].endswith("/chat/completions")]


def requests_with(fake_model: FakeModelServer, text: str) -> list[dict[str, Any]]:
    return [e for e in chat_requests(fake_model) if any(text in t for t in request_texts(e))]


def after(events: list[dict[str, Any]], kind: str, n: int) -> list[dict[str, Any]]:
    """The events from the ``n``-th (0-based) event of ``kind`` on."""
    at = [i for i, e in enumerate(events) if e["kind"] == kind][n]
    return events[at:]


# -- tests --------------------------------------------------------------------------------------


@pytest.mark.conformance("stream", backend="pi")
async def test_text_answer_streams(
    client: httpx.AsyncClient, pi_session: str, fake_model: FakeModelServer
) -> None:
    sid = pi_session
    reader = asyncio.create_task(
        read_sse(
            client,
            f"/api/sessions/{sid}/stream",
            until=lambda frames: frames[-1]["kind"] == "turn_end",
            timeout=TIMEOUT,
        )
    )
    started = time.monotonic()
    await send(client, sid, "say hi")
    frames = await reader
    first_turn = time.monotonic() - started

    k = kinds(frames)
    assert frames[0]["kind"] == "user_message" and frames[0]["text"] == "say hi"
    deltas = of_kind(frames, "text_delta")
    assert len(deltas) >= 2, k
    assert "".join(d["text"] for d in deltas) == "hello from fake"
    assert [a["text"] for a in of_kind(frames, "assistant_message")] == ["hello from fake"], k
    end = frames[-1]
    assert end["stop_reason"] == "end_turn" and end["is_error"] is False, end
    assert end["result"] == "hello from fake"
    assert not of_kind(frames, "error"), of_kind(frames, "error")
    assert len(of_kind(frames, "backend_session")) == 1
    # The model call went to the fake provider's model, with pi's own tools offered.
    (request,) = requests_with(fake_model, "say hi")
    assert request["body"]["model"] == "fake-model" and request["body"].get("stream") is True
    offered = {t["function"]["name"] for t in request["body"]["tools"]}
    assert {"read", "bash", "edit", "write"} <= offered, offered

    started = time.monotonic()
    await send(client, sid, "say hi again")
    events = await wait_for_events(client, sid, count("turn_end", 2), timeout=TIMEOUT)
    second_turn = time.monotonic() - started
    assert [a["text"] for a in of_kind(events, "assistant_message")] == ["hello from fake"] * 2
    print(f"pi turn latency through the app: first {first_turn:.2f} s, next {second_turn:.2f} s")


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

    restarted = LiveServer(create_app(settings))
    await restarted.start()
    try:
        async with restarted.client() as client2:
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
    finally:
        await restarted.stop()
    assert not (project_dir / "after_restart.txt").exists()

    assert not of_kind(events, "error"), of_kind(events, "error")
    # session/load replayed the first turn with no marker; none of it is shown again.
    second_turn = after(events, "user_message", 1)
    assert [a["text"] for a in of_kind(second_turn, "assistant_message")] == ["hello from fake"]
    assert "".join(d["text"] for d in of_kind(second_turn, "text_delta")) == "hello from fake"
    assert not of_kind(second_turn, "tool_call"), kinds(second_turn)
    assert not of_kind(second_turn, "tool_result"), kinds(second_turn)
    assert len(of_kind(events, "user_message")) == 2
    assert len(of_kind(events, "backend_session")) == 1
    assert session["backend_session_id"] == backend_session_id and session["turns"] == 2
    # The new process continued the old conversation: the model sees the earlier turn.
    newest = requests_with(fake_model, "say again")[0]  # later turns carry it as history
    history = request_texts(newest)
    for expected in ("remember the word apricot", "done", "say again"):
        assert any(expected in t for t in history), (expected, history)
    print(f"pi turn after a restart (start, session/load, turn): {took:.2f} s")


@pytest.mark.conformance("interrupt", backend="pi")
async def test_interrupt_stops_a_slow_reply(
    client: httpx.AsyncClient, pi_session: str, fake_model: FakeModelServer
) -> None:
    end = await interrupt_a_slow_reply(client, pi_session, fake_model)
    assert not end["errors"], end  # pi confirmed the cancel itself, in time


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


@pytest.mark.conformance("images", backend="pi")
async def test_an_image_reaches_the_model(
    client: httpx.AsyncClient, pi_session: str, fake_model: FakeModelServer
) -> None:
    sid = pi_session
    data = base64.b64encode(png()).decode()
    r = await client.post(
        f"/api/sessions/{sid}/messages",
        json={"text": "describe it", "images": [{"media_type": "image/png", "data": data}]},
    )
    # pi-acp says promptCapabilities.image = true.
    assert r.status_code == 202, r.text
    events = await wait_for_events(client, sid, count("turn_end"), timeout=TIMEOUT)
    assert of_kind(events, "user_message")[0]["images"][0]["media_type"] == "image/png"
    (request,) = requests_with(fake_model, "describe it")
    # OpenAI chat.completions: an image_url part with the picture as a data URL.
    assert f"data:image/png;base64,{data}" in json.dumps(request["body"]), request["body"]
    assert of_kind(events, "turn_end")[0]["stop_reason"] == "end_turn"


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


@pytest.mark.conformance("mcp", backend="pi")
async def test_a_profile_mcp_server_reaches_the_model_and_asks(
    client: httpx.AsyncClient,
    make_profile: ProfileFactory,
    pi_acp_bin: Path,
    pi_env: dict[str, str],
    tmp_path: Path,
    fake_model: FakeModelServer,
) -> None:
    calls = tmp_path / "mcp-calls.jsonl"
    server = {"command": sys.executable, "args": [str(FAKE_MCP_SERVER), str(calls)]}
    profile = await make_profile("pi", [str(pi_acp_bin)], pi_env, mcp_servers={"mark": server})
    sid = (await client.post("/api/sessions", json={"profile_id": profile["id"]})).json()["id"]
    fake_model.set_rules(
        {
            "chunk_delay": 0.02,
            "rules": [{"match": "use mark", "tool": "mcp__mark__mark", "input": {"text": "hi"}}],
        }
    )
    await send(client, sid, "use mark")
    # An MCP tool can do anything, so the gate asks about it like about bash.
    request = await the_pending_request(client, sid)
    assert request["tool"] == "mcp__mark__mark" and request["input"] == {"text": "hi"}, request
    assert not any('"tools/call"' in line for line in _lines(calls))
    await decide(client, request["id"], "allow_once")
    events = await wait_for_events(client, sid, count("turn_end"), timeout=TIMEOUT)

    received = [json.loads(line) for line in calls.read_text().splitlines()]
    called = [m["params"] for m in received if m.get("method") == "tools/call"]
    assert [(c["name"], c["arguments"]) for c in called] == [("mark", {"text": "hi"})], received
    (result,) = of_kind(events, "tool_result")
    assert result["is_error"] is False and "marked hi" in result["output"], result
    (first, *_) = requests_with(fake_model, "use mark")
    offered = {t["function"]["name"] for t in first["body"]["tools"]}
    assert "mcp__mark__mark" in offered, offered
    # Only this session's pi had the server: the user's own MCP config was not touched.
    assert not (Path(pi_env["HOME"]) / ".pi" / "agent" / "mcp.json").exists()


def _lines(path: Path) -> list[str]:
    return path.read_text().splitlines() if path.exists() else []
