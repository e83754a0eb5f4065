"""Angelia end to end with the real Codex (codex-acp 2.6.0 running codex app-server 0.166)
against the fake model server's Responses API.

Each test drives a live Angelia server through its public HTTP API with a profile of
backend ``codex`` whose command is the pinned codex-acp from ``.ci/setup``. The profile's
env names the fake as Codex's model provider (``ANGELIA_CODEX_BASE_URL``); Angelia writes
the session's own ``CODEX_HOME`` under its data folder, so nothing leaves 127.0.0.1 and no
login is needed.

Codex runs commands in its sandbox without asking: it asks only when the model wants a
command run outside the sandbox (``sandbox_permissions: require_escalated``) or a file
written outside its writable roots. The fake's rules here ask for that explicitly.

Env: ``ANGELIA_CODEX_BIN`` names the executable; ``ANGELIA_REQUIRE_REAL_CLI=1`` makes a
missing one fail instead of skip.
"""

from __future__ import annotations

import json
import os
import time
import uuid
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from app.main import create_app
from app.settings import Settings
from tests.conftest import LiveServer
from tests.fakes.fake_model_server import FakeModelServer, request_texts
from tests.faults._support import wait_until
from tests.helpers import count, kinds, of_kind, send, wait_for_events
from tests.real.common import new_chat as new_session
from tests.real.conftest import ProfileFactory
from tests.real.steps import (
    TIMEOUT,
    decide,
    interrupt_a_slow_reply,
    permission_rows,
    the_pending_request,
    turn_of,
)
from tests.security._support import processes_mentioning

pytestmark = pytest.mark.real_cli

# A slug of Codex's own catalog: with an unknown one Codex offers no apply_patch tool.
MODEL = "gpt-5.5"
JUSTIFY = "the fake model wants this outside the sandbox"


def escalated(match: str, command: str) -> dict[str, Any]:
    """A rule: on ``match`` run ``command`` outside Codex's sandbox, which Codex asks about."""
    tool_input = {
        "command": command,
        "sandbox_permissions": "require_escalated",
        "justification": JUSTIFY,
    }
    return {"match": match, "tool": "Bash", "input": tool_input}


RULES: list[dict[str, Any]] = [
    escalated("escalate touch e", "touch e.txt"),
    escalated("escalate touch f", "touch f.txt"),
    {
        "match": "write the note",
        "tool": "Write",
        "input": {"file_path": "note.txt", "content": "hi"},
    },
]


@pytest.fixture
def fake_rules() -> dict[str, Any]:
    return {"rules": RULES, "chunk_delay": 0.02}


@pytest.fixture
def codex_env(fake_model: FakeModelServer, tmp_path: Path) -> dict[str, str]:
    """The complete environment for a real codex-acp talking to ``fake_model``."""
    home = tmp_path / "codex-user-home"
    home.mkdir(exist_ok=True)
    return {
        "PATH": os.environ.get("PATH", "/usr/local/bin:/usr/bin:/bin"),
        "HOME": str(home),
        "ANGELIA_CODEX_BASE_URL": f"{fake_model.url}/v1",
        "ANGELIA_CODEX_API_KEY": "fake-key",
    }


CodexProfile = Callable[..., Awaitable[dict[str, Any]]]


@pytest.fixture
def make_codex_profile(
    make_profile: ProfileFactory, codex_bin: Path, codex_env: dict[str, str]
) -> CodexProfile:
    """``await make_codex_profile(env=None, **fields)``: a new profile running the real
    codex-acp on ``MODEL`` with ``fields``, in ``codex_env`` or the ``env`` given."""

    async def make(env: dict[str, str] | None = None, **fields: Any) -> dict[str, Any]:
        return await make_profile(
            "codex", [str(codex_bin)], env or codex_env, **{"model": MODEL, **fields}
        )

    return make


@pytest.fixture
async def codex_profile(make_codex_profile: CodexProfile) -> dict[str, Any]:
    return await make_codex_profile()


async def refused_start(client: httpx.AsyncClient, session_id: str) -> str:
    """Send a message to a session whose Codex cannot start; the reason, as stored too."""
    r = await client.post(f"/api/sessions/{session_id}/messages", json={"text": "say hi"})
    assert r.status_code == 502, r.text
    events = await wait_for_events(client, session_id, count("error"), timeout=TIMEOUT)
    message: str = of_kind(events, "error")[0]["message"]
    assert message == r.json()["detail"], (message, r.text)
    return message


