"""Finishing a worktree session's work in Chromium: commit and merge from the Changes tab's
panel, with the user's checkout following its branch."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from playwright.async_api import expect

from tests.api.test_chat import make_profile
from tests.api.test_finish import make_repo, new_session
from tests.browser.conftest import Browsing
from tests.services.git.conftest import git

pytestmark = pytest.mark.browser


async def test_commit_and_merge_from_the_panel(
    browsing: Browsing, project_dir: Path, fake_claude: dict[str, Any]
) -> None:
    repo = make_repo(project_dir)
    async with browsing.server.client() as client:
        session = await new_session(client, await make_profile(client, repo, fake_claude), "Docs")
    sid, worktree = session["id"], Path(session["worktree"]["path"])
    (worktree / "f.txt").write_text("from the session\n")
    page = browsing.page
    await browsing.sign_in(f"/sessions/{sid}")
    await page.get_by_role("link", name="Changes").click()
    panel = page.locator("#finish")
    await expect(panel.get_by_role("heading", name="Finish this work")).to_be_visible()
    await expect(panel.locator("#finish-dirty")).to_have_text("1 uncommitted file")
    await expect(panel.get_by_label("Commit message")).to_have_value("Docs")

    await panel.get_by_label("Commit message").fill("Say where the text comes from")
    await panel.get_by_role("button", name="Commit all changes").click()
    await expect(panel.locator("#finish-done")).to_contain_text("Committed")
    await expect(panel.locator("#finish-ahead")).to_have_text("1")
    await panel.get_by_role("button", name="Fast-forward").click()
    await expect(panel.locator("#finish-done")).to_contain_text("into main")
    await expect(panel.locator("#finish-merged")).to_be_visible()
    await expect(panel.get_by_role("button", name="Fast-forward")).to_be_disabled()

    assert git(repo, "log", "-1", "--format=%s", "main").strip() == "Say where the text comes from"
    assert (repo / "f.txt").read_text() == "from the session\n"
    assert git(repo, "status", "--porcelain") == ""
    assert browsing.log.page_errors == [] and browsing.log.console_errors == []
    assert await browsing.csp_violations() == []
