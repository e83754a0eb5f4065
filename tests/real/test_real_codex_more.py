"""Angelia with the real Codex (codex-acp 2.6.0, codex 0.166), continued: a profile's deny
rules kept by Codex's own exec policy and config, a profile's MCP server, and images.

Same set-up as ``test_real_codex.py`` (whose fixtures these share): a live Angelia server
driven through its HTTP API, Codex pointed at the fake model server's Responses API.
"""

from __future__ import annotations

import base64
import json
import secrets
from pathlib import Path
from typing import Any

import httpx
import pytest

from app.settings import Settings
from tests.conftest import LiveServer
from tests.fakes.fake_model_server import FakeModelServer, request_images, request_texts
from tests.helpers import count, of_kind, send, wait_for_events
from tests.real.steps import (
    TIMEOUT,
    answer,
    backend_pid,
    decide,
    mark_server,
    mcp_calls,
    permission_rows,
    process_tree,
    take_turn,
    the_pending_request,
)
from tests.real.test_real_claude_images_rewind import png
from tests.real.test_real_codex import (
    RULES,
    CodexProfile,
    codex_env,
    codex_home,
    codex_profile,
    conversation_requests,
    make_codex_profile,
    new_session,
    turn_of,
)

# Fixtures shared with test_real_codex.py.
__all__ = ["codex_env", "codex_profile", "make_codex_profile"]

pytestmark = pytest.mark.real_cli

# What Codex itself wrote into a session's rules file ("allow always"), and a block of
# Angelia's from an earlier start whose rule the profile no longer has.
CODEX_OWN = 'prefix_rule(pattern=["touch", "f.txt"], decision="allow")\n'
STALE_BLOCK = (
    "# >>> Angelia: the profile's deny rules (rewritten at each start) >>>\n"
    'prefix_rule(pattern=["ls"], decision="forbidden")\n'
    "# <<< Angelia: the profile's deny rules <<<\n"
)


@pytest.fixture
def fake_rules() -> dict[str, Any]:
    # The model reports what Codex answered about a refused command, as a model would.
    refused = {"match": "rejected", "text": "Codex refused that: ", "quote_result": True}
    return {"rules": RULES, "after_tool_rules": [refused], "chunk_delay": 0.0}


@pytest.mark.conformance("deny_rule", backend="codex")
async def test_a_profile_deny_rule_blocks_the_command_and_others_still_run(
    settings: Settings,
    client: httpx.AsyncClient,
    make_codex_profile: CodexProfile,
    project_dir: Path,
    fake_model: FakeModelServer,
) -> None:
    profile = await make_codex_profile(disallowed_tools=["Bash(rm:*)"])
    sid = await new_session(client, profile)
    rules_file = codex_home(settings, sid) / "rules" / "default.rules"
    rules_file.parent.mkdir(parents=True)
    rules_file.write_text(STALE_BLOCK + CODEX_OWN)
    (project_dir / "x").write_text("keep me")

    for n, command in enumerate(["rm x", "echo a && rm x"], 1):
        await send(client, sid, f"BASH: {command}")
        events = await wait_for_events(client, sid, count("turn_end", n), timeout=TIMEOUT)
        assert (project_dir / "x").read_text() == "keep me", command
        said = [a["text"] for a in of_kind(turn_of(events, n), "assistant_message")]
        assert len(said) == 1 and said[0].startswith("Codex refused that: "), said
        assert "rejected: Denied by the rule Bash(rm:*)" in said[0], said

    # An allowed command still runs: `ls` (which the stale block forbade) lists the file.
    await send(client, sid, "BASH: ls")
    events = await wait_for_events(client, sid, count("turn_end", 3), timeout=TIMEOUT)
    assert [a["text"] for a in of_kind(turn_of(events, 3), "assistant_message")] == ["done"]
    listed = conversation_requests(fake_model)[-1]
    assert "Output:\nx\n" in request_texts(listed)[-1], request_texts(listed)[-1]

    # Codex's own "allow always" line is kept: the escalated `touch f.txt` runs unasked.
    await send(client, sid, "escalate touch f")
    events = await wait_for_events(client, sid, count("turn_end", 4), timeout=TIMEOUT)
    assert not of_kind(events, "permission_request")
    assert (project_dir / "f.txt").exists()
    text = rules_file.read_text()
    assert CODEX_OWN in text and 'pattern=["ls"]' not in text, text
    assert 'prefix_rule(pattern=["rm"], decision="forbidden"' in text, text

    # Codex keeps the rule in full access too, where nothing asks.
    r = await client.post(
        f"/api/sessions/{sid}/mode", json={"mode": "bypassPermissions", "confirm": True}
    )
    assert r.status_code == 200, r.text
    await send(client, sid, "BASH: rm x")
    events = await wait_for_events(client, sid, count("turn_end", 5), timeout=TIMEOUT)
    assert (project_dir / "x").read_text() == "keep me"
    said = [a["text"] for a in of_kind(turn_of(events, 5), "assistant_message")]
    assert "rejected: Denied by the rule Bash(rm:*)" in said[0], said


