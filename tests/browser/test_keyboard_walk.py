"""The whole loop by keyboard alone, in Chromium: start a worktree session from the sidebar,
send a message, allow a command, answer a question, send a message into the running turn,
switch the mode, comment on a line of the Changes tab and merge. Only keys are pressed
(Tab, Shift+Tab, Enter, Space, arrows and the documented shortcuts); after every live
update the focus is still somewhere a user can see, never dropped on <body>."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from playwright.async_api import Page, expect

from tests.api.test_chat import make_profile
from tests.browser.conftest import Browsing
from tests.browser.test_approvals import answers, bash, pending_card
from tests.browser.test_prompts import ASK
from tests.browser.test_queue import prompts_sent
from tests.conftest import write_scenario
from tests.services.git.conftest import git, init_repo

pytestmark = pytest.mark.browser

STEER = "look at the tests first"
BASE = "alpha\nbeta\ngamma\n"
EDITED = "alpha\nBETA\ngamma\n"
# What waits on the agent, a git command or a page load gets longer on a loaded machine.
SLOW = 20_000

# "" when the focused element shows a focus ring, else what is focused instead.
FOCUS_SHOWN = """() => {
  const el = document.activeElement;
  if (!el || el === document.body || el === document.documentElement) return "<body>";
  const s = getComputedStyle(el);
  const outline = s.outlineStyle !== "none" && parseFloat(s.outlineWidth) > 0;
  if (outline || s.boxShadow !== "none") return "";
  return "no focus ring on " + el.outerHTML.slice(0, 160);
}"""


async def assert_focus_shown(page: Page, after: str) -> None:
    """After a live update: the focus is on an element, and that element shows it."""
    problem = await page.evaluate(FOCUS_SHOWN)
    assert problem == "", f"after {after}: {problem}"


async def focused_is(page: Page, predicate: str) -> bool:
    return bool(await page.evaluate(f"(el => !!el && ({predicate}))(document.activeElement)"))


async def tab_until(page: Page, predicate: str, *, back: bool = False, most: int = 120) -> None:
    """Press Tab (Shift+Tab with ``back``) until the focused element ``el`` satisfies the
    JavaScript ``predicate``: what a keyboard user does to reach a control."""
    key = "Shift+Tab" if back else "Tab"
    for _ in range(most):
        if await focused_is(page, predicate):
            return
        await page.keyboard.press(key)
    raise AssertionError(f"not reachable with {key}: {predicate}")


def named(text: str) -> str:
    """A predicate: the focused element's accessible text (label or content) is ``text``."""
    quoted = repr(text)
    return (
        f"((el.getAttribute('aria-label') || el.textContent || '').trim() === {quoted}"
        f" || (el.labels && [...el.labels].some(l => l.textContent.trim().startsWith({quoted}))))"
    )


