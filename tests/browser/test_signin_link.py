"""In Chromium: the page ``angelia serve`` opens the browser with (a 0600 file in the data
dir) takes it to the single-use link, which signs it in; the link does not sign in twice."""

from __future__ import annotations

from pathlib import Path

from playwright.async_api import Browser, expect

from app.web.access.guard import COOKIE_NAME
from tests.browser.conftest import TIMEOUT_MS
from tests.conftest import TOKEN
from tests.security.test_signin_links import opened_link, serve_with_fake_browser


async def test_the_opened_page_signs_chromium_in_once(browser: Browser, tmp_path: Path) -> None:
    server, argv_log = serve_with_fake_browser(tmp_path)
    try:
        page_file, link = opened_link(argv_log)
        first = await browser.new_context()
        first.set_default_timeout(TIMEOUT_MS)
        page = await first.new_page()
        await page.goto(page_file.as_uri())
        # Sent on to the link, signed in, and on to the app (its first-run page).
        await page.wait_for_url(f"{server.url}/welcome")
        await expect(page.get_by_role("link", name="Signed-in browsers")).to_be_visible()
        held = [c for c in await first.cookies() if c["name"] == COOKIE_NAME]
        assert len(held) == 1 and TOKEN not in held[0]["value"]
        assert TOKEN not in page.url and "code=" not in page.url
        await first.close()

        # Another browser opening the same page later is refused, with a page that says why.
        second = await browser.new_context()
        second.set_default_timeout(TIMEOUT_MS)
        page = await second.new_page()
        await page.goto(page_file.as_uri())
        await page.wait_for_url(link)
        await expect(page.get_by_role("heading", level=1)).to_have_text(
            "This link did not sign you in"
        )
        await expect(page.locator("main")).to_contain_text("angelia open")
        assert not await second.cookies()
        await second.close()
    finally:
        server.stop()
