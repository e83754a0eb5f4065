"""The first-run wizard in a real browser, from a fresh data dir to an answer in the chat."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from playwright.async_api import Browser, expect

from tests.browser.conftest import TIMEOUT_MS, Browsing
from tests.browser.test_approvals import type_and_send
from tests.browser.test_ui import axe_problems
from tests.conftest import TOKEN, LiveServer
from tests.web.profiles.test_pages_profiles import install_fake_claude, write_fake_claude

pytestmark = pytest.mark.browser
ANSWER = "hello from the wizard"


@pytest.fixture
def claude_on_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A fake ``claude`` first on PATH, set before the server starts: the wizard's
    profile has no command override, so the app finds and runs it by name."""
    return install_fake_claude(tmp_path, monkeypatch, ANSWER)


async def test_wizard_from_fresh_data_dir_to_first_answer(
    claude_on_path: Path, browsing: Browsing, project_dir: Path
) -> None:
    page = browsing.page
    await browsing.sign_in("/welcome")
    await page.goto(f"{browsing.server.url}/")
    await expect(page).to_have_url(f"{browsing.server.url}/welcome")

    # Step 1: the detected backend, with its version, is already chosen.
    step1 = page.locator("#step-backend")
    claude = step1.get_by_role("radio", name=re.compile("Claude Code"))
    await expect(claude).to_be_checked()
    await expect(step1.locator("label.option")).to_contain_text(["2.1.332"])
    await claude.check()

    # Step 2: browse from the parent folder into the project and use it.
    folder = page.get_by_label("Project folder")
    await folder.fill(str(project_dir.parent))
    await page.get_by_role("button", name="Browse…").click()
    picker = page.locator("#f-cwd-picker")
    await picker.get_by_role("button", name="project/", exact=True).click()
    await expect(picker.locator(".dirs-here code")).to_have_text(str(project_dir))
    await expect(picker.locator(".dirs-here")).to_be_focused()
    await picker.get_by_role("button", name="Use this folder").click()
    await expect(folder).to_have_value(str(project_dir))
    await expect(folder).to_be_focused()
    await expect(picker.locator(".dirs")).to_have_count(0)

    # Step 3: default is preselected; bypass asks for the typed word only when chosen.
    step3 = page.locator("#step-mode")
    await expect(step3.get_by_role("radio", name=re.compile("^default"))).to_be_checked()
    confirm = page.get_by_label(re.compile("To use bypassPermissions"))
    await expect(confirm).to_be_hidden()
    await step3.get_by_role("radio", name=re.compile("^bypassPermissions")).check()
    await expect(confirm).to_be_visible()
    await step3.get_by_role("radio", name=re.compile("^default")).check()
    await expect(confirm).to_be_hidden()
    create = page.get_by_label(re.compile("Create CLAUDE.md from a template"))
    await create.check()

    await page.get_by_role("button", name="Create the profile and start a session").click()
    await expect(page).to_have_url(re.compile(r"/sessions/[^/]+$"))
    await expect(page.locator("#transcript")).to_be_visible()
    await type_and_send(page, "hi")
    await expect(page.locator(".msg.assistant .md")).to_have_text(ANSWER)

    # The template followed the folder chosen in step 2.
    written = (project_dir / "CLAUDE.md").read_text()
    assert written.startswith("# project\n") and "## How to run the tests" in written
    assert browsing.log.page_errors == []
    assert browsing.log.console_errors == []
    assert await browsing.csp_violations() == []


async def test_profile_form_shows_only_what_the_backend_can_enforce(browsing: Browsing) -> None:
    page = browsing.page
    await browsing.sign_in("/profiles/new")
    backend = page.get_by_label("Backend", exact=True)
    mcp = page.get_by_label(re.compile("^MCP servers"))
    effort = page.get_by_label(re.compile("^Reasoning effort"))
    await expect(backend).to_have_value("claude")
    await expect(mcp).to_be_visible()
    # Claude Code takes --effort.
    await expect(effort).to_be_visible()
    await expect(page.get_by_label(re.compile("^Model"))).to_have_attribute("list", "models-claude")

    await backend.select_option("grok")
    # Grok Build starts per-session MCP servers, so the field stays.
    await expect(mcp).to_be_visible()
    await expect(mcp).to_be_enabled()
    await expect(effort).to_be_visible()
    # gemini takes neither an effort nor per-session MCP servers.
    await backend.select_option("gemini")
    await expect(effort).to_be_hidden()
    await backend.select_option("claude")
    await expect(mcp).to_be_visible()

    confirm = page.get_by_label(re.compile("To use bypassPermissions"))
    await expect(confirm).to_be_hidden()
    await page.get_by_label("Permission mode").select_option("bypassPermissions")
    await expect(confirm).to_be_visible()
    assert browsing.log.page_errors == []
    assert await browsing.csp_violations() == []


