"""Question and plan cards in a real browser with the fake claude: the keyboard, a
refused answer, and the card folding to its answered line.

The same cards driven by the real Claude Code CLI are in tests/real/test_real_claude_browser.py.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import httpx
import pytest
from playwright.async_api import Page, expect

from tests.api.test_chat import make_session
from tests.browser.conftest import Browsing
from tests.browser.test_approvals import answers, bash, focus_page_body, pending_card
from tests.conftest import write_scenario
from tests.helpers import send
from tests.real.test_real_claude_questions import PLAN, QUESTIONS

pytestmark = pytest.mark.browser


ASK = {"tool": "AskUserQuestion", "input": {"questions": QUESTIONS}, "permission": True}
EXIT_PLAN = {"tool": "ExitPlanMode", "input": {"plan": PLAN}, "permission": True}


async def asking_page(
    browsing: Browsing,
    client: httpx.AsyncClient,
    project_dir: Path,
    fake: dict[str, Any],
    steps: list[dict[str, Any]],
) -> Page:
    """The page of a session whose agent's turn plays ``steps``, started and open."""
    write_scenario(fake["scenario"], [steps])
    sid = await make_session(client, project_dir, fake)
    await browsing.sign_in(f"/sessions/{sid}")
    await send(client, sid, "go")
    return browsing.page


async def test_enter_answers_neither_a_question_nor_a_plan(
    browsing: Browsing, client: httpx.AsyncClient, project_dir: Path, fake_claude: dict[str, Any]
) -> None:
    steps = [ASK, EXIT_PLAN, bash("echo hi"), {"text": "ok"}]
    page = await asking_page(browsing, client, project_dir, fake_claude, steps)

    card = pending_card(page)
    await expect(card).to_have_attribute("data-prompt", "question")
    await expect(card.locator(".perm-keys")).to_contain_text("Enter does not answer")
    await focus_page_body(page)
    await page.keyboard.press("Enter")
    # Enter in a field of the card does not send it with its first button either.
    await card.get_by_role("radio", name=re.compile("^SQLite")).check()
    await page.keyboard.press("Enter")
    await page.wait_for_timeout(300)
    await expect(card).to_have_attribute("data-prompt", "question")
    await expect(card.locator(".notice")).to_have_count(0)  # nothing was even sent
    assert answers(fake_claude) == []

    # Answering without the second question is refused on the card, nothing lost.
    await card.get_by_role("button", name="Answer").click()
    await expect(card.locator(".notice")).to_contain_text("Which extras?")
    await expect(card.get_by_role("radio", name=re.compile("^SQLite"))).to_be_checked()
    other = card.get_by_label(re.compile("Other: your own words"))
    await other.fill("Docs")
    await other.press("Enter")
    await page.wait_for_timeout(300)
    await expect(card.locator(".notice")).to_contain_text("Which extras?")
    await card.get_by_role("checkbox", name=re.compile("^Auth")).check()
    await card.get_by_role("button", name="Answer").click()
    decided = page.locator(".perm.decided .outcome")
    await expect(decided.first).to_have_text(
        "Answered · Which database should I use? SQLite · Which extras? Auth, Docs"
    )

    # The plan: Enter leaves it alone, Escape keeps planning.
    await expect(card).to_have_attribute("data-prompt", "plan")
    await expect(card.locator(".plan-md .md-h1")).to_have_text("Plan")
    await focus_page_body(page)
    await page.keyboard.press("Enter")
    await page.wait_for_timeout(300)
    await expect(card).to_have_attribute("data-prompt", "plan")
    await page.keyboard.press("Escape")
    await expect(decided.nth(1)).to_have_text("Kept planning")

    # A tool card still takes Enter.
    await expect(card.locator("pre.cmd")).to_have_text("echo hi")
    await focus_page_body(page)
    await page.keyboard.press("Enter")
    await expect(page.locator(".msg.assistant .md")).to_have_text("ok")
    assert [a["behavior"] for a in answers(fake_claude)] == ["allow", "deny", "allow"]
    assert browsing.log.page_errors == [] and await browsing.csp_violations() == []


async def test_a_question_answered_elsewhere_folds_to_its_answers(
    browsing: Browsing, client: httpx.AsyncClient, project_dir: Path, fake_claude: dict[str, Any]
) -> None:
    steps = [ASK, EXIT_PLAN, {"text": "ok"}]
    page = await asking_page(browsing, client, project_dir, fake_claude, steps)

    # Another tab (here the API) answers: this page folds the card from the stream.
    card = pending_card(page)
    await expect(card).to_have_attribute("data-prompt", "question")
    pid = await card.get_attribute("data-pid")
    chosen = {"Which database should I use?": "Postgres", "Which extras?": ["Search"]}
    r = await client.post(
        f"/api/permissions/{pid}/decision", json={"decision": "allow_once", "answers": chosen}
    )
    assert r.status_code == 200, r.text
    folded = page.locator(f"#perm-{pid}")
    await expect(folded).to_have_attribute("data-status", "decided")
    await expect(folded.locator(".outcome")).to_have_text(
        "Answered · Which database should I use? Postgres · Which extras? Search"
    )

    await expect(card).to_have_attribute("data-prompt", "plan")
    pid = await card.get_attribute("data-pid")
    r = await client.post(
        f"/api/permissions/{pid}/decision", json={"decision": "allow_once", "mode": "acceptEdits"}
    )
    assert r.status_code == 200, r.text
    folded = page.locator(f"#perm-{pid}")
    await expect(folded.locator(".outcome")).to_have_text(
        "Plan approved · continues in acceptEdits"
    )
    await expect(page.locator("#mode-select")).to_have_value("acceptEdits")
    await expect(page.locator(".msg.assistant .md")).to_have_text("ok")
    assert browsing.log.page_errors == [] and await browsing.csp_violations() == []
