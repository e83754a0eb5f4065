"""The scenarios every backend is held to, run once per real CLI against the fake model.

Each test is one row of ``docs/backends.md``'s conformance table for several backends: a
deny rule blocks the real CLI, an interrupt stops a slow reply and the next turn works,
"allow always" spares the next question, a profile's MCP server is reached, an image
reaches the model, plan mode keeps files untouched. OpenCode's and pi's set-up comes from
``common``; where a backend differs, the test says how.
"""

# The fixtures are imported by name, which pytest needs and pyflakes calls redefinitions.
# ruff: noqa: F811

from __future__ import annotations

import base64
import json
from pathlib import Path

import httpx
import pytest

from tests.fakes.fake_model_server import FakeModelServer
from tests.helpers import count, kinds, of_kind, send, wait_for_events
from tests.real.common import (  # noqa: F401 (fixtures real_agent asks for by name)
    PI_DENIED,
    node22_bin,
    opencode_bin,
    opencode_env,
    pi_acp_bin,
    pi_bin,
    pi_env,
)
from tests.real.conftest import ProfileFactory
from tests.real.steps import (
    TIMEOUT,
    Agent,
    all_events,
    decide,
    interrupt_a_slow_reply,
    main_requests,
    mark_server,
    mcp_calls,
    new_session,
    permission_rows,
    real_agent,
    requests_with,
    say_hi_on_model,
    take_turn,
    the_pending_request,
    turn_of,
    use_mark_again_refused_by,
)
from tests.real.test_real_claude_images_rewind import png

pytestmark = pytest.mark.real_cli


@pytest.fixture(
    params=["claude", "gemini", "claude-acp", "grok", "opencode", "pi", "qwen", "copilot"]
)
def agent(request: pytest.FixtureRequest) -> Agent:
    return real_agent(request, request.param)


@pytest.mark.conformance("deny_rule")
async def test_deny_rules_and_disallowed_tools_block_the_real_cli(
    client: httpx.AsyncClient, make_profile: ProfileFactory, agent: Agent, project_dir: Path
) -> None:
    (project_dir / "keep.txt").write_text("keep")
    sid = await new_session(client, make_profile, agent, disallowed_tools=["Bash(rm:*)"])
    profile_id = (await client.get(f"/api/sessions/{sid}")).json()["profile_id"]
    r = await client.post(
        f"/api/profiles/{profile_id}/rules", json={"rule": "Bash(touch:*)", "decision": "deny"}
    )
    assert r.status_code == 201, r.text

    for turn, command in enumerate(["rm -f keep.txt", "touch blocked.txt"], start=1):
        await send(client, sid, f"BASH: {command}")
        events = await wait_for_events(client, sid, count("turn_end", turn), timeout=TIMEOUT)
        # Nobody was asked: the rule answered, or (Claude Code's --disallowedTools) the CLI
        # refused the call itself.
        decisions = of_kind(events, "permission_decision")
        assert all((d["decision"], d["source"]) == ("deny", "rule") for d in decisions), decisions
        if agent.backend in ("opencode", "pi"):
            # These ask the app before every command: the rule answered, and the tool failed.
            this_turn = turn_of(events, turn)
            rules = [d["rule"] for d in of_kind(this_turn, "permission_decision")]
            assert rules == [["Bash(rm:*)", "Bash(touch:*)"][turn - 1]], rules
            assert "waiting" not in [e["status"] for e in of_kind(this_turn, "status")]
            results = of_kind(this_turn, "tool_result")
            assert [r["is_error"] for r in results] == [True], results
            if agent.backend == "pi":
                assert results[0]["output"] == PI_DENIED, results
    assert (project_dir / "keep.txt").read_text() == "keep"
    assert not (project_dir / "blocked.txt").exists()
    assert await permission_rows(client, sid) == [] or all(
        row["source"] == "rule" for row in await permission_rows(client, sid)
    )


@pytest.mark.conformance("interrupt")
async def test_interrupt_stops_a_slow_reply_and_the_next_turn_works(
    client: httpx.AsyncClient,
    make_profile: ProfileFactory,
    agent: Agent,
    fake_model: FakeModelServer,
) -> None:
    sid = await new_session(client, make_profile, agent)
    end = await interrupt_a_slow_reply(client, sid, fake_model)
    if agent.backend == "pi":
        assert not end["errors"], end  # pi confirmed the cancel itself, in time


