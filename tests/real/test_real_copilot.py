"""GitHub Copilot CLI 1.0.102 (``copilot --acp``) through Angelia, against the fake model server.

Copilot runs offline with its "bring your own key" provider: ``COPILOT_PROVIDER_BASE_URL``
points it at the fake's OpenAI chat completions and ``COPILOT_OFFLINE`` turns off GitHub
sign-in, telemetry, updates and its GitHub MCP server (``copilot_env``). The scenarios of
``test_real_acp_agents.py`` and ``test_real_scenarios.py`` run for copilot too (streamed
answer, allow once, deny, resume after a restart, model switch refused, deny rules,
interrupt, allow always, plan mode, images); these are the ones where copilot differs.
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

import httpx
import pytest

from app.settings import Settings
from tests.conftest import LiveServer
from tests.fakes.fake_model_server import FakeModelServer
from tests.helpers import count, kinds, of_kind, send, wait_for_events
from tests.real.conftest import ProfileFactory
from tests.real.modes import (
    allow_every_card_of_each,
    assert_plan_mode_refused,
    bypass_runs_a_command_unasked,
    folder_state,
)
from tests.real.steps import (
    TIMEOUT,
    Agent,
    answer,
    backend_pid,
    decide,
    mark_server,
    mcp_calls,
    new_session,
    real_agent,
    restarted_app,
    say_hi_on_model,
    take_turn,
    the_pending_request,
)

pytestmark = pytest.mark.real_cli


@pytest.fixture
def agent(request: pytest.FixtureRequest) -> Agent:
    return real_agent(request, "copilot")


async def test_context_size_is_reported_and_the_profiles_model_goes_on_the_command_line(
    client: httpx.AsyncClient,
    make_profile: ProfileFactory,
    agent: Agent,
    fake_model: FakeModelServer,
) -> None:
    # Copilot lists no models over ACP with a provider of one's own: --model carries it.
    events, requests = await say_hi_on_model(client, make_profile, agent, fake_model, "fake-other")
    asked = [e["body"]["model"] for e in requests]
    assert asked and set(asked) == {"fake-other"}, asked
    usage = of_kind(events, "usage")
    assert usage and all(u["size"] > u["used"] > 0 for u in usage), usage
    end = of_kind(events, "turn_end")[0]
    assert (end["stop_reason"], end["is_error"]) == ("end_turn", False), end


async def test_allow_always_does_not_reach_another_session(
    client: httpx.AsyncClient, make_profile: ProfileFactory, agent: Agent, project_dir: Path
) -> None:
    profile = await make_profile(agent.backend, agent.command, agent.env)
    sessions = []
    for _ in range(2):
        r = await client.post("/api/sessions", json={"profile_id": profile["id"]})
        sessions.append(r.json()["id"])
    first, second = sessions
    await send(client, first, "BASH: touch a.txt")
    await decide(client, (await the_pending_request(client, first))["id"], "allow_always")
    await wait_for_events(client, first, count("turn_end"), timeout=TIMEOUT)
    await send(client, first, "BASH: touch a.txt")

    # copilot answered the repeat itself, so nothing new reached the app.
    events = await wait_for_events(client, first, count("turn_end", 2), timeout=TIMEOUT)
    assert len(of_kind(events, "permission_request")) == 1, kinds(events)

    # Another session's copilot asks again: it kept the answer in its own session only
    # (the app's own rule, stored with the profile and shown on its page, then answers).
    (project_dir / "a.txt").unlink()
    await send(client, second, "BASH: touch a.txt")
    events = await wait_for_events(client, second, count("turn_end"), timeout=TIMEOUT)
    assert len(of_kind(events, "permission_request")) == 1, kinds(events)
    decisions = of_kind(events, "permission_decision")
    assert [(d["decision"], d["source"]) for d in decisions] == [("allow_once", "rule")]
    assert (project_dir / "a.txt").exists()


async def test_what_copilot_lacks_is_refused_and_what_the_app_keeps_holds(
    client: httpx.AsyncClient,
    make_profile: ProfileFactory,
    agent: Agent,
    project_dir: Path,
) -> None:
    base = {"name": "copilot", "backend": "copilot", "cwd": str(project_dir)}
    r = await client.post("/api/profiles", json={**base, "reasoning_effort": "high"})
    assert r.status_code == 422 and "cannot take a reasoning effort" in r.text, r.text
    r = await client.post("/api/profiles", json={**base, "permission_mode": "acceptEdits"})
    assert r.status_code == 422 and "acceptEdits" in r.text, r.text

    sid = await new_session(client, make_profile, agent)
    await take_turn(client, sid, "say hi")
    r = await client.post(f"/api/sessions/{sid}/mode", json={"mode": "acceptEdits"})
    assert r.status_code == 422 and "no 'acceptEdits' mode" in r.text, r.text

    # bypassPermissions is the app's to keep: copilot still asks, the app allows.
    await bypass_runs_a_command_unasked(client, sid, project_dir, turn=2)
    session = (await client.get(f"/api/sessions/{sid}")).json()
    assert session["permission_mode"] == "bypassPermissions", session

    # Back to plan: copilot's own plan mode refuses the command without asking.
    r = await client.post(f"/api/sessions/{sid}/mode", json={"mode": "plan"})
    assert r.status_code == 200, r.text
    await send(client, sid, "BASH: touch planned.txt")
    events = await wait_for_events(client, sid, count("turn_end", 3), timeout=TIMEOUT)
    assert not (project_dir / "planned.txt").exists()
    assert len(of_kind(events, "permission_decision")) == 1


@pytest.mark.conformance("plan_mode", backend="copilot")
async def test_plan_mode_runs_no_command_copilot_asks_about_whatever_is_allowed(
    client: httpx.AsyncClient, make_profile: ProfileFactory, agent: Agent, project_dir: Path
) -> None:
    # copilot's own plan mode blocks what it can tell writes (touch, a redirection) but
    # asks about commands it cannot judge, and runs them once allowed (measured: sh -c
    # 'touch …' and python3 -c "open(…, 'w')" made their files). The app refuses those.
    (project_dir / "notes.txt").write_text("apricot jam\n")
    before = folder_state(project_dir)
    sid = await new_session(client, make_profile, agent, permission_mode="plan")
    commands = ["sh -c 'touch viash.txt'", "python3 -c \"open('sneaky.txt', 'w')\""]
    messages = [f"BASH: {command}" for command in [*commands, "touch planned.txt"]]
    events, allowed = await allow_every_card_of_each(client, sid, messages)

    assert folder_state(project_dir) == before
    assert allowed == []
    await assert_plan_mode_refused(client, sid, events, commands)


async def use_mark(client: httpx.AsyncClient, sid: str, turn: int) -> None:
    """Ask for the test MCP server's tool, check the question names it, allow it once."""
    await send(client, sid, "use mark")
    request = await the_pending_request(client, sid)
    assert (request["tool"], request["input"]) == ("mcp__mark__mark", {"text": "apricot"})
    await answer(client, sid, request["id"], "allow_once", turn)