def codex_home(settings: Settings, session_id: str) -> Path:
    """The session's own CODEX_HOME, which the app keeps under its data folder."""
    return settings.data_dir / "codex" / session_id


def conversation_requests(fake_model: FakeModelServer) -> list[dict[str, Any]]:
    """The model calls of the conversation (tools offered; side requests offer none)."""
    return [e for e in fake_model.requests("/responses") if (e.get("body") or {}).get("tools")]


# -- tests ------------------------------------------------------------------------------------
@pytest.mark.conformance("stream", backend="codex")
async def test_text_streams_with_context_size_in_a_home_of_its_own(
    settings: Settings,
    client: httpx.AsyncClient,
    codex_profile: dict[str, Any],
    codex_env: dict[str, str],
    fake_model: FakeModelServer,
) -> None:
    sid = await new_session(client, codex_profile)
    started = time.monotonic()
    await send(client, sid, "say hi")
    events = await wait_for_events(client, sid, count("turn_end"), timeout=TIMEOUT)
    first = time.monotonic() - started
    deltas = of_kind(events, "text_delta")
    assert len(deltas) >= 2 and "".join(d["text"] for d in deltas) == "hello from fake"
    assert [a["text"] for a in of_kind(events, "assistant_message")] == ["hello from fake"]
    end = of_kind(events, "turn_end")[0]
    assert (end["stop_reason"], end["is_error"], end["model"]) == ("end_turn", False, MODEL)
    assert end["usage"]["total_tokens"] > 0, end
    (usage,) = of_kind(events, "usage")
    assert usage["size"] > usage["used"] > 0, usage
    # The context gauge shows exactly what Codex reported.
    gauge = (await client.get(f"/api/sessions/{sid}/context")).json()
    assert (gauge["used"], gauge["size"]) == (usage["used"], usage["size"]), gauge
    assert not of_kind(events, "error"), of_kind(events, "error")
    # The app started Codex in workspace-write, not codex-acp's own "agent" mode.
    assert [m["mode"] for m in of_kind(events, "mode_changed")] == ["default"]

    # Codex's home is the session's own, written from the profile; the user's is untouched.
    home = codex_home(settings, sid)
    config = (home / "config.toml").read_text()
    assert f'base_url = "{fake_model.url}/v1"' in config and f'model = "{MODEL}"' in config
    assert 'env_key = "ANGELIA_CODEX_API_KEY"' in config
    assert not (Path(codex_env["HOME"]) / ".codex").exists()
    assert not (home / "auth.json").exists()
    (request,) = conversation_requests(fake_model)
    assert request["body"]["model"] == MODEL

    started = time.monotonic()
    await send(client, sid, "say hi again")
    events = await wait_for_events(client, sid, count("turn_end", 2), timeout=TIMEOUT)
    following = time.monotonic() - started
    assert [a["text"] for a in of_kind(events, "assistant_message")] == ["hello from fake"] * 2
    print(f"codex turn latency through the app: first {first:.2f} s, next {following:.2f} s")


@pytest.mark.conformance("tool_prompt", backend="codex")
async def test_an_escalated_command_asks_and_allow_once_runs_it(
    client: httpx.AsyncClient, codex_profile: dict[str, Any], project_dir: Path
) -> None:
    sid = await new_session(client, codex_profile)
    await send(client, sid, "escalate touch e")
    request = await the_pending_request(client, sid)
    assert request["tool"] == "Bash" and "touch e.txt" in request["input"]["command"], request
    choices = [o["choice"] for o in request["options"]]
    assert choices == ["allow_once", "allow_always", "deny"], request["options"]
    assert not (project_dir / "e.txt").exists()

    await decide(client, request["id"], "allow_once")
    events = await wait_for_events(client, sid, count("turn_end"), timeout=TIMEOUT)
    assert (project_dir / "e.txt").exists()
    results = of_kind(events, "tool_result")
    assert [(r["tool_call_id"], r["is_error"]) for r in results] == [
        (request["tool_call_id"], False)
    ], results
    k = kinds(events)
    assert k.index("permission_request") < k.index("tool_result") < k.index("turn_end"), k
    assert of_kind(events, "assistant_message")[-1]["text"] == "done"


@pytest.fixture
def outside_path() -> Iterator[Path]:
    """A path outside Codex's writable roots (the folder, /tmp and $TMPDIR), removed after."""
    path = Path("/var/tmp") / f"angelia-codex-test-{uuid.uuid4().hex}.txt"
    try:
        yield path
    finally:
        path.unlink(missing_ok=True)