async def test_deny_rules_codex_cannot_keep_are_refused_naming_the_rule(
    client: httpx.AsyncClient, codex_bin: Path, project_dir: Path
) -> None:
    body = {
        "name": "codex with deny rules",
        "backend": "codex",
        "cwd": str(project_dir),
        "command": [str(codex_bin)],
    }
    for rule, why in [
        ("Bash", "runs Bash without asking"),
        ("Edit(secrets/**)", "runs Edit without asking"),
        ("Bash(npm test)", "only by its first words"),
        ("Bash(rm *)", "only by its first words"),
    ]:
        r = await client.post(
            "/api/profiles", json={**body, "disallowed_tools": ["Bash(git push:*)", rule]}
        )
        assert r.status_code == 422 and why in r.text and rule in r.text, (rule, r.text)
    r = await client.post(
        "/api/profiles", json={**body, "disallowed_tools": ["mcp__mark__mark(apricot)"]}
    )
    assert r.status_code == 422 and "only as a whole, as mcp__mark__mark" in r.text, r.text
    r = await client.post("/api/profiles", json={**body, "disallowed_tools": ["Bash(git push:*)"]})
    assert r.status_code == 201, r.text
    profile = r.json()
    # A stored rule never reaches Codex's start: it must go in the profile's list. For MCP
    # that matters in full access, where Codex calls MCP tools without asking.
    for rule in ["Bash(rm:*)", "mcp__mark", "mcp__mark__mark"]:
        r = await client.post(
            f"/api/profiles/{profile['id']}/rules", json={"rule": rule, "decision": "deny"}
        )
        assert r.status_code == 422, (rule, r.text)
        assert f"add {rule} there" in r.text and "profile's disallowed tools" in r.text, r.text
    r = await client.get(f"/api/profiles/{profile['id']}/rules")
    assert r.json() == [], r.text


MARK_INPUT = {"text": "apricot"}
# codex-acp offers a profile's MCP tools only through Codex's tool_search: the model searches,
# gets the server's namespace back, then calls the tool in it.
FIND_MARK = {"match": "use mark", "tool": "tool_search", "input": {"query": "mark"}}
CALL_MARK = {
    "match": "mcp__mark",
    "unless": "marked apricot",
    "tool": "mcp__mark__mark",
    "input": MARK_INPUT,
}
REFUSED_MARK = {"match": "cancelled", "text": "The mark was refused: ", "quote_result": True}
RULE = "mcp__mark"


