"""Qwen Code (``qwen --acp``, 0.24.4) through Angelia's API, offline against the fake model.

What only qwen needs checking beyond the shared scenarios (test_real_scenarios.py and
test_real_acp_agents.py run it too): its "always" answers would be saved in its own
settings files, so the app keeps them as its own rule instead; it starts in a classifier
mode the app leaves at once; it reads inside its folder unasked, so deny rules for reads
are refused; and it reports the context size.
"""

# The fixtures are imported by name, which pytest needs and pyflakes calls redefinitions.
# ruff: noqa: F811

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.fakes.fake_model_server import FakeModelServer
from tests.helpers import count, of_kind, send, wait_for_events
from tests.real.common import new_chat as new_session_of
from tests.real.common import node22_bin  # noqa: F401 (qwen_env asks for it by name)
from tests.real.conftest import ProfileFactory
from tests.real.steps import (
    TIMEOUT,
    Agent,
    answer,
    main_requests,
    new_session,
    permission_rows,
    real_agent,
    the_pending_request,
    turn_of,
)

pytestmark = pytest.mark.real_cli


async def question(
    client: httpx.AsyncClient, sid: str, message: str
) -> tuple[dict[str, Any], list[tuple[str, str]]]:
    """Send ``message``; the question it raises and that question's (label, choice)s."""
    await send(client, sid, message)
    request = await the_pending_request(client, sid)
    return request, [(o["label"], o["choice"]) for o in request["options"]]


@pytest.fixture
def agent(request: pytest.FixtureRequest) -> Agent:
    """Qwen Code as a profile runs it (``agent_session`` makes a session of it)."""
    return real_agent(request, "qwen")


@pytest.mark.conformance("allow_always", backend="qwen")
async def test_allow_always_is_the_profiles_rule_and_qwen_saves_nothing(
    client: httpx.AsyncClient, make_profile: ProfileFactory, agent: Agent, project_dir: Path
) -> None:
    qwen = agent
    user_settings = qwen.home / ".qwen" / "settings.json"
    first = await new_session(client, make_profile, qwen)
    request, options = await question(client, first, "BASH: touch a.txt")
    # qwen's two "always" options (project, user) are one, named for what it does. In its
    # "auto" mode qwen would offer no "always" but "Switch to Default Mode and allow once":
    # the app put the session in default mode at start.
    assert options == [
        ("Allow always (a rule of this profile)", "allow_always"),
        ("Allow", "allow_once"),
        ("Reject", "deny"),
    ], options
    await answer(client, first, request["id"], "allow_always")
    assert (project_dir / "a.txt").exists()

    # Nothing was written into qwen's settings, the project's or the user's.
    assert not (project_dir / ".qwen").exists(), list((project_dir / ".qwen").rglob("*"))
    assert "permissions" not in json.loads(user_settings.read_text())
    profile_id = (await client.get(f"/api/sessions/{first}")).json()["profile_id"]
    rules = (await client.get(f"/api/profiles/{profile_id}/rules")).json()
    assert [(r["rule"], r["decision"]) for r in rules] == [("Bash(touch:*)", "allow")], rules

    # The profile's rule answers the next call: nobody is asked.
    (project_dir / "a.txt").unlink()
    await send(client, first, "BASH: touch a.txt")
    events = await wait_for_events(client, first, count("turn_end", 2), timeout=TIMEOUT)
    second = turn_of(events, 2)
    decisions = of_kind(second, "permission_decision")
    assert [(d["decision"], d["source"]) for d in decisions] == [("allow_once", "rule")]
    assert (project_dir / "a.txt").exists()

    # Without that rule another session's qwen asks again: it kept no allowance itself.
    r = await client.delete(f"/api/profiles/{profile_id}/rules/{rules[0]['id']}")
    assert r.status_code == 204, r.text
    other = await new_session(client, make_profile, qwen)
    await send(client, other, "BASH: touch b.txt")
    request = await the_pending_request(client, other)
    await answer(client, other, request["id"], "deny")
    assert not (project_dir / "b.txt").exists()
    assert [r["source"] for r in await permission_rows(client, other)] == ["user"]


async def test_a_turn_reports_the_context_size(
    client: httpx.AsyncClient, agent_session: str, fake_model: FakeModelServer
) -> None:
    sid = agent_session
    await send(client, sid, "say hi")
    events = await wait_for_events(client, sid, count("turn_end"), timeout=TIMEOUT)
    assert [a["text"] for a in of_kind(events, "assistant_message")] == ["hello from fake"]
    # The context size is the model's contextLimit from qwen's model list (200 000 for a
    # model it does not know), the used part what the last request took.
    usage = of_kind(events, "usage")
    assert usage and usage[-1]["size"] == 200_000 > usage[-1]["used"] > 0, usage
    end = of_kind(events, "turn_end")[0]
    assert (end["stop_reason"], end["is_error"]) == ("end_turn", False), end
    # Besides the turn, qwen sends its own side requests (a memory extraction, with tools).
    assert {r["body"]["model"] for r in main_requests(fake_model)} == {"fake-model"}