async def test_a_write_outside_the_writable_roots_asks_and_allow_once_writes_it(
    client: httpx.AsyncClient,
    codex_profile: dict[str, Any],
    fake_model: FakeModelServer,
    outside_path: Path,
    project_dir: Path,
) -> None:
    patch = {"file_path": str(outside_path), "content": "hi"}
    rule = {"match": "write outside", "tool": "Write", "input": patch}
    fake_model.set_rules({"rules": [rule, *RULES]})
    sid = await new_session(client, codex_profile)
    await send(client, sid, "write outside")
    request = await the_pending_request(client, sid)
    assert request["tool"] == "Edit" and request["input"]["file_path"] == str(outside_path)
    assert not outside_path.exists()
    await decide(client, request["id"], "allow_once")
    events = await wait_for_events(client, sid, count("turn_end"), timeout=TIMEOUT)
    assert outside_path.read_text() == "hi\n"
    assert [r["is_error"] for r in of_kind(events, "tool_result")] == [False]

    # A write inside the folder asks nothing.
    await send(client, sid, "write the note")
    events = await wait_for_events(client, sid, count("turn_end", 2), timeout=TIMEOUT)
    assert len(of_kind(events, "permission_request")) == 1, kinds(events)
    assert (project_dir / "note.txt").read_text() == "hi\n"


async def test_a_refused_command_does_not_run_and_ends_the_turn(
    client: httpx.AsyncClient, codex_profile: dict[str, Any], project_dir: Path
) -> None:
    sid = await new_session(client, codex_profile)
    await send(client, sid, "escalate touch e")
    request = await the_pending_request(client, sid)
    await decide(client, request["id"], "deny")
    events = await wait_for_events(client, sid, count("turn_end"), timeout=TIMEOUT)
    assert not (project_dir / "e.txt").exists()
    end = of_kind(events, "turn_end")[0]
    assert end["stop_reason"] == "cancelled", end
    # The refused call is closed, not left running.
    results = of_kind(events, "tool_result")
    assert [(r["tool_call_id"], r["is_error"]) for r in results] == [
        (request["tool_call_id"], True)
    ], results


@pytest.mark.conformance("allow_always", backend="codex")
async def test_allow_always_stays_in_its_session(
    settings: Settings,
    client: httpx.AsyncClient,
    codex_profile: dict[str, Any],
    project_dir: Path,
) -> None:
    first = await new_session(client, codex_profile)
    await send(client, first, "escalate touch f")
    request = await the_pending_request(client, first)
    await decide(client, request["id"], "allow_always")
    await wait_for_events(client, first, count("turn_end"), timeout=TIMEOUT)
    assert (project_dir / "f.txt").exists()
    saved = (codex_home(settings, first) / "rules" / "default.rules").read_text()
    assert 'prefix_rule(pattern=["touch", "f.txt"], decision="allow")' in saved, saved

    # Codex's saved prefix answers the same command in this session: no question.
    (project_dir / "f.txt").unlink()
    await send(client, first, "escalate touch f")
    events = await wait_for_events(client, first, count("turn_end", 2), timeout=TIMEOUT)
    second = turn_of(events, 2)
    assert not of_kind(second, "permission_request"), kinds(second)
    assert (project_dir / "f.txt").exists()
    assert len(await permission_rows(client, first)) == 1

    # Another session has a home of its own: its Codex asks again (the app's own rule,
    # stored with the profile and shown on its page, then answers).
    other = await new_session(client, codex_profile)
    await send(client, other, "escalate touch f")
    events = await wait_for_events(client, other, count("turn_end"), timeout=TIMEOUT)
    asked = of_kind(events, "permission_request")
    assert len(asked) == 1, kinds(events)
    decisions = of_kind(events, "permission_decision")
    assert [(d["decision"], d["source"]) for d in decisions] == [("allow_once", "rule")]
    assert not (codex_home(settings, other) / "rules" / "default.rules").exists()


async def test_allowed_lists_are_refused_with_the_reason(
    client: httpx.AsyncClient, codex_bin: Path, project_dir: Path
) -> None:
    body = {
        "name": "codex with an allowed list",
        "backend": "codex",
        "cwd": str(project_dir),
        "command": [str(codex_bin)],
        "allowed_tools": ["Read"],
    }
    r = await client.post("/api/profiles", json=body)
    assert r.status_code == 422 and "still run unasked" in r.text, r.text