@pytest.mark.conformance("mcp", backend="codex")
async def test_a_profile_mcp_server_is_found_by_tool_search_and_a_rule_for_it_holds(
    client: httpx.AsyncClient,
    server: LiveServer,
    make_codex_profile: CodexProfile,
    fake_model: FakeModelServer,
    tmp_path: Path,
) -> None:
    log, mark = mark_server(tmp_path)
    secret = f"mcp-secret-{secrets.token_hex(8)}"
    mark["env"] = {"SECRET_VALUE": secret}
    profile = await make_codex_profile(mcp_servers={"mark": mark})
    rules = {
        "chunk_delay": 0.0,
        "rules": [FIND_MARK],
        "after_tool_rules": [REFUSED_MARK, CALL_MARK],
    }
    fake_model.set_rules(rules)
    sid = await new_session(client, profile)
    await send(client, sid, "use mark")
    request = await the_pending_request(client, sid)
    # Named as Claude Code names MCP tools, so one rule set serves every backend.
    assert (request["tool"], request["input"]) == ("mcp__mark__mark", MARK_INPUT), request
    assert mcp_calls(log) == []
    # The server runs with its env, which is on no command line of Codex's tree.
    tree = process_tree(backend_pid(server, sid))
    assert any("stdio_mcp_server.py" in line for line in tree.values()), tree
    assert [line for line in tree.values() if secret in line] == []
    assert json.loads(log.read_text().splitlines()[0]) == {"env": {"SECRET_VALUE": secret}}
    events = await answer(client, sid, request["id"], "allow_once")
    assert mcp_calls(log) == [("mark", MARK_INPUT)]
    assert [c["tool"] for c in of_kind(events, "tool_call")] == ["mcp__mark__mark"]
    results = of_kind(events, "tool_result")
    assert [("marked apricot" in r["output"], r["is_error"]) for r in results] == [(True, False)]
    # The tool was not offered up front: the search found it.
    first, found, answered = conversation_requests(fake_model)[:3]
    offered = str(first["body"]["tools"])
    assert "tool_search" in offered and "mcp__mark" not in offered, offered
    assert found["reply"]["why"] == "after_tool_rule:mcp__mark", found["reply"]
    assert any("marked apricot" in t for t in request_texts(answered))

    # A deny rule added to the profile while its Codex runs: Codex is restarted with it
    # before the next message, and a server the profile denies whole is not started.
    r = await client.patch(f"/api/profiles/{profile['id']}", json={"disallowed_tools": [RULE]})
    assert r.status_code == 200, r.text
    calls = mcp_calls(log)
    second = turn_of(await take_turn(client, sid, "use mark again", turn=2), 2)
    assert [n["note"] for n in of_kind(second, "note")] == ["profile_changed"]
    assert mcp_calls(log) == calls
    assert not of_kind(second, "permission_request") and not of_kind(second, "tool_result")
    search = conversation_requests(fake_model)[-1]
    assert "mcp__mark" not in str(search["body"].get("tools")), search["body"].get("tools")


STAMP = {"text": "plum"}
# The model calls the denied tool unprompted, by the name it would have in the server's
# namespace (no search offered it), then the other tool once Codex has answered.
GUESS_MARK = {"match": "mark it", "tool": "mcp__mark__mark", "input": MARK_INPUT, "force": True}
UNKNOWN = "unsupported call: mcp__markmark"


def after_the_guess(stamp_tool: str) -> list[dict[str, Any]]:
    """After-tool rules: report both answers, or the refusal of the other tool, else call it."""
    return [
        {"match": "stamped plum", "text": "Both answered: ", "quote_result": True},
        {"match": "cancelled", "text": "The stamp was refused: ", "quote_result": True},
        {"match": UNKNOWN, "tool": stamp_tool, "input": STAMP, "force": True},
    ]


