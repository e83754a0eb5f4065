"""The Backends page's copy buttons copy a command that runs as pasted."""

from __future__ import annotations

import shlex
from pathlib import Path

import pytest
from playwright.async_api import expect

from app.brains import available_backends
from tests.browser.conftest import Browsing
from tests.web.profiles.test_pages_profiles import make_profile, write_fake_claude

pytestmark = pytest.mark.browser
INSTALLERS = {"npm", "pip", "pipx", "uv", "curl", "brew"}


async def test_every_copy_button_copies_a_command(browsing: Browsing) -> None:
    page = browsing.page
    await page.context.grant_permissions(
        ["clipboard-read", "clipboard-write"], origin=browsing.server.url
    )
    await browsing.sign_in("/backends")
    assert await page.locator("button.copy").count() == len(
        [b for b in available_backends().values() if b.executable]
    )
    for section in await page.locator("section.backend").all():
        button = section.locator("button.copy")
        if not await button.count():
            continue
        await button.click()
        copied = await page.evaluate("navigator.clipboard.readText()")
        words = shlex.split(copied)  # a bash syntax error (prose in parentheses) raises
        assert words and words[0] in INSTALLERS, copied
        assert "(" not in copied and "," not in copied, copied
        # What else to do is shown beside the command, not copied with it.
        for note in await section.locator(".install-note").all():
            assert (await note.inner_text()) not in copied
    # The generic ACP backend has nothing to install: its setup is a note, not a command.
    acp = page.locator("#backend-acp")
    await acp.locator(".install-note").wait_for()
    assert await acp.locator("button.copy").count() == 0
    gemini = page.locator("#backend-gemini")
    assert "GEMINI_API_KEY" in await gemini.locator(".install-note").inner_text()
    assert browsing.log.page_errors == []


async def test_a_profile_command_off_path_shows_as_found(
    no_agents_on_path: Path,
    browsing: Browsing,
    project_dir: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """An agent installed off PATH and named by a profile's command is found, with its
    version, where the pages used to say "not found on this machine's PATH"."""
    agent = write_fake_claude(tmp_path / "opt", monkeypatch, "unused")
    async with browsing.server.client() as client:
        profile_id = await make_profile(client, project_dir, name="elsewhere", command=[str(agent)])
    page = browsing.page
    await browsing.sign_in("/backends")
    status = page.locator("#backend-claude .backend-status")
    await expect(status).to_contain_text("✓ found")
    await expect(status).to_contain_text(str(agent))
    await expect(status).to_contain_text("2.1.332 (Claude Code, fake)")
    await expect(status).to_contain_text("the command of the profile “elsewhere”")
    await expect(status).not_to_contain_text("not found")
    # A backend no profile names is still looked for on PATH, and is not there.
    await expect(page.locator("#backend-gemini .backend-status")).to_contain_text("✗ not found")

    await page.goto(f"{browsing.server.url}/profiles/{profile_id}")
    backend = page.locator("dd", has_text="Claude Code")
    await expect(backend).to_contain_text("✓ found")
    await expect(backend).to_contain_text("2.1.332 (Claude Code, fake)")
    await expect(backend).to_contain_text("this profile's command")
    await expect(page.locator("main")).not_to_contain_text("not found")
    await expect(page.locator("main button.copy")).to_have_count(0)
    assert browsing.log.page_errors == []