async def test_the_whole_loop_by_keyboard(
    browsing: Browsing, project_dir: Path, fake_claude: dict[str, Any], tmp_path: Path
) -> None:
    repo = init_repo(project_dir, {"f.txt": BASE})
    hold = tmp_path / "let-the-turn-end"
    write_scenario(
        fake_claude["scenario"],
        [
            [
                {"text": "Let me look."},
                bash("echo hi"),
                ASK,
                {"text": "Writing it now."},
                {"until_file": str(hold), "timeout": 60},
                {"text": "First pass done."},
            ],
            [{"text": "Tests first, then."}],
        ],
    )
    async with browsing.server.client() as client:
        await make_profile(client, repo, fake_claude)
    page = browsing.page
    await browsing.sign_in("/board")

    # Start a session: the sidebar's "+ New session", then the form, by keys.
    await tab_until(page, "el.classList.contains('new-session')")
    await page.keyboard.press("Enter")
    await expect(page.locator("#start-heading")).to_be_visible()
    await tab_until(page, "el.name === 'title'")
    await page.keyboard.type("Keyboard walk")
    await page.keyboard.press("Tab")
    assert await focused_is(page, "el.name === 'worktree'")
    await page.keyboard.press("ArrowDown")
    await expect(page.locator("select[name=worktree]")).to_have_value("yes")
    await tab_until(page, named("Start session"))
    await page.keyboard.press("Enter")
    await expect(page).to_have_url(re.compile(r"/sessions/[^/]+$"), timeout=SLOW)
    sid = page.url.rsplit("/", 1)[1]
    row = page.locator(f"nav.sidebar li[data-nav-sid='{sid}']")
    await expect(row).to_have_count(1)

    # Send a message from the message box.
    await tab_until(page, "el.id === 'composer-text'")
    await page.keyboard.type("add a greeting")
    await page.keyboard.press("Enter")
    await expect(page.locator("#composer-text")).to_have_value("")

    # A command to allow: the jump key reaches the card, Enter allows it.
    card = pending_card(page)
    await expect(card.locator("pre.cmd")).to_have_text("echo hi", timeout=SLOW)
    await assert_focus_shown(page, "the command's card arrived")
    await page.keyboard.press("Alt+Shift+J")
    await expect(card.get_by_role("button", name=re.compile("^Allow once"))).to_be_focused()
    await page.keyboard.press("Enter")

    # A question: the next card arrives where the first was answered.
    await expect(card).to_have_attribute("data-prompt", "question", timeout=SLOW)
    await assert_focus_shown(page, "the question's card arrived")
    await page.keyboard.press("Alt+Shift+J")
    await tab_until(page, "el.type === 'radio' && " + named("SQLite"))
    await page.keyboard.press("Space")
    await expect(card.get_by_role("radio", name=re.compile("^SQLite"))).to_be_checked()
    await tab_until(page, "el.type === 'checkbox' && " + named("Auth"))
    await page.keyboard.press("Space")
    await expect(card.get_by_role("checkbox", name=re.compile("^Auth"))).to_be_checked()
    await tab_until(page, named("Answer"))
    await page.keyboard.press("Enter")
    await expect(page.locator(".perm.decided .outcome").last).to_have_text(
        "Answered · Which database should I use? SQLite · Which extras? Auth"
    )
    writing = page.locator(".msg.assistant", has_text="Writing it now.")
    await expect(writing).to_be_visible(timeout=SLOW)
    await assert_focus_shown(page, "the question was answered")
    assert [a["behavior"] for a in answers(fake_claude)] == ["allow", "allow"]

    # Send a message into the running turn: the choice beside the box, by arrows.
    await tab_until(page, "el.id === 'steer-queue'")
    await page.keyboard.press("ArrowRight")
    await expect(page.get_by_role("radio", name="Send now")).to_be_checked()
    await tab_until(page, "el.id === 'composer-text'", back=True)
    await page.keyboard.type(STEER)
    await page.keyboard.press("Enter")
    sent = page.locator(".msg.user", has_text=STEER)
    await expect(sent.locator(".steer-label")).to_have_text("sent into the running turn")
    await assert_focus_shown(page, "the message went into the turn")
    hold.write_text("")
    await expect(page.locator(".steer-landed")).to_contain_text(STEER, timeout=SLOW)
    await expect(page.locator(".msg.assistant", has_text="Tests first, then.")).to_be_visible()
    await expect(page.locator("#steer-choice")).to_be_hidden()
    dot = row.locator(f"[data-status-of='{sid}']")
    await expect(dot).not_to_have_class(re.compile("dot-working"))
    await assert_focus_shown(page, "the turn ended and the sidebar changed")
    assert prompts_sent(fake_claude) == ["add a greeting", STEER]

    # Switch the mode in the header.
    await tab_until(page, "el.id === 'mode-select'", back=True)
    await page.keyboard.press("ArrowDown")
    await expect(page.locator("#mode-select")).to_have_value("acceptEdits")
    await page.keyboard.press("Tab")
    await page.keyboard.press("Enter")
    await expect(page.locator("#mode-form")).to_have_attribute("data-mode", "acceptEdits")
    await expect(page.locator("#mode-select")).to_be_focused()
    await assert_focus_shown(page, "the mode switched")

    # What the agent changed in its worktree; the Changes tab, a comment on a line.
    async with browsing.server.client() as client:
        session = (await client.get(f"/api/sessions/{sid}")).json()
    (Path(session["worktree"]["path"]) / "f.txt").write_text(EDITED)
    await tab_until(page, "el.textContent.trim() === 'Changes'")
    await page.keyboard.press("Enter")
    await expect(page).to_have_url(f"{browsing.server.url}/sessions/{sid}/changes")
    await tab_until(page, named("Comment on f.txt line 2"))
    await page.keyboard.press("Enter")
    await expect(page.get_by_role("textbox", name="Comment on f.txt line 2")).to_be_focused()
    await page.keyboard.type("Keep it lower case.")
    await page.keyboard.press("Tab")
    await expect(page.get_by_role("button", name="Save comment")).to_be_focused()
    await page.keyboard.press("Enter")
    note = page.get_by_role("group", name="Comment on f.txt line 2")
    await expect(note.locator(".review-body")).to_have_text("Keep it lower case.")
    await assert_focus_shown(page, "the comment was saved")

    # Finish: commit, then merge into main.
    panel = page.locator("#finish")
    await tab_until(page, named("Commit all changes"))
    await page.keyboard.press("Enter")
    done = panel.locator("#finish-done")
    await expect(done).to_contain_text("Committed", timeout=SLOW)
    # The form comes back to this page with its outcome, which takes the focus (and is
    # said); the next Tab goes on from there.
    await expect(done).to_be_focused()
    await assert_focus_shown(page, "the commit")
    await tab_until(page, named("Fast-forward"))
    await page.keyboard.press("Enter")
    await expect(done).to_contain_text("into main", timeout=SLOW)
    await expect(done).to_be_focused()
    await assert_focus_shown(page, "the merge")
    assert (repo / "f.txt").read_text() == EDITED
    assert git(repo, "status", "--porcelain") == ""
    assert browsing.log.page_errors == [] and await browsing.csp_violations() == []
