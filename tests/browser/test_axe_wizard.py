"""axe-core over the first-run wizard as a new user meets it: a fresh data dir with no
profile, so ``/`` leads to ``/welcome``, and each state its steps can show (the folder
picker open, bypassPermissions chosen, a refused form with its errors, an existing
instructions file with the difference to approve; with no agent on PATH, the install list
and a path checked by hand). No serious or critical finding, at a desktop and a phone
width, in light and in dark."""

from __future__ import annotations

import asyncio
import re
from pathlib import Path
from typing import Literal

import pytest
from playwright.async_api import Browser, Page, expect

from tests.browser.conftest import CSP_PROBE, TIMEOUT_MS
from tests.browser.test_axe_pages import SCHEMES, WIDTHS, axe_findings
from tests.conftest import TOKEN, LiveServer
from tests.web.profiles.test_pages_profiles import install_fake_claude

pytestmark = pytest.mark.browser

Scheme = Literal["light", "dark"]
SUBMIT = "Create the profile and start a session"


@pytest.fixture
def claude_on_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A fake ``claude`` first on PATH, set before the server starts (as a new user's)."""
    return install_fake_claude(tmp_path, monkeypatch, "hello")


async def findings(page: Page, state: str) -> list[str]:
    """axe's serious and critical findings in this state, every fold opened first (a
    closed details hides its text from the contrast check)."""
    await page.evaluate("document.querySelectorAll('details').forEach(d => d.open = true)")
    return [f"{state}: {p}" for p in await axe_findings(page)]


async def in_context(
    browser: Browser, width: int, scheme: Scheme, server: LiveServer
) -> tuple[Page, str]:
    """A signed-in page of its own at this width and scheme (axe needs the CSP bypassed)."""
    context = await browser.new_context(
        viewport={"width": width, "height": 800}, color_scheme=scheme, bypass_csp=True
    )
    context.set_default_timeout(TIMEOUT_MS)
    await context.add_init_script(CSP_PROBE)
    page = await context.new_page()
    await page.goto(f"{server.url}/signins?token={TOKEN}")
    return page, f"{width}px {scheme}"


async def walk_the_steps(
    browser: Browser, server: LiveServer, project_dir: Path, width: int, scheme: Scheme
) -> list[str]:
    page, where = await in_context(browser, width, scheme, server)
    problems: list[str] = []
    try:
        # No profile yet: the index sends a new user to the wizard.
        await page.goto(f"{server.url}/")
        await expect(page).to_have_url(f"{server.url}/welcome")
        step1 = page.locator("#step-backend")
        await expect(step1.get_by_role("radio", name=re.compile("Claude Code"))).to_be_checked()
        problems += await findings(page, f"{where} first step")

        # Step 2's folder picker, open on the parent of the project.
        folder = page.get_by_label("Project folder")
        await folder.fill(str(project_dir.parent))
        await page.get_by_role("button", name="Browse…").click()
        picker = page.locator("#f-cwd-picker")
        await expect(picker.get_by_role("button", name="project/", exact=True)).to_be_visible()
        problems += await findings(page, f"{where} folder picker")

        # Step 3 with bypassPermissions chosen: the typed confirmation shows.
        step3 = page.locator("#step-mode")
        await step3.get_by_role("radio", name=re.compile("^bypassPermissions")).check()
        await expect(page.get_by_label(re.compile("To use bypassPermissions"))).to_be_visible()
        problems += await findings(page, f"{where} bypass chosen")

        # Sent without the typed word and with a folder that is not there: refused.
        await folder.fill(str(project_dir / "not-there"))
        await page.get_by_role("button", name=SUBMIT).click()
        await expect(page.locator(".field-error").first).to_be_visible()
        problems += await findings(page, f"{where} refused")

        # An instructions file already in the folder: the difference, to approve first.
        await page.get_by_label("Project folder").fill(str(project_dir))
        await page.locator("#step-mode").get_by_role("radio", name=re.compile("^default")).check()
        await page.get_by_label(re.compile("Create CLAUDE.md from a template")).check()
        await page.get_by_role("button", name=SUBMIT).click()
        await expect(page.locator("#overwrite")).to_be_visible()
        problems += await findings(page, f"{where} instructions diff")
    finally:
        await page.context.close()
    return problems


async def test_the_wizard_from_a_fresh_data_dir_has_no_serious_axe_finding(
    claude_on_path: Path, browser: Browser, server: LiveServer, project_dir: Path
) -> None:
    (project_dir / "CLAUDE.md").write_text("# the user's own\n")
    problems: list[str] = []
    for width in WIDTHS:
        found = await asyncio.gather(
            *(walk_the_steps(browser, server, project_dir, width, s) for s in SCHEMES)
        )
        problems += [p for one in found for p in one]
    assert problems == [], "\n".join(problems)
    # Nothing above made a profile: every state was one before the first.
    async with server.client() as client:
        assert (await client.get("/api/profiles")).json() == []


async def no_agent_states(
    browser: Browser, server: LiveServer, tmp_path: Path, width: int, scheme: Scheme
) -> list[str]:
    page, where = await in_context(browser, width, scheme, server)
    problems: list[str] = []
    try:
        await page.goto(f"{server.url}/")
        await expect(page).to_have_url(f"{server.url}/welcome")
        await expect(page.locator("#step-backend .install-list")).to_be_visible()
        problems += await findings(page, f"{where} no agent")

        # A path checked by hand, with the check's answer in its live region.
        await page.evaluate("document.querySelectorAll('details').forEach(d => d.open = true)")
        field = page.get_by_label("Path to the Claude Code executable")
        await field.fill(str(tmp_path))
        await field.press("Enter")
        await expect(page.locator("#elsewhere-claude")).to_contain_text("is a folder")
        problems += await findings(page, f"{where} path checked")
    finally:
        await page.context.close()
    return problems


async def test_the_wizard_with_no_agent_on_path_has_no_serious_axe_finding(
    no_agents_on_path: Path, browser: Browser, server: LiveServer, tmp_path: Path
) -> None:
    problems: list[str] = []
    for width in WIDTHS:
        found = await asyncio.gather(
            *(no_agent_states(browser, server, tmp_path, width, s) for s in SCHEMES)
        )
        problems += [p for one in found for p in one]
    assert problems == [], "\n".join(problems)