@pytest.mark.conformance("interrupt", backend="codex")
async def test_interrupt_stops_a_slow_reply_and_the_next_turn_works(
    client: httpx.AsyncClient, codex_profile: dict[str, Any], fake_model: FakeModelServer
) -> None:
    sid = await new_session(client, codex_profile)
    await interrupt_a_slow_reply(client, sid, fake_model)


@pytest.mark.conformance("resume", backend="codex")
async def test_restart_resumes_with_the_history_and_stop_ends_every_process(
    settings: Settings,
    server: LiveServer,
    client: httpx.AsyncClient,
    codex_profile: dict[str, Any],
    fake_model: FakeModelServer,
) -> None:
    sid = await new_session(client, codex_profile)
    await send(client, sid, "remember the word apricot")
    await wait_for_events(client, sid, count("turn_end"), timeout=TIMEOUT)
    backend_session_id = (await client.get(f"/api/sessions/{sid}")).json()["backend_session_id"]
    # codex-acp and the codex app-server it started (both see the session's CODEX_HOME).
    home = str(codex_home(settings, sid))
    assert len(processes_mentioning(home)) >= 2, processes_mentioning(home)
    await server.stop()
    # Stopping sends the whole group SIGKILL; a big process may take a moment to exit.
    wait_until(lambda: processes_mentioning(home) == [], 5, "every Codex process to end")

    restarted = LiveServer(create_app(settings))
    await restarted.start()
    try:
        async with restarted.client() as client2:
            await send(client2, sid, "say again")
            events = await wait_for_events(client2, sid, count("turn_end", 2), timeout=TIMEOUT)
            session = (await client2.get(f"/api/sessions/{sid}")).json()
    finally:
        await restarted.stop()

    assert not of_kind(events, "error"), of_kind(events, "error")
    second = turn_of(events, 2)
    assert [a["text"] for a in of_kind(second, "assistant_message")] == ["hello from fake"]
    assert "".join(d["text"] for d in of_kind(second, "text_delta")) == "hello from fake"
    assert [u["text"] for u in of_kind(events, "user_message")] == [
        "remember the word apricot",
        "say again",
    ]
    assert session["backend_session_id"] == backend_session_id and session["turns"] == 2
    newest = [e for e in conversation_requests(fake_model) if "say again" in str(e["body"])]
    history = request_texts(newest[-1])
    for expected in ("remember the word apricot", "hello from fake", "say again"):
        assert sum(expected in t for t in history) == 1, (expected, history)


@pytest.mark.conformance("model_switch", backend="codex")
async def test_model_switch_reaches_the_model(
    client: httpx.AsyncClient, codex_profile: dict[str, Any], fake_model: FakeModelServer
) -> None:
    sid = await new_session(client, codex_profile)
    await send(client, sid, "first turn")
    await wait_for_events(client, sid, count("turn_end"), timeout=TIMEOUT)
    offered = (await client.get(f"/api/sessions/{sid}/models")).json()
    assert offered["current"] == MODEL, offered
    assert "gpt-6-luna" in {m["id"] for m in offered["models"]}, offered
    r = await client.post(f"/api/sessions/{sid}/model", json={"model": "no-such-model"})
    assert r.status_code == 422 and "gpt-6-luna" in r.text, r.text
    r = await client.post(f"/api/sessions/{sid}/model", json={"model": "gpt-6-luna"})
    assert r.status_code == 200, r.text

    await send(client, sid, "second turn")
    await wait_for_events(client, sid, count("turn_end", 2), timeout=TIMEOUT)
    models = [
        (e["body"]["model"], "second turn" in str(e["body"]), bool(e["body"].get("tools")))
        for e in fake_model.requests("/responses")
        if e["reply"]["why"] != "json_schema"
    ]
    # Codex compacts the conversation (with the old model, no tools) before the switch;
    # its catalog sends gpt-6-luna no tools at all.
    assert models[0] == (MODEL, False, True), models
    assert models[-1] == ("gpt-6-luna", True, False), models


