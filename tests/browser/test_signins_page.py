"""The Signed-in browsers page and the signed-out page in Chromium: browsers by name with one
verb to sign each out, a phone's width, and what a signed-out browser is shown."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import pytest
from playwright.async_api import Browser, BrowserContext, Page, Response, expect

from tests.browser.conftest import CSP_PROBE, TIMEOUT_MS, settled
from tests.browser.test_ui import axe_problems
from tests.conftest import TOKEN, LiveServer

pytestmark = pytest.mark.browser

IPHONE = (
    "Mozilla/5.0 (iPhone; CPU iPhone OS 17_5 like Mac OS X) AppleWebKit/605.1.15 "
    "(KHTML, like Gecko) Version/17.5 Mobile/15E148 Safari/604.1"
)
# Markup in a User-Agent is text to the page, never markup.
FIREFOX = "Mozilla/5.0 (Windows NT 10.0; rv:127.0) Gecko/20100101 Firefox/127.0 <b>bold</b>"
CHROME = (
    "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) "
    "Chrome/126.0.0.0 Safari/537.36"
)


@asynccontextmanager
async def signed_in(
    browser: Browser, server: LiveServer, user_agent: str, width: int = 1200
) -> AsyncIterator[Page]:
    # axe is injected as a script of its own, which the app's CSP refuses; only these
    # contexts ignore the policy (the probe still reports what the page itself breaks).
    context: BrowserContext = await browser.new_context(
        user_agent=user_agent, viewport={"width": width, "height": 800}, bypass_csp=True
    )
    context.set_default_timeout(TIMEOUT_MS)
    await context.add_init_script(CSP_PROBE)
    page = await context.new_page()
    try:
        await page.goto(f"{server.url}/signins?token={TOKEN}")
        yield page
    finally:
        await context.close()


async def test_browsers_are_named_and_each_signs_out_with_the_same_verb(
    browser: Browser, server: LiveServer
) -> None:
    async with (
        signed_in(browser, server, IPHONE),
        signed_in(browser, server, FIREFOX),
        signed_in(browser, server, CHROME) as page,
    ):
        await page.reload()
        cards = page.locator("#signins li")
        await expect(cards).to_have_count(3)
        names = await page.locator("#signins .signin-name").all_inner_texts()
        assert sorted(n.replace("THIS BROWSER", "").strip() for n in names) == [
            "Chrome on Linux",
            "Firefox on Windows",
            "Safari on iPhone",
        ]
        mine = page.locator("#signins li.this-browser")
        await expect(mine).to_have_count(1)
        await expect(mine.locator(".signin-name")).to_contain_text("Chrome on Linux")
        await expect(mine.locator(".this-browser-badge")).to_have_text("this browser")
        # One verb on every card; this browser's says it is this browser.
        buttons = await page.locator("#signins button").all_inner_texts()
        assert sorted(buttons) == ["Sign out", "Sign out", "Sign out this browser"]
        await expect(mine.locator("button")).to_have_text("Sign out this browser")
        # When each signed in and was last seen: in words, the exact time as the title.
        for time in await page.locator("#signins time").all():
            assert await time.get_attribute("title")
            await expect(time).to_have_text(re.compile(r"^(just now|\d+ \w+ ago|in \d+ \w+)$"))
        # The raw User-Agent is there, as text.
        firefox = cards.filter(has_text="Firefox on Windows")
        await firefox.locator("summary").click()
        await expect(firefox.locator(".signin-ua code")).to_have_text(FIREFOX)
        assert await page.locator("#signins b").count() == 0
        assert await axe_problems(page) == []

        # Signing the iPhone out leaves two.
        iphone = cards.filter(has_text="Safari on iPhone")
        await iphone.get_by_role("button", name="Sign out").click()
        await expect(page.locator("#signins-done")).to_be_visible()
        await expect(cards).to_have_count(2)
        assert await page.evaluate("window.__cspViolations") == []


async def test_the_list_fits_a_phone(browser: Browser, server: LiveServer) -> None:
    async with (
        signed_in(browser, server, FIREFOX),
        signed_in(browser, server, CHROME, width=390) as page,
    ):
        await page.reload()
        await expect(page.locator("#signins li")).to_have_count(2)
        # Open the User-Agents too: long words must not widen the page.
        await page.evaluate("document.querySelectorAll('details').forEach(d => d.open = true)")
        await settled(page)
        assert await page.evaluate("document.documentElement.scrollWidth") <= 390
        buttons = page.locator("#signins button, #sign-out-others")
        assert await buttons.count() == 3
        for button in await buttons.all():
            await expect(button).to_be_visible()
            box = await button.bounding_box()
            assert box is not None and box["x"] >= 0 and box["x"] + box["width"] <= 390, box
        assert await axe_problems(page) == []


async def test_a_signed_out_browser_gets_a_styled_page_saying_how_to_sign_in(
    browser: Browser, server: LiveServer
) -> None:
    async with (
        signed_in(browser, server, CHROME) as keeper,
        signed_in(browser, server, IPHONE, width=390) as phone,
    ):
        await keeper.reload()
        iphone = keeper.locator("#signins li").filter(has_text="Safari on iPhone")
        await iphone.get_by_role("button", name="Sign out").click()
        await expect(keeper.locator("#signins-done")).to_be_visible()

        # Off the app first, so a poll the old page had in flight is not counted as this page's.
        await phone.goto("about:blank")
        loaded: list[Response] = []
        phone.on("response", lambda response: loaded.append(response))
        answer = await phone.goto(f"{server.url}/sessions")
        assert answer is not None and answer.status == 401
        await expect(phone.get_by_role("heading", level=1)).to_have_text(
            "This browser is not signed in"
        )
        await expect(phone.locator("main")).to_contain_text("angelia open")
        await expect(phone.locator("main")).to_contain_text("angelia serve")
        assert await phone.locator("a[href], form, script").count() == 0
        # Styled by the app's own stylesheet, which loads without a sign-in.
        sheets = [r for r in loaded if r.url.endswith("/static/app.css")]
        # 304: the browser kept it from an earlier page and the server confirmed it.
        assert sheets and all(r.status in (200, 304) for r in sheets)
        assert [r.url for r in loaded if r.status >= 400 and r.url != answer.url] == []
        padding = await phone.evaluate(
            "getComputedStyle(document.querySelector('.page-body')).padding"
        )
        assert padding not in ("", "0px")
        await settled(phone)
        assert await phone.evaluate("document.documentElement.scrollWidth") <= 390
        assert await phone.evaluate("window.__cspViolations") == []
        assert await axe_problems(phone) == []