# How each agent's model calls the test server's tool. Claude Code loads MCP tools on
# demand (ToolSearch), so the fake calls it unoffered; OpenCode names it <server>_<tool>,
# copilot <server>-<tool>; grok reaches MCP tools through its own use_tool.
MARK_INPUT = {"text": "apricot"}
USE_MARK = {"match": "use mark", "tool": "mcp__mark__mark", "input": MARK_INPUT, "force": True}
USE_MARK_BY_BACKEND = {
    "opencode": {"match": "use mark", "tool": "mark_mark", "input": MARK_INPUT},
    "copilot": {"match": "use mark", "tool": "mark-mark", "input": MARK_INPUT},
    "grok": {
        "match": "use mark",
        "tool": "use_tool",
        "input": {"tool_name": "mark__mark", "tool_input": MARK_INPUT},
    },
}


async def mark_session(
    client: httpx.AsyncClient,
    make_profile: ProfileFactory,
    agent: Agent,
    fake_model: FakeModelServer,
    tmp_path: Path,
) -> tuple[Path, str]:
    """(the MCP server's log, a session with it) where "use mark" calls its tool."""
    log, server = mark_server(tmp_path)
    sid = await new_session(client, make_profile, agent, mcp_servers={"mark": server})
    rule = USE_MARK_BY_BACKEND.get(agent.backend, USE_MARK)
    fake_model.set_rules({"chunk_delay": 0.0, "rules": [rule]})
    return log, sid


@pytest.mark.parametrize("agent", ["gemini", "claude-acp", "copilot"], indirect=True)
@pytest.mark.conformance("allow_always")
async def test_allow_always_spares_the_next_question(
    client: httpx.AsyncClient,
    make_profile: ProfileFactory,
    agent: Agent,
    fake_model: FakeModelServer,
    project_dir: Path,
    tmp_path: Path,
) -> None:
    # claude-agent-acp offers "don't ask again" for MCP tools but not for shell commands.
    if agent.backend == "claude-acp":
        log, sid = await mark_session(client, make_profile, agent, fake_model, tmp_path)
        message = "use mark"
    else:
        sid = await new_session(client, make_profile, agent)
        message = "BASH: touch a.txt"
    await send(client, sid, message)
    request = await the_pending_request(client, sid)
    assert "allow_always" in [o["choice"] for o in request["options"]], request["options"]
    await decide(client, request["id"], "allow_always")
    await wait_for_events(client, sid, count("turn_end"), timeout=TIMEOUT)

    await send(client, sid, message)
    events = await wait_for_events(client, sid, count("turn_end", 2), timeout=TIMEOUT)
    second = turn_of(events, 2)
    assert of_kind(second, "tool_result"), second
    assert len(await permission_rows(client, sid)) == 1
    if agent.backend == "claude-acp":
        assert mcp_calls(log) == [("mark", {"text": "apricot"})] * 2
    else:
        assert (project_dir / "a.txt").exists()


@pytest.mark.parametrize(
    "agent", ["claude", "claude-acp", "grok", "opencode", "pi", "qwen", "copilot"], indirect=True
)
@pytest.mark.conformance("mcp")
async def test_a_profile_mcp_server_is_reached_and_a_rule_for_it_holds(
    client: httpx.AsyncClient,
    make_profile: ProfileFactory,
    agent: Agent,
    fake_model: FakeModelServer,
    tmp_path: Path,
) -> None:
    log, sid = await mark_session(client, make_profile, agent, fake_model, tmp_path)
    await send(client, sid, "use mark")
    request = await the_pending_request(client, sid)
    # Named as Claude Code names MCP tools, so one rule set serves every backend; OpenCode
    # asks without showing the input.
    shown = {} if agent.backend == "opencode" else MARK_INPUT
    assert (request["tool"], request["input"]) == ("mcp__mark__mark", shown), request
    if agent.backend == "grok":
        assert [o["choice"] for o in request["options"]] == ["allow_once", "deny"], request
    assert mcp_calls(log) == []
    await decide(client, request["id"], "allow_once")
    events = await wait_for_events(client, sid, count("turn_end"), timeout=TIMEOUT)
    assert mcp_calls(log) == [("mark", MARK_INPUT)]
    results = of_kind(events, "tool_result")
    assert any("marked apricot" in r["output"] for r in results), results
    assert requests_with(fake_model, "marked apricot")
    if agent.backend in ("opencode", "pi"):
        assert [c["tool"] for c in of_kind(events, "tool_call")] == ["mcp__mark__mark"]
        assert [(r["output"], r["is_error"]) for r in results] == [("marked apricot", False)]
        offered = {t["function"]["name"] for t in main_requests(fake_model)[0]["body"]["tools"]}
        assert {"opencode": "mark_mark", "pi": "mcp__mark__mark"}[agent.backend] in offered
    if agent.backend == "pi":
        # Only this session's pi had the server: the user's own MCP config was not touched.
        assert not (agent.home / ".pi" / "agent" / "mcp.json").exists()

    # A rule for the whole server refuses the next call before it reaches the server.
    profile_id = (await client.get(f"/api/sessions/{sid}")).json()["profile_id"]
    r = await client.post(
        f"/api/profiles/{profile_id}/rules", json={"rule": "mcp__mark", "decision": "deny"}
    )
    assert r.status_code == 201, r.text
    await use_mark_again_refused_by(client, sid, log, "mcp__mark")