@pytest.mark.conformance("plan_mode", backend="codex")
async def test_plan_mode_is_read_only_and_default_mode_writes_in_the_folder(
    client: httpx.AsyncClient,
    make_codex_profile: CodexProfile,
    project_dir: Path,
    fake_model: FakeModelServer,
) -> None:
    profile = await make_codex_profile(permission_mode="plan")
    sid = await new_session(client, profile)
    await send(client, sid, "run touch")
    events = await wait_for_events(client, sid, count("turn_end"), timeout=TIMEOUT)
    assert [m["mode"] for m in of_kind(events, "mode_changed")] == ["plan"]
    assert not of_kind(events, "permission_request"), kinds(events)
    assert list(project_dir.iterdir()) == []
    # The command ran in Codex's read-only sandbox, which refused the write.
    after = [e for e in conversation_requests(fake_model) if e["reply"]["why"] == "after_tool"]
    assert any("Read-only file system" in t for t in request_texts(after[-1])), after

    # Switched to default mid-session: workspace-write, where the same command runs unasked.
    r = await client.post(f"/api/sessions/{sid}/mode", json={"mode": "default"})
    assert r.status_code == 200 and r.json()["permission_mode"] == "default", r.text
    await send(client, sid, "run touch")
    events = await wait_for_events(client, sid, count("turn_end", 2), timeout=TIMEOUT)
    assert not of_kind(events, "permission_request"), kinds(events)
    assert [p.name for p in project_dir.iterdir()] == ["made_by_fake.txt"]
    r = await client.post(f"/api/sessions/{sid}/mode", json={"mode": "acceptEdits"})
    assert r.status_code == 422 and "has no 'acceptEdits' mode" in r.text, r.text


async def test_the_users_login_is_linked_unless_the_profile_says_none(
    settings: Settings,
    client: httpx.AsyncClient,
    make_codex_profile: CodexProfile,
    codex_env: dict[str, str],
) -> None:
    # The login of the user whose HOME the profile runs with: ~/.codex/auth.json.
    own = Path(codex_env["HOME"]) / ".codex"
    own.mkdir()
    login = '{"OPENAI_API_KEY": "sk-users-own"}'
    (own / "auth.json").write_text(login)
    for env, linked in ((codex_env, True), ({**codex_env, "ANGELIA_CODEX_LOGIN": "none"}, False)):
        profile = await make_codex_profile(env)
        sid = await new_session(client, profile)
        await send(client, sid, "say hi")
        events = await wait_for_events(client, sid, count("turn_end"), timeout=TIMEOUT)
        assert of_kind(events, "turn_end")[0]["is_error"] is False
        link = codex_home(settings, sid) / "auth.json"
        assert link.is_symlink() is linked, env
        assert (own / "auth.json").read_text() == login
    assert sorted(p.name for p in own.iterdir()) == ["auth.json"]


async def test_a_base_url_that_is_not_http_stops_the_start_with_the_reason(
    client: httpx.AsyncClient,
    make_codex_profile: CodexProfile,
    codex_env: dict[str, str],
) -> None:
    env = {**codex_env, "ANGELIA_CODEX_BASE_URL": "file:///etc/passwd"}
    profile = await make_codex_profile(env)
    sid = await new_session(client, profile)
    message = await refused_start(client, sid)
    assert "ANGELIA_CODEX_BASE_URL must be an http:// or https:// URL" in message, message


async def test_compact_runs_codexs_own_compact_command(
    client: httpx.AsyncClient, codex_profile: dict[str, Any], fake_model: FakeModelServer
) -> None:
    sid = await new_session(client, codex_profile)
    await send(client, sid, "say hi")
    events = await wait_for_events(client, sid, count("turn_end"), timeout=TIMEOUT)
    listed = of_kind(events, "commands")[-1]["commands"]
    assert "compact" in [c["name"] for c in listed]
    before = of_kind(events, "usage")[-1]
    figures = (await client.get(f"/api/sessions/{sid}/context")).json()
    assert (figures["used"], figures["can_compact"]) == (before["used"], True), figures
    asked = len(fake_model.requests("/responses"))
    r = await client.post(f"/api/sessions/{sid}/compact")
    assert r.status_code == 202, r.text
    events = await wait_for_events(client, sid, count("turn_end", 2), timeout=TIMEOUT)
    assert of_kind(events, "user_message")[-1]["text"] == "/compact"
    # Codex runs it as its command: a compaction request to the model, shown as its tool.
    marker = json.dumps('"request_kind":"compaction"')[1:-1]
    bodies = [json.dumps(e.get("body")) for e in fake_model.requests("/responses")]
    assert not any(marker in b for b in bodies[:asked])
    assert any(marker in b for b in bodies[asked:])
    assert "Compact conversation" in [c["tool"] for c in of_kind(events, "tool_call")]
    after = of_kind(events, "usage")[-1]
    assert after["used"] < before["used"], (before, after)
    figures = (await client.get(f"/api/sessions/{sid}/context")).json()
    assert (figures["used"], figures["size"]) == (after["used"], after["size"])
