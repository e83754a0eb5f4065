"""A worktree session once its worktree is gone, in Chromium: discarded from its Changes tab,
the page says so in a banner with the date, the composer is off with the reason, the
Changes tab keeps the session's own recorded changes, and axe-core finds nothing serious;
one merged and cleaned up from the worktrees page says "cleaned up"."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from playwright.async_api import Browser, expect

from tests.api.test_chat import make_profile
from tests.api.test_finish import commit_edit, make_repo, new_session
from tests.browser.conftest import CSP_PROBE, TIMEOUT_MS, Browsing
from tests.browser.test_ui import axe_problems
from tests.conftest import TOKEN
from tests.helpers import count, send, wait_for_events

pytestmark = pytest.mark.browser


async def test_a_discarded_session_is_read_only_and_says_why(
    browser: Browser, browsing: Browsing, project_dir: Path, fake_claude: dict[str, Any]
) -> None:
    repo = make_repo(project_dir)
    async with browsing.server.client() as client:
        pid = await make_profile(client, repo, fake_claude)
        gone = await new_session(client, pid, "Try an idea")
        kept = await new_session(client, pid, "Tidy the docs")
        for session in (gone, kept):
            await send(client, session["id"], "hello")
            await wait_for_events(client, session["id"], count("turn_end"))
        await commit_edit(client, gone, "idea.txt", "an idea\n")
        await commit_edit(client, kept, "docs.txt", "tidy\n")
        r = await client.post(f"/api/sessions/{kept['id']}/merge", json={"strategy": "ff"})
        assert r.status_code == 200, r.text
    sid, branch = gone["id"], gone["worktree"]["branch"]
    page = browsing.page

    await browsing.sign_in(f"/sessions/{sid}/changes")
    await page.locator("summary", has_text="Discard…").click()
    await page.get_by_label("Yes, lose that work").check()
    await page.get_by_role("button", name="Discard the worktree").click()
    recorded = page.get_by_role("status").filter(has_text="was discarded on")
    await expect(recorded).to_contain_text("as they were recorded then")
    await expect(page.locator("#changes-files")).to_contain_text("idea.txt")
    await expect(page.locator("body")).not_to_contain_text("changed outside")

    await page.get_by_role("link", name="Conversation").click()
    banner = page.get_by_role("status").filter(has_text="was discarded on")
    await expect(banner).to_have_attribute("id", "closed-banner")
    await expect(banner).to_contain_text(
        f"This session's worktree (branch {branch}) was discarded on"
    )
    await expect(banner).to_contain_text("read-only")
    box = page.get_by_role("textbox", name="Message to the agent")
    await expect(box).to_be_disabled()
    await expect(page.locator("#composer").get_by_role("button", name="Send")).to_be_disabled()
    await expect(page.locator("#composer-off-why")).to_contain_text(
        "sending a message is not possible"
    )
    await expect(page.locator("#mentions")).to_have_count(0)
    await expect(page.locator("form[action$='/fork']")).to_have_count(0)
    assert browsing.log.page_errors == [] and browsing.log.console_errors == []
    assert await browsing.csp_violations() == []

    # The worktrees page cleans up the merged one; its page says "cleaned up".
    await page.goto(f"{browsing.server.url}/worktrees")
    await page.get_by_role("button", name="Clean up merged and orphaned").click()
    await expect(page.locator("#cleanup-done")).to_contain_text("Cleaned up 1 worktree")
    await page.goto(f"{browsing.server.url}/sessions/{kept['id']}")
    banner = page.locator("#closed-banner")
    await expect(banner).to_contain_text("was merged into main and its worktree cleaned up on")
    await expect(banner).not_to_contain_text("discarded")
    await expect(page.get_by_role("textbox", name="Message to the agent")).to_be_disabled()

    # axe runs as a script of its own, which the app's CSP refuses: a context that
    # ignores the policy, as in test_ui.
    context = await browser.new_context(bypass_csp=True)
    context.set_default_timeout(TIMEOUT_MS)
    await context.add_init_script(CSP_PROBE)
    checked = await context.new_page()
    problems: list[str] = []
    try:
        for path in (f"/sessions/{sid}", f"/sessions/{sid}/changes", f"/sessions/{kept['id']}"):
            await checked.goto(f"{browsing.server.url}{path}?token={TOKEN}")
            await expect(checked.locator("main")).to_be_visible()
            for scheme in ("light", "dark"):
                await checked.emulate_media(color_scheme=scheme)
                problems += [f"{path} ({scheme}): {p}" for p in await axe_problems(checked)]
    finally:
        await context.close()
    assert problems == []