async def test_mcp_servers_go_through_a_private_file_that_is_gone_once_open(
    settings: Settings,
    server: LiveServer,
    client: httpx.AsyncClient,
    make_profile: ProfileFactory,
    agent: Agent,
    fake_model: FakeModelServer,
    tmp_path: Path,
) -> None:
    log, mark = mark_server(tmp_path)
    mark["env"] = {"MARK_TOKEN": "not-on-the-command-line"}
    fake_model.set_rules(
        {"rules": [{"match": "use mark", "tool": "mark-mark", "input": {"text": "apricot"}}]}
    )
    sid = await new_session(client, make_profile, agent, mcp_servers={"mark": mark})
    await use_mark(client, sid, 1)
    assert mcp_calls(log) == [("mark", {"text": "apricot"})]

    # The servers (and their env) are in a file, not in copilot's command line, which any
    # local user can read; the file is removed once copilot has opened its session.
    argv = Path(f"/proc/{backend_pid(server, sid)}/cmdline").read_bytes().split(b"\0")
    at = argv.index(b"--additional-mcp-config") + 1
    assert argv[at].startswith(b"@") and not Path(argv[at][1:].decode()).exists(), argv
    assert b"not-on-the-command-line" not in b" ".join(argv)
    assert not list(Path(tempfile.gettempdir()).glob("angelia-copilot-*"))

    # A new process after a restart gets them again.
    await server.stop()
    async with restarted_app(settings) as again:
        await use_mark(again, sid, 2)
    assert mcp_calls(log) == [("mark", {"text": "apricot"})] * 2


async def test_a_folder_with_hooks_copilot_would_run_unasked_is_refused(
    client: httpx.AsyncClient, make_profile: ProfileFactory, agent: Agent, project_dir: Path
) -> None:
    # copilot 1.0.102 runs a folder's .github/hooks commands as its session opens, before
    # any question (measured: this hook's file appeared).
    hooks = project_dir / ".github" / "hooks"
    hooks.mkdir(parents=True)
    hook = {"type": "command", "bash": "touch hook_ran.txt"}
    (hooks / "h.json").write_text(
        json.dumps({"version": 1, "hooks": {"sessionStart": [hook], "preToolUse": [hook]}})
    )
    sid = await new_session(client, make_profile, agent)
    r = await client.post(f"/api/sessions/{sid}/messages", json={"text": "say hi"})
    assert r.status_code >= 400 and "hook files without asking" in r.text, r.text
    assert "h.json" in r.text, r.text
    assert not (project_dir / "hook_ran.txt").exists()
    events = (await client.get(f"/api/sessions/{sid}/events")).json()["events"]
    assert of_kind(events, "assistant_message") == []