@pytest.mark.parametrize("mode", ["default", "plan", "bypassPermissions"])
@pytest.mark.parametrize(
    ("deny", "stamp_server"), [("mcp__mark__mark", "mark"), ("mcp__mark", "spare")]
)
async def test_a_profile_mcp_deny_rule_is_kept_by_codex_in_every_mode(
    client: httpx.AsyncClient,
    make_codex_profile: CodexProfile,
    fake_model: FakeModelServer,
    tmp_path: Path,
    mode: str,
    deny: str,
    stamp_server: str,
) -> None:
    """A profile's ``mcp__mark__mark`` keeps that tool from Codex (its server's other tool
    still answers) and ``mcp__mark`` the whole server (another server still answers), also in
    full access, where Codex asks about no MCP call."""
    log, mark = mark_server(tmp_path)
    (tmp_path / "spare").mkdir()
    spare_log, spare = mark_server(tmp_path / "spare")
    servers = {"mark": {**mark, "args": [*mark["args"], "stamp"]}}
    servers["spare"] = {**spare, "args": [*spare["args"], "stamp"]}
    profile = await make_codex_profile(mcp_servers=servers, disallowed_tools=[deny])
    stamp_tool = f"mcp__{stamp_server}__stamp"
    rules = {"rules": [GUESS_MARK], "after_tool_rules": after_the_guess(stamp_tool)}
    fake_model.set_rules({**rules, "chunk_delay": 0.0})
    sid = await new_session(client, profile)
    r = await client.post(f"/api/sessions/{sid}/mode", json={"mode": mode, "confirm": True})
    assert r.status_code == 200, r.text
    await send(client, sid, "mark it")
    if mode == "default":
        # Codex asks about the other tool, never about the denied one.
        request = await the_pending_request(client, sid)
        assert (request["tool"], request["input"]) == (stamp_tool, STAMP), request
        await decide(client, request["id"], "allow_once")
    events = await wait_for_events(client, sid, count("turn_end"), timeout=TIMEOUT)

    assert ("mark", MARK_INPUT) not in mcp_calls(log) + mcp_calls(spare_log)
    # A server denied whole is not even started.
    assert log.exists() == (deny != "mcp__mark")
    asked = [row["tool"] for row in await permission_rows(client, sid)]
    assert asked == ([] if mode == "bypassPermissions" else [stamp_tool]), asked
    said = [a["text"] for a in of_kind(events, "assistant_message")]
    assert len(said) == 1 and UNKNOWN in said[0], said
    stamp_log = log if stamp_server == "mark" else spare_log
    if mode == "plan":
        # The app's plan mode refuses MCP calls: the other tool is reached only when allowed.
        assert said[0].startswith("The stamp was refused: "), said
        assert mcp_calls(stamp_log) == []
    else:
        assert said[0].startswith("Both answered: ") and "stamped plum" in said[0], said
        assert mcp_calls(stamp_log) == [("stamp", STAMP)]


@pytest.mark.conformance("images", backend="codex")
async def test_a_pasted_image_reaches_the_model_and_rewind_is_refused(
    client: httpx.AsyncClient, codex_profile: dict[str, Any], fake_model: FakeModelServer
) -> None:
    sid = await new_session(client, codex_profile)
    data = base64.b64encode(png()).decode()
    r = await client.post(
        f"/api/sessions/{sid}/messages",
        json={"text": "describe it", "images": [{"media_type": "image/png", "data": data}]},
    )
    assert r.status_code == 202, r.text
    events = await wait_for_events(client, sid, count("turn_end"), timeout=TIMEOUT)
    assert not of_kind(events, "error"), of_kind(events, "error")
    assert of_kind(events, "user_message")[0]["images"][0]["media_type"] == "image/png"
    assert of_kind(events, "turn_end")[0]["stop_reason"] == "end_turn"
    # Codex puts it beside the text of the same user message, as an input_image.
    (request,) = conversation_requests(fake_model)
    assert request_images(request) == [
        {"type": "input_image", "image_url": f"data:image/png;base64,{data}", "detail": "high"}
    ], request_images(request)
    (prompt,) = [i for i in request["body"]["input"] if "describe it" in str(i)]
    assert [p["type"] for p in prompt["content"]] == ["input_text", "input_image"], prompt
    assert await permission_rows(client, sid) == []

    # Only Claude Code can put files back as they were at a message.
    seq = of_kind(events, "user_message")[0]["seq"]
    r = await client.post(f"/api/sessions/{sid}/rewind", json={"event_seq": seq})
    assert r.status_code == 409 and "cannot restore files" in r.text, r.text
