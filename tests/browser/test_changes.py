"""The Changes tab in Chromium: from the session page to the files and their diffs."""

from __future__ import annotations

from pathlib import Path

import pytest
from playwright.async_api import expect

from tests.browser.conftest import Browsing
from tests.web.history.test_pages_changes import before_edits, store_edits
from tests.web.history.test_pages_history import new_profile, new_session

pytestmark = pytest.mark.browser


async def test_the_changes_tab_shows_each_file_and_its_diff(
    browsing: Browsing, project_dir: Path
) -> None:
    before_edits(project_dir)
    async with browsing.server.client() as client:
        sid = await new_session(client, await new_profile(client, project_dir), "edits")
    store_edits(browsing.server, sid, project_dir)
    page = browsing.page
    await browsing.sign_in(f"/sessions/{sid}")
    await page.get_by_role("link", name="Changes").click()
    await expect(page).to_have_url(f"{browsing.server.url}/sessions/{sid}/changes")
    await expect(page.locator("#changes-files li")).to_have_count(2)
    old = page.locator("section[data-path='old.py']")
    await expect(old.locator(".diff .add")).to_have_text("+a = 2")
    await page.get_by_role("link", name="split").click()
    await expect(old.locator("td.add")).to_have_text("a = 2")
    await expect(old.locator("td.del")).to_have_text("a = 1")
    await page.get_by_role("link", name="Conversation").click()
    await expect(page).to_have_url(f"{browsing.server.url}/sessions/{sid}")
    assert browsing.log.page_errors == [] and browsing.log.console_errors == []
    assert await browsing.csp_violations() == []
