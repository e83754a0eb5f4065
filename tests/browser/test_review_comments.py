"""Review comments in Chromium: on a worktree session's Changes tab, a comment written on a
diff line goes to the agent with "Send 1 comment to the agent", and the conversation
shows it as the user's message."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from playwright.async_api import expect

from tests.api.test_review_comments import edited_session, make_repo, prompts_sent
from tests.browser.conftest import Browsing

pytestmark = pytest.mark.browser

MESSAGE = "Review comments on your changes:\n\nf.txt:2\n> BETA\nKeep it lower case."


async def test_a_comment_on_a_line_goes_to_the_agent(
    browsing: Browsing, project_dir: Path, fake_claude: dict[str, Any]
) -> None:
    repo = make_repo(project_dir)
    async with browsing.server.client() as client:
        sid, _ = await edited_session(client, repo, fake_claude)
    page = browsing.page
    await browsing.sign_in(f"/sessions/{sid}/changes?view=split")
    panel = page.locator("#review-comments")
    await expect(panel.locator("#review-none")).to_be_visible()

    await page.get_by_role("button", name="Comment on f.txt line 2", exact=True).click()
    box = page.get_by_role("textbox", name="Comment on f.txt line 2")
    await box.fill("Keep it lower case.")
    await page.get_by_role("button", name="Save comment").click()
    # Under its line, and in the list below the diffs.
    note = page.locator("tr.review-under .review-note")
    await expect(note.locator(".review-body")).to_have_text("Keep it lower case.")
    await expect(note.locator(".review-state")).to_have_text("not sent yet")
    await expect(panel.locator(".review-quote")).to_have_text("BETA")
    # The diff's own text is untouched by the button.
    await expect(page.locator("td[data-side='new'][data-line='2']")).to_have_text("BETA")

    await page.get_by_role("button", name="Send 1 comment to the agent").click()
    await expect(page).to_have_url(f"{browsing.server.url}/sessions/{sid}")
    await expect(page.locator(".msg.user .bubble").last).to_contain_text(
        "Review comments on your changes:"
    )
    for _ in range(200):
        if MESSAGE in prompts_sent(fake_claude):
            break
        await asyncio.sleep(0.05)
    assert prompts_sent(fake_claude)[-1] == MESSAGE

    # Back on the tab, the comment is sent and shown so under its line.
    await page.goto(f"{browsing.server.url}/sessions/{sid}/changes?view=split")
    await expect(note.locator(".review-state")).to_have_text("sent · line unchanged")
    await expect(panel.locator("#review-send")).to_have_count(0)
    assert browsing.log.page_errors == [] and browsing.log.console_errors == []
    assert await browsing.csp_violations() == []


async def test_a_saved_comment_takes_the_focus(
    browsing: Browsing, project_dir: Path, fake_claude: dict[str, Any]
) -> None:
    repo = make_repo(project_dir)
    async with browsing.server.client() as client:
        sid, _ = await edited_session(client, repo, fake_claude)
    page = browsing.page
    await browsing.sign_in(f"/sessions/{sid}/changes?view=split")
    await page.get_by_role("button", name="Comment on f.txt line 2", exact=True).click()
    await page.keyboard.type("Keep it lower case.")
    await page.keyboard.press("Tab")
    await expect(page.get_by_role("button", name="Save comment")).to_be_focused()
    await page.keyboard.press("Enter")
    # The form goes; focus lands on what was saved, not on <body>.
    note = page.get_by_role("group", name="Comment on f.txt line 2")
    await expect(note).to_be_focused()
    await expect(note.locator(".review-body")).to_have_text("Keep it lower case.")
    await expect(page.locator("#review-comments .review-body")).to_have_text("Keep it lower case.")
    await expect(note).to_be_focused()
