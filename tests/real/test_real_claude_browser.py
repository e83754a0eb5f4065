"""The question, plan, subagent and model pieces of the chat page in a real browser,
driven by the real Claude Code CLI against the fake model server.

The browser fixtures (``browser``, ``browsing``) come from tests/browser/conftest.py, which
this folder's conftest imports so that they stand beside the CLI and fake model fixtures.
"""

from __future__ import annotations

import re
from pathlib import Path

import httpx
import pytest
from playwright.async_api import Page, expect

from tests.browser.conftest import Browsing
from tests.browser.test_approvals import pending_card, type_and_send
from tests.fakes.fake_model_server import FakeModelServer
from tests.helpers import count, of_kind, wait_for_events
from tests.real.conftest import ProfileFactory
from tests.real.test_real_claude_permissions import tool_results_sent_to_model
from tests.real.test_real_claude_questions import (
    QUESTIONS,
    plan_rules,
    start_plan_session,
)

pytestmark = [pytest.mark.real_cli, pytest.mark.browser]

ANSWERED = "Answered · Which database should I use? SQLite · Which extras? Auth, Search"


async def clean(browsing: Browsing) -> None:
    assert browsing.log.page_errors == [], browsing.log.page_errors
    assert await browsing.csp_violations() == []


async def open_session(browsing: Browsing, sid: str) -> Page:
    await browsing.sign_in(f"/sessions/{sid}")
    return browsing.page


async def test_answer_a_question(
    browsing: Browsing,
    client: httpx.AsyncClient,
    claude_session: str,
    fake_model: FakeModelServer,
) -> None:
    fake_model.set_rules(
        {
            "rules": [
                {"match": "ask me", "tool": "AskUserQuestion", "input": {"questions": QUESTIONS}}
            ],
            "after_tool": "thanks for answering",
        }
    )
    sid = claude_session
    page = await open_session(browsing, sid)
    await type_and_send(page, "ask me about the database")

    card = pending_card(page)
    await expect(card).to_have_attribute("data-prompt", "question", timeout=60_000)
    await expect(card.locator("legend")).to_have_text(
        ["Database Which database should I use?", "Extras Which extras?"]
    )
    await card.get_by_role("radio", name=re.compile("^SQLite")).click()
    await card.get_by_role("checkbox", name=re.compile("^Auth")).click()
    await card.get_by_role("checkbox", name=re.compile("^Search")).click()
    await card.get_by_role("button", name="Answer").click()

    outcome = page.locator(".perm.decided .outcome")
    await expect(outcome).to_have_text(ANSWERED)
    await expect(page.locator(".msg.assistant .md").last).to_have_text(
        "thanks for answering", timeout=60_000
    )
    [result] = tool_results_sent_to_model(fake_model)
    assert '"Which extras?"="Auth, Search"' in str(result["content"])
    await page.reload()
    await expect(outcome).to_have_text(ANSWERED)
    await clean(browsing)


async def test_approve_a_plan_with_auto_accept_edits(
    browsing: Browsing,
    client: httpx.AsyncClient,
    make_profile: ProfileFactory,
    claude_bin: Path,
    claude_env: dict[str, str],
    fake_model: FakeModelServer,
    project_dir: Path,
) -> None:
    fake_model.set_rules(plan_rules(project_dir))
    sid = await start_plan_session(client, make_profile, claude_bin, claude_env)
    page = await open_session(browsing, sid)
    await expect(page.locator("#mode-select")).to_have_value("plan")
    await type_and_send(page, "plan it")

    card = pending_card(page)
    await expect(card).to_have_attribute("data-prompt", "plan", timeout=60_000)
    await expect(card.locator(".plan-md .md-h1")).to_have_text("Plan")
    await expect(card.locator(".plan-md li")).to_have_text(["write hello.txt", "say done"])
    await card.get_by_role("button", name="Approve, auto-accept edits").click()

    await expect(page.locator(".perm.decided .outcome")).to_have_text(
        "Plan approved · continues in acceptEdits"
    )
    await expect(page.locator("#mode-select")).to_have_value("acceptEdits")
    await wait_for_events(client, sid, count("turn_end"), timeout=60)
    # Edits now run without asking.
    await type_and_send(page, "write it")
    await wait_for_events(client, sid, count("turn_end", 2), timeout=60)
    assert (project_dir / "hello.txt").read_text() == "hi\n"
    await expect(pending_card(page)).to_have_count(0)
    await page.reload()
    await expect(page.locator(".perm.decided .outcome")).to_have_text(
        "Plan approved · continues in acceptEdits"
    )
    await clean(browsing)


