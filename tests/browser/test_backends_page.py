"""The Backends page's copy buttons copy a command that runs as pasted."""

from __future__ import annotations

import shlex

import pytest

from app.brains import available_backends
from tests.browser.conftest import Browsing

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