@pytest.mark.parametrize("agent", ["gemini", "claude-acp", "qwen", "copilot"], indirect=True)
@pytest.mark.conformance("plan_mode")
async def test_plan_mode_keeps_the_files_untouched(
    client: httpx.AsyncClient,
    make_profile: ProfileFactory,
    agent: Agent,
    fake_model: FakeModelServer,
    project_dir: Path,
) -> None:
    sid = await new_session(client, make_profile, agent)
    await take_turn(client, sid, "say hi")
    r = await client.post(f"/api/sessions/{sid}/mode", json={"mode": "plan"})
    assert r.status_code == 200, r.text
    await send(client, sid, "BASH: touch planned.txt")
    events = await wait_for_events(client, sid, count("turn_end", 2), timeout=TIMEOUT)
    assert not (project_dir / "planned.txt").exists()
    # Refused by the agent's plan mode without asking anyone.
    assert await permission_rows(client, sid) == []
    second = events[[e["kind"] for e in events].index("turn_end") + 1 :]
    assert of_kind(second, "mode_changed") or of_kind(events, "mode_changed"), kinds(events)


@pytest.mark.parametrize(
    "agent", ["gemini", "claude-acp", "grok", "opencode", "pi", "qwen", "copilot"], indirect=True
)
@pytest.mark.conformance("images", result={"grok": "refused"})
async def test_an_image_reaches_the_model_and_rewind_is_refused(
    client: httpx.AsyncClient, agent: Agent, agent_session: str, fake_model: FakeModelServer
) -> None:
    sid = agent_session
    data = base64.b64encode(png()).decode()
    r = await client.post(
        f"/api/sessions/{sid}/messages",
        json={"text": "describe it", "images": [{"media_type": "image/png", "data": data}]},
    )
    if agent.backend == "grok":
        # Grok Build says promptCapabilities.image = false: refused, nothing sent.
        assert r.status_code == 422 and "does not take images" in r.text, r.text
        assert not requests_with(fake_model, "describe it")
        return
    # The others say promptCapabilities.image = true.
    assert r.status_code == 202, r.text
    events = await wait_for_events(client, sid, count("turn_end"), timeout=TIMEOUT)
    assert not of_kind(events, "error"), of_kind(events, "error")
    assert of_kind(events, "user_message")[0]["images"][0]["media_type"] == "image/png"
    assert of_kind(events, "turn_end")[0]["stop_reason"] == "end_turn"
    bodies = [json.dumps(e["body"]) for e in fake_model.requests() if isinstance(e["body"], dict)]
    assert any(data in b for b in bodies), "the image never reached the model"
    if agent.backend in ("opencode", "pi"):
        # OpenAI chat.completions: an image_url part with the picture as a data URL.
        assert any(f"data:image/png;base64,{data}" in b for b in bodies), bodies
    assert await permission_rows(client, sid) == []

    # Only Claude Code can put files back as they were at a message.
    seq = of_kind(events, "user_message")[0]["seq"]
    r = await client.post(f"/api/sessions/{sid}/rewind", json={"event_seq": seq})
    assert r.status_code == 409 and "cannot restore files" in r.text, r.text