async def test_deny_rules_for_what_qwen_runs_unasked_are_refused(
    client: httpx.AsyncClient,
    make_profile: ProfileFactory,
    agent: Agent,
    project_dir: Path,
    fake_model: FakeModelServer,
) -> None:
    (project_dir / "notes.txt").write_text("apricot\n")
    read = {"file_path": str(project_dir / "notes.txt")}
    fake_model.set_rules({"rules": [{"match": "read it", "tool": "read_file", "input": read}]})
    profile = await make_profile(agent.backend, agent.command, agent.env)
    sid = await new_session_of(client, profile)
    await send(client, sid, "read it")
    events = await wait_for_events(client, sid, count("turn_end"), timeout=TIMEOUT)
    assert [r["output"] for r in of_kind(events, "tool_result")] == ["apricot\n"], events
    assert await permission_rows(client, sid) == []
    # qwen reads, greps and globs inside its folder without asking: such a rule could
    # never be applied, so it is refused rather than kept and ignored.
    for rule in ("Read(secrets/**)", "Grep", "Glob"):
        r = await client.post(
            f"/api/profiles/{profile['id']}/rules", json={"rule": rule, "decision": "deny"}
        )
        tool = rule.split("(")[0]
        assert r.status_code == 422 and f"runs {tool} without asking" in r.text, r.text
    body = {
        "name": "qwen refusing reads",
        "backend": "qwen",
        "cwd": str(project_dir),
        "command": agent.command,
        "disallowed_tools": ["Read"],
    }
    r = await client.post("/api/profiles", json=body)
    assert r.status_code == 422 and "Read" in r.text, r.text
    # What qwen asks about can still be denied.
    r = await client.post(
        f"/api/profiles/{profile['id']}/rules", json={"rule": "Bash(rm:*)", "decision": "deny"}
    )
    assert r.status_code == 201, r.text


@pytest.mark.conformance("plan_mode", backend="qwen")
async def test_approving_a_plan_goes_on_in_default_mode_not_in_qwens_auto(
    client: httpx.AsyncClient,
    make_profile: ProfileFactory,
    agent: Agent,
    project_dir: Path,
    fake_model: FakeModelServer,
) -> None:
    plan = {"plan": "1. touch planned.txt"}
    fake_model.set_rules({"rules": [{"match": "plan it", "tool": "exit_plan_mode", "input": plan}]})
    profile = await make_profile(agent.backend, agent.command, agent.env, permission_mode="plan")
    sid = await new_session_of(client, profile)
    await send(client, sid, "BASH: touch planned.txt")
    await wait_for_events(client, sid, count("turn_end"), timeout=TIMEOUT)
    # In plan mode qwen refuses the command itself: no card, no file.
    assert not (project_dir / "planned.txt").exists()
    assert await permission_rows(client, sid) == []

    request, options = await question(client, sid, "plan it")
    # Not "Yes, restore previous mode (auto)": this session came from qwen's auto mode.
    assert options == [
        ("Yes, and auto-accept edits", "allow_always"),
        ("Yes, and manually approve edits", "allow_once"),
        ("No, keep planning (esc)", "deny"),
    ], options
    events = await answer(client, sid, request["id"], "allow_once", turn=2)
    assert [m["mode"] for m in of_kind(turn_of(events, 2), "mode_changed")] == ["default"]

    # The approved plan's command now asks, as in default mode (auto would offer to
    # "Switch to Default Mode"), and a refusal keeps the folder as it was.
    request, options = await question(client, sid, "BASH: touch planned.txt")
    assert [choice for _, choice in options] == ["allow_always", "allow_once", "deny"]
    await answer(client, sid, request["id"], "deny", turn=3)
    assert not (project_dir / "planned.txt").exists()


async def test_a_folder_whose_qwen_settings_allow_tools_is_refused(
    client: httpx.AsyncClient, agent_session: str, project_dir: Path
) -> None:
    # A repository can ship its own .qwen/settings.json, which qwen obeys (folder trust is
    # off by default): this one would let `touch` run with no question reaching Angelia.
    (project_dir / ".qwen").mkdir()
    allow = {"permissions": {"allow": ["Bash(touch *)"]}, "ui": {"hideTips": True}}
    (project_dir / ".qwen" / "settings.json").write_text(json.dumps(allow))
    r = await client.post(f"/api/sessions/{agent_session}/messages", json={"text": "run touch"})
    assert r.status_code >= 400, r.text
    assert "sets permissions.allow" in r.text and "Remove those settings" in r.text, r.text
    assert not (project_dir / "made_by_fake.txt").exists()
    assert await permission_rows(client, agent_session) == []