async def test_a_subagent_nests_under_its_call_with_its_status(
    browsing: Browsing,
    client: httpx.AsyncClient,
    claude_session: str,
    fake_model: FakeModelServer,
    project_dir: Path,
) -> None:
    agent = {
        "description": "Make a file",
        "prompt": "BASH: touch from_subagent.txt",
        "subagent_type": "general-purpose",
        "run_in_background": False,
    }
    fake_model.set_rules(
        {"rules": [{"match": "delegate", "tool": "Agent", "input": agent}], "after_tool": "done"}
    )
    sid = claude_session
    page = await open_session(browsing, sid)
    await type_and_send(page, "delegate the work")

    group = page.locator(".agent-call .subagent")
    await expect(group.locator(".subagent-name")).to_have_text(
        "Subagent · Make a file (general-purpose)", timeout=60_000
    )
    await expect(group).to_have_attribute("data-status", "running")
    card = pending_card(page)
    await expect(card.locator(".perm-asker")).to_have_text(
        "Asked by the subagent Make a file (general-purpose)", timeout=60_000
    )
    await expect(card.locator("pre.cmd")).to_have_text("touch from_subagent.txt")
    await card.get_by_role("button", name=re.compile("^Allow once")).click()

    await expect(group).to_have_attribute("data-status", "completed", timeout=60_000)
    await expect(group.locator(".subagent-status")).to_have_text(re.compile("^completed"))
    await wait_for_events(client, sid, count("turn_end"), timeout=60)
    assert (project_dir / "from_subagent.txt").exists()
    nested = group.locator(".subagent-log .tool-call[data-tcid]")
    await expect(nested.locator(".tool")).to_have_text(["Bash"])
    await expect(page.locator("#transcript > [data-parent]")).to_have_count(0)

    await page.reload()
    await expect(group).to_have_attribute("data-status", "completed")
    await expect(group).not_to_have_attribute("open", "")
    await group.locator("summary").first.click()
    await expect(nested.locator(".tool")).to_have_text(["Bash"])
    await expect(nested).to_have_attribute("data-state", "done")
    events = (await client.get(f"/api/sessions/{sid}/events")).json()["events"]
    assert of_kind(events, "task")[-1]["status"] == "completed"
    await clean(browsing)


async def test_switch_the_model(
    browsing: Browsing,
    client: httpx.AsyncClient,
    claude_session: str,
    fake_model: FakeModelServer,
) -> None:
    sid = claude_session
    page = await open_session(browsing, sid)
    await type_and_send(page, "first turn")
    await wait_for_events(client, sid, count("turn_end"), timeout=60)
    await page.reload()
    # Now the CLI's own list, with its descriptions.
    picker = page.get_by_label("Model", exact=True)
    await picker.select_option("haiku")
    await expect(page.locator(".model-line")).to_have_text("Model switched to haiku")
    await expect(page.locator("#model-hint")).not_to_be_empty()
    await expect(page.locator("#model-error")).to_be_hidden()
    await type_and_send(page, "second turn")
    await wait_for_events(client, sid, count("turn_end", 2), timeout=60)
    asked = [
        str(e["body"].get("model"))
        for e in fake_model.message_requests()
        if e["body"].get("tools") and "second turn" in str(e["body"].get("messages"))
    ]
    assert asked and all("haiku" in m for m in asked), asked
    await clean(browsing)