@pytest.mark.conformance("mcp", backend="gemini", result="refused")
async def test_gemini_refuses_a_profile_with_mcp_servers(
    client: httpx.AsyncClient, project_dir: Path, tmp_path: Path
) -> None:
    _, server = mark_server(tmp_path)
    body = {
        "name": "gemini with mcp",
        "backend": "gemini",
        "cwd": str(project_dir),
        "mcp_servers": {"mark": server},
    }
    r = await client.post("/api/profiles", json=body)
    assert r.status_code == 422, r.text
    assert "only in a folder it trusts" in r.text, r.text


@pytest.mark.parametrize(
    "agent", ["claude", "gemini", "claude-acp", "grok", "qwen", "copilot"], indirect=True
)
async def test_dont_ask_runs_only_what_a_rule_allows(
    client: httpx.AsyncClient, make_profile: ProfileFactory, agent: Agent, project_dir: Path
) -> None:
    # Claude Code keeps dontAsk itself; for agents without it the app refuses what asks.
    (project_dir / "keep.txt").write_text("keep")
    sid = await new_session(
        client, make_profile, agent, permission_mode="dontAsk", allowed_tools=["Bash(touch:*)"]
    )
    for turn, command in enumerate(["touch made.txt", "rm -f keep.txt"], start=1):
        await send(client, sid, f"BASH: {command}")
        events = await wait_for_events(client, sid, count("turn_end", turn), timeout=TIMEOUT)
    assert (project_dir / "made.txt").exists()
    assert (project_dir / "keep.txt").read_text() == "keep"
    rows = await permission_rows(client, sid)
    assert all(row["source"] in ("rule", "mode") for row in rows), rows
    assert [r["decision"] for r in rows if r["source"] == "mode"] in ([], ["deny"]), rows
    assert of_kind(events, "turn_end")[-1]["is_error"] is False
    # The session is still in dontAsk, whatever mode the agent itself was put in.
    r = await client.post(f"/api/sessions/{sid}/mode", json={"mode": "default"})
    assert r.status_code == 200, r.text
    modes = [
        (e["mode"], e["source"]) for e in of_kind(await all_events(client, sid), "mode_changed")
    ]
    assert modes[-1] == ("default", "user"), modes
    assert ("default", "agent") not in modes, modes


@pytest.mark.parametrize("agent", ["claude-acp", "grok"], indirect=True)
async def test_a_profile_model_the_agent_lacks_is_said(
    client: httpx.AsyncClient, make_profile: ProfileFactory, agent: Agent
) -> None:
    sid = await new_session(client, make_profile, agent, model="no-such-model")
    events = await take_turn(client, sid, "say hi")
    errors = [e["message"] for e in of_kind(events, "error")]
    assert any("has no model 'no-such-model'" in m for m in errors), errors
    assert of_kind(events, "assistant_message")[-1]["text"] == "hello from fake"


@pytest.mark.parametrize("agent", ["gemini"], indirect=True)
async def test_gemini_takes_the_model_on_its_command_line_and_refuses_an_effort(
    client: httpx.AsyncClient,
    make_profile: ProfileFactory,
    agent: Agent,
    fake_model: FakeModelServer,
    project_dir: Path,
) -> None:
    # gemini offers no model or effort choice over ACP; --model is its own flag.
    _, requests = await say_hi_on_model(client, make_profile, agent, fake_model, "gemini-2.5-flash")
    asked = [e["path"] for e in requests]
    assert asked and all("/models/gemini-2.5-flash:" in p for p in asked), asked
    body = {"name": "g", "backend": "gemini", "cwd": str(project_dir), "reasoning_effort": "high"}
    r = await client.post("/api/profiles", json=body)
    assert r.status_code == 422 and "cannot take a reasoning effort" in r.text, r.text


@pytest.mark.parametrize("mode", ["acceptEdits", "bypassPermissions"])
@pytest.mark.parametrize("agent", ["gemini"], indirect=True)
async def test_gemini_says_why_it_refuses_a_privileged_mode_in_an_untrusted_folder(
    client: httpx.AsyncClient, make_profile: ProfileFactory, agent: Agent, mode: str
) -> None:
    # gemini refuses autoEdit and yolo in a folder it does not trust: the session does
    # not start in another mode under this one's name, and the user reads gemini's reason.
    sid = await new_session(client, make_profile, agent, permission_mode=mode)
    r = await client.post(f"/api/sessions/{sid}/messages", json={"text": "say hi"})
    assert r.status_code >= 400, r.text
    assert "untrusted folder" in r.text, r.text
    events = (await client.get(f"/api/sessions/{sid}/events")).json()["events"]
    assert of_kind(events, "assistant_message") == []