async def test_the_instructions_preview_follows_the_folder(
    claude_on_path: Path, browsing: Browsing, project_dir: Path
) -> None:
    page = browsing.page
    await browsing.sign_in("/welcome")
    text = page.get_by_label("Instructions", exact=True)
    folder = page.get_by_label("Project folder")
    await folder.fill(str(project_dir))
    await folder.press("Tab")
    await expect(text).to_have_value(re.compile(r"^# project\n"))
    # Text the user wrote stays as written when the folder changes again.
    await text.fill("# mine\n")
    await folder.fill(str(project_dir.parent))
    await folder.press("Tab")
    await expect(text).to_have_value("# mine\n")
    assert browsing.log.page_errors == []


async def test_no_agent_on_path_is_not_a_dead_end(
    no_agents_on_path: Path,
    browsing: Browsing,
    project_dir: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """With no agent on PATH, "I have it elsewhere" takes the path of one, checks it on
    the server, says what it found in a live region, and the profile runs that path."""
    agent = write_fake_claude(tmp_path / "opt", monkeypatch, ANSWER)
    page = browsing.page
    await browsing.sign_in("/welcome")
    step1 = page.locator("#step-backend")
    await expect(step1.locator(".notice")).to_contain_text("I have it elsewhere")
    await expect(step1.get_by_role("radio")).to_have_count(0)

    claude = step1.locator(".install-list li", has_text="Claude Code").first
    await claude.get_by_text("I have it elsewhere").click()
    field = page.get_by_label("Path to the Claude Code executable")
    result = claude.get_by_role("status")
    await expect(result).to_be_empty()

    # A relative path is refused with a message, and Enter checks rather than submits.
    await field.fill("claude")
    await field.press("Enter")
    await expect(result).to_contain_text("Give the full path, starting with /")
    await expect(page).to_have_url(f"{browsing.server.url}/welcome")
    await expect(field).to_be_focused()

    # The fake agent's path: its version is shown and it becomes the chosen agent.
    await field.fill(str(agent))
    check = claude.get_by_role("button", name="Check")
    await check.click()
    await expect(result).to_contain_text("It answers: 2.1.332 (Claude Code, fake)")
    await expect(result.locator(".field-error")).to_have_count(0)
    await expect(check).to_be_focused()
    chosen = step1.get_by_role("radio", name=re.compile("Use Claude Code from"))
    await expect(chosen).to_be_checked()
    await expect(page.get_by_label(re.compile("Create CLAUDE.md from a template"))).to_be_visible()

    await page.get_by_label("Project folder").fill(str(project_dir))
    await page.get_by_role("button", name="Create the profile and start a session").click()
    await expect(page).to_have_url(re.compile(r"/sessions/[^/]+$"))
    await type_and_send(page, "hi")
    await expect(page.locator(".msg.assistant .md")).to_have_text(ANSWER)

    async with browsing.server.client() as client:
        profiles = (await client.get("/api/profiles")).json()
    assert [(p["backend"], p["command"]) for p in profiles] == [("claude", [str(agent)])]
    await page.goto(f"{browsing.server.url}/profiles/{profiles[0]['id']}")
    status = page.locator("dd", has_text="Claude Code")
    await expect(status).to_contain_text("✓ found")
    await expect(status).to_contain_text("2.1.332 (Claude Code, fake)")
    assert browsing.log.page_errors == []
    assert browsing.log.console_errors == []
    assert await browsing.csp_violations() == []


async def test_the_elsewhere_field_passes_axe(
    no_agents_on_path: Path, browser: Browser, server: LiveServer, tmp_path: Path
) -> None:
    # axe is injected as a script, which the app's CSP refuses: this context ignores it.
    context = await browser.new_context(bypass_csp=True)
    context.set_default_timeout(TIMEOUT_MS)
    page = await context.new_page()
    try:
        await page.goto(f"{server.url}/welcome?token={TOKEN}")
        await page.evaluate("document.querySelectorAll('details').forEach(d => d.open = true)")
        field = page.get_by_label("Path to the Claude Code executable")
        await field.fill(str(tmp_path))
        await field.press("Enter")
        result = page.locator("#elsewhere-claude")
        await expect(result).to_contain_text("is a folder")
        assert await axe_problems(page) == []
    finally:
        await context.close()
