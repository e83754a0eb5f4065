"""iOS Safari has no notifications in a tab, only for a site added to the Home Screen:
there "Notify me" says how to add it, and elsewhere it asks for notifications as before."""

from __future__ import annotations

import pytest
from playwright.async_api import Browser, BrowserContext, expect

from tests.browser.conftest import TIMEOUT_MS
from tests.conftest import TOKEN, LiveServer

pytestmark = pytest.mark.browser

IPHONE_SAFARI = (
    "Mozilla/5.0 (iPhone; CPU iPhone OS 18_1 like Mac OS X) AppleWebKit/605.1.15 "
    "(KHTML, like Gecko) Version/18.1 Mobile/15E148 Safari/604.1"
)
# What Safari's tab offers: no Notification, and navigator.standalone false.
STANDALONE = "Object.defineProperty(navigator, 'standalone', {value: %s});"
SAFARI_TAB = "delete window.Notification; " + STANDALONE % "false"


async def phone(browser: Browser, init: str | None) -> BrowserContext:
    context = await browser.new_context(
        viewport={"width": 390, "height": 844}, user_agent=IPHONE_SAFARI, is_mobile=True
    )
    context.set_default_timeout(TIMEOUT_MS)
    if init:
        await context.add_init_script(init)
    return context


async def test_safari_on_an_iphone_is_told_to_add_the_home_screen_app(
    browser: Browser, server: LiveServer
) -> None:
    context = await phone(browser, SAFARI_TAB)
    page = await context.new_page()
    await page.goto(f"{server.url}/?token={TOKEN}")
    button = page.get_by_role("button", name="Notify me")
    hint = page.locator("#home-screen-hint")
    await expect(button).to_be_visible()
    await expect(button).to_have_attribute("aria-expanded", "false")
    await expect(hint).to_be_hidden()
    await button.click()
    await expect(hint).to_be_visible()
    await expect(hint).to_contain_text("Add to Home Screen")
    await expect(button).to_have_attribute("aria-expanded", "true")
    await button.click()
    await expect(hint).to_be_hidden()
    await context.close()


async def test_a_browser_with_notifications_asks_for_them_instead(
    browser: Browser, server: LiveServer
) -> None:
    # The same iPhone once opened from the Home Screen has Notification: no hint there, and
    # neither in a desktop browser.
    for init in (STANDALONE % "true", None):
        context = await phone(browser, init)
        page = await context.new_page()
        await page.goto(f"{server.url}/?token={TOKEN}")
        button = page.get_by_role("button", name="Notify me")
        await expect(button).to_be_visible()
        assert await button.get_attribute("aria-controls") is None
        await button.click()
        await expect(page.locator("#home-screen-hint")).to_be_hidden()
        await context.close()
