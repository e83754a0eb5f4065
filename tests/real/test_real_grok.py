"""Grok Build 0.2.111 (``grok agent stdio``) through Angelia, against the fake model server.

The scenarios ``test_real_acp_agents.py`` and ``test_real_scenarios.py`` run for every ACP
agent (streamed answer, allow once, deny, resume after a restart, model switch, images
refused, deny rules, interrupt, per-session MCP servers, which grok reaches through its
``use_tool``) cover grok too; these are the ones where grok differs: a refused question
ends its turn, it reads unasked, the app keeps deny rules and modes by answering its
questions, and it hands writes to the client, which keeps them inside the session's folder.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.fakes.fake_model_server import FakeModelServer
from tests.helpers import count, of_kind, send, wait_for_events
from tests.real.conftest import ProfileFactory
from tests.real.modes import bypass_runs_a_command_unasked
from tests.real.steps import (
    TIMEOUT,
    Agent,
    all_events,
    decide,
    main_requests,
    mark_server,
    mcp_calls,
    model_texts,
    new_session,
    take_turn,
    the_pending_request,
)

pytestmark = pytest.mark.real_cli

NewSession = Callable[..., Awaitable[str]]


@pytest.fixture
def grok_session(
    client: httpx.AsyncClient,
    make_profile: ProfileFactory,
    grok_bin: Path,
    grok_env: dict[str, str],
) -> NewSession:
    """``await grok_session(**profile_fields)``: a new chat of a real-grok profile."""

    async def new(**fields: Any) -> str:
        grok = Agent("grok", [str(grok_bin)], grok_env)
        return await new_session(client, make_profile, grok, **fields)

    return new


async def test_a_refused_question_ends_the_turn_and_says_why(
    client: httpx.AsyncClient,
    grok_session: NewSession,
    project_dir: Path,
) -> None:
    sid = await grok_session()
    await send(client, sid, "BASH: touch refused.txt")
    request = await the_pending_request(client, sid)
    # grok offers allow once and reject for a command; only those are shown.
    assert [o["choice"] for o in request["options"]] == ["allow_once", "deny"], request
    await decide(client, request["id"], "deny")
    events = await wait_for_events(client, sid, count("turn_end"), timeout=TIMEOUT)

    assert not (project_dir / "refused.txt").exists()
    (end,) = of_kind(events, "turn_end")
    assert end["stop_reason"] == "cancelled", end
    assert any("ended the turn when a tool call was refused" in e for e in end["errors"]), end
    await send(client, sid, "say hi")
    events = await wait_for_events(client, sid, count("turn_end", 2), timeout=TIMEOUT)
    assert of_kind(events, "assistant_message")[-1]["text"] == "hello from fake"


@pytest.mark.conformance("plan_mode", backend="grok", result="refused")
async def test_bypass_mode_mid_session_is_kept_by_the_app(
    client: httpx.AsyncClient,
    grok_session: NewSession,
    project_dir: Path,
) -> None:
    sid = await grok_session()
    await take_turn(client, sid, "say hi")
    r = await client.post(f"/api/sessions/{sid}/mode", json={"mode": "plan"})
    assert r.status_code == 422 and "no 'plan' mode" in r.text, r.text
    await bypass_runs_a_command_unasked(client, sid, project_dir, turn=2)


@pytest.mark.conformance("allow_always", backend="grok")
async def test_a_write_asks_allow_always_covers_the_next_and_outside_is_refused(
    client: httpx.AsyncClient,
    grok_session: NewSession,
    fake_model: FakeModelServer,
    project_dir: Path,
    tmp_path: Path,
) -> None:
    outside = tmp_path / "outside.txt"
    writes = [
        ("write one", project_dir / "one.txt"),
        ("write two", project_dir / "two.txt"),
        ("write outside", outside),
    ]
    fake_model.set_rules(
        {
            "chunk_delay": 0.0,
            "rules": [
                {"match": m, "tool": "write", "input": {"file_path": str(p), "content": m}}
                for m, p in writes
            ],
        }
    )
    sid = await grok_session()
    await send(client, sid, "write one")
    request = await the_pending_request(client, sid)
    assert (request["tool"], request["input"]["content"]) == ("Edit", "write one"), request
    # For edits grok offers "allow all edits during this session" as well.
    choices = [o["choice"] for o in request["options"]]
    assert choices == ["allow_always", "allow_once", "deny"], request["options"]
    await decide(client, request["id"], "allow_always")
    events = await wait_for_events(client, sid, count("turn_end"), timeout=TIMEOUT)
    assert (project_dir / "one.txt").read_text() == "write one"

    await send(client, sid, "write two")
    events = await wait_for_events(client, sid, count("turn_end", 2), timeout=TIMEOUT)
    assert (project_dir / "two.txt").read_text() == "write two"
    # Nothing asked again: grok keeps the session-wide allow itself.
    assert len(of_kind(events, "permission_request")) == 1

    await send(client, sid, "write outside")
    events = await wait_for_events(client, sid, count("turn_end", 3), timeout=TIMEOUT)
    # grok hands writes to the client (fs/write_text_file), which keeps to the folder.
    assert not outside.exists()
    result = of_kind(events, "tool_result")[-1]
    assert result["is_error"] and "outside the session's working directory" in result["output"]


async def test_the_first_message_waits_for_mcp_servers_and_a_broken_one_is_named(
    client: httpx.AsyncClient,
    grok_session: NewSession,
    fake_model: FakeModelServer,
    tmp_path: Path,
) -> None:
    # grok connects a session's MCP servers only once the session is open; a prompt sent
    # before then tells its model they are "still connecting" and the tools are missing.
    log, server = mark_server(tmp_path)
    use = {"tool_name": "mark__mark", "tool_input": {"text": "apricot"}}
    fake_model.set_rules(
        {"chunk_delay": 0.0, "rules": [{"match": "use mark", "tool": "use_tool", "input": use}]}
    )
    sid = await grok_session(mcp_servers={"mark": server, "broken": {"command": "/bin/false"}})
    await send(client, sid, "use mark")
    request = await the_pending_request(client, sid)
    await decide(client, request["id"], "allow_once")
    events = await wait_for_events(client, sid, count("turn_end"), timeout=TIMEOUT)

    assert mcp_calls(log) == [("mark", {"text": "apricot"})]
    texts = [t for entry in main_requests(fake_model) for t in model_texts(entry)]
    assert texts and not any("currently connecting" in t for t in texts)
    errors = [e["message"] for e in of_kind(events, "error")]
    assert len(errors) == 1 and "MCP server 'broken' is not available" in errors[0], errors
    # grok retries the broken server; the user was told once, and the session goes on.
    await take_turn(client, sid, "say hi", turn=2)
    later = [e["message"] for e in of_kind(await all_events(client, sid), "error")]
    assert later == errors
