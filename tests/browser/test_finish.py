"""Finishing a worktree session's work in Chromium: commit and merge from the Changes tab's
panel, with the user's checkout following its branch; a merge refused because it would
write over the user's ignored ``.env``, with the files and what to do; a renamed file
counted once on the panel as in the Changes list; only the strategies possible offered,
the others with why not (axe-checked, merged from the keyboard)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from playwright.async_api import Browser, expect

from tests.api.test_chat import make_profile
from tests.api.test_finish import make_repo, new_session
from tests.browser.conftest import TIMEOUT_MS, Browsing
from tests.browser.test_ui import axe_problems
from tests.conftest import TOKEN, LiveServer
from tests.services.git.conftest import commit_all, git, init_repo

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
    # Nothing left to commit: the button says so by its look too, not only to a click.
    commit = panel.get_by_role("button", name="Commit all changes")
    await expect(commit).to_be_disabled()
    assert await commit.evaluate("b => getComputedStyle(b).borderTopStyle") == "dashed"
    await expect(panel.locator("#finish-ahead")).to_have_text("1")
    await panel.get_by_role("button", name="Fast-forward").click()
    await expect(panel.locator("#finish-done")).to_contain_text("into main")
    await expect(panel.locator("#finish-merged")).to_be_visible()
    await expect(panel.get_by_role("button", name="Fast-forward")).to_have_count(0)

    assert git(repo, "log", "-1", "--format=%s", "main").strip() == "Say where the text comes from"
    assert (repo / "f.txt").read_text() == "from the session\n"
    assert git(repo, "status", "--porcelain") == ""
    assert browsing.log.page_errors == [] and browsing.log.console_errors == []
    assert await browsing.csp_violations() == []


async def test_a_merge_refused_for_the_users_ignored_files_says_what_to_do(
    browser: Browser, server: LiveServer, project_dir: Path, fake_claude: dict[str, Any]
) -> None:
    repo = init_repo(project_dir, {"f.txt": "one\n", ".gitignore": ".env\n"})
    (repo / ".env").write_text("the user's\n")
    async with server.client() as client:
        session = await new_session(client, await make_profile(client, repo, fake_claude), "Env")
    worktree = Path(session["worktree"]["path"])
    (worktree / ".gitignore").write_text("")
    (worktree / ".env").write_text("the agent's\n")
    git(worktree, "add", "-A")
    git(worktree, "commit", "-q", "-m", "env")
    # axe is injected as a script of its own, which the app's CSP rightly refuses; this
    # context alone ignores the policy (tests/browser/test_ui.py checks the pages keep it).
    context = await browser.new_context(bypass_csp=True)
    context.set_default_timeout(TIMEOUT_MS)
    page = await context.new_page()
    try:
        await page.goto(f"{server.url}/sessions/{session['id']}/changes?token={TOKEN}")
        said = page.locator("#changes-source")
        await expect(said).to_contain_text("Compared with main at")
        await expect(said).to_contain_text("(merge base)")
        await page.get_by_role("button", name="Fast-forward").click()
        error = page.get_by_role("alert").filter(has_text="git does not track there")
        await expect(error).to_be_visible()
        await expect(error).to_contain_text("would write over 1 file git does not track there")
        # The page comes back at the refusal, which has the focus: Tab goes on from there.
        await expect(page.locator("#finish-error")).to_be_focused()
        await expect(page.get_by_role("list", name="Files in the way")).to_have_text(".env")
        await expect(page.locator("#finish-untracked")).to_contain_text(
            "Move them out of that checkout"
        )
        assert await axe_problems(page) == []
    finally:
        await context.close()
    assert (repo / ".env").read_text() == "the user's\n"
    assert git(repo, "status", "--porcelain") == ""


async def axe_context(browser: Browser) -> Any:
    """A context whose pages axe can be injected into (it alone ignores the CSP)."""
    context = await browser.new_context(bypass_csp=True)
    context.set_default_timeout(TIMEOUT_MS)
    return context


async def test_a_renamed_file_counts_once_on_the_panel_and_in_the_changes_list(
    browser: Browser, server: LiveServer, project_dir: Path, fake_claude: dict[str, Any]
) -> None:
    lines = "".join(f"line {i}\n" for i in range(20))
    repo = init_repo(project_dir, {"f.txt": "one\n", "old.txt": lines})
    async with server.client() as client:
        session = await new_session(client, await make_profile(client, repo, fake_claude), "Mv")
    worktree = Path(session["worktree"]["path"])
    (worktree / "old.txt").rename(worktree / "new.txt")  # as ``mv`` does, nothing staged
    (worktree / "f.txt").write_text("edited\n")
    (worktree / "added.txt").write_text("added\n")
    context = await axe_context(browser)
    page = await context.new_page()
    try:
        await page.goto(f"{server.url}/sessions/{session['id']}/changes?token={TOKEN}")
        await expect(page.locator("#changes-summary")).to_contain_text("3 files changed")
        await expect(page.locator("#changes-files li")).to_have_count(3)
        await expect(page.locator("#changes-files")).to_contain_text("old.txt → new.txt")
        panel = page.locator("#finish")
        await expect(panel.locator("#finish-dirty")).to_have_text("3 uncommitted files")
        await panel.get_by_text("Discard…").click()
        await expect(panel.locator(".finish-discard")).to_contain_text("3 uncommitted files.")
        assert await axe_problems(page) == []
    finally:
        await context.close()


async def test_only_the_strategies_possible_are_offered_and_the_others_say_why(
    browser: Browser, server: LiveServer, project_dir: Path, fake_claude: dict[str, Any]
) -> None:
    repo = init_repo(project_dir, {"f.txt": "one\n"})
    async with server.client() as client:
        session = await new_session(client, await make_profile(client, repo, fake_claude), "Ff")
    worktree = Path(session["worktree"]["path"])
    (worktree / "notes.txt").write_text("from the session\n")
    commit_all(worktree, "notes")
    for i in range(2):  # main moves on meanwhile: it cannot simply move to the branch
        (repo / f"user-{i}.txt").write_text("the user's\n")
        commit_all(repo, f"user's {i}")
    context = await axe_context(browser)
    page = await context.new_page()
    try:
        await page.goto(f"{server.url}/sessions/{session['id']}/changes?token={TOKEN}")
        panel = page.locator("#finish")
        await expect(panel.locator(".finish-where")).to_contain_text("1 commit ahead, 2 behind")
        merge = panel.get_by_role("group", name="Merge into main")
        await expect(merge.get_by_role("button")).to_have_text(["Merge commit", "Squash"])
        await expect(merge.get_by_role("button", name="Fast-forward")).to_have_count(0)
        await expect(merge.get_by_role("list", name="Not possible now")).to_have_text(
            "Fast-forward: not possible, main has 2 commits this branch does not."
        )
        assert await axe_problems(page) == []

        await merge.get_by_role("button", name="Merge commit").focus()
        await page.keyboard.press("Enter")
        await expect(panel.locator("#finish-done")).to_contain_text("Merged")
        await expect(panel.locator("#finish-merged")).to_be_visible()
        await expect(panel.get_by_role("button", name="Merge commit")).to_have_count(0)
        await expect(panel.locator("#finish-not-possible")).to_have_count(0)
    finally:
        await context.close()
    assert (repo / "notes.txt").read_text() == "from the session\n"
    assert git(repo, "log", "-1", "--format=%p", "main").count(" ") == 1  # a merge commit
