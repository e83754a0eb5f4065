"""Playwright driving Debian's Chromium against a live server with the fake claude.

Each test gets a fresh browser context (its own cookies and storage). The page records
console errors, uncaught exceptions and Content-Security-Policy violations so a test
can assert that a page ran cleanly.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from playwright.async_api import Browser, ConsoleMessage, Error, Page, async_playwright

from tests.conftest import TOKEN, LiveServer

CHROMIUM = os.environ.get("ANGELIA_CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
TIMEOUT_MS = 10_000
# Runs before any page script; CSP does not apply to it, so it sees every violation.
CSP_PROBE = """
window.__cspViolations = [];
document.addEventListener("securitypolicyviolation", function (e) {
  window.__cspViolations.push(e.violatedDirective + " " + (e.blockedURI || "inline"));
});
"""

# The page has stopped changing by itself: loaded, fonts in, no htmx request in flight or
# swap settling (htmx marks the element with these classes meanwhile), no form of the
# page's own scripts waiting on a fetch (they mark it aria-busy), no transition or
# animation under way but the endless ones (a spinner), and nothing scrolled between two
# frames (a smooth scroll is no animation the page lists). A test measuring sizes, places
# or scroll positions waits for this after waiting for what the final state shows, so it
# never measures a page half-way through a swap. (The sidebar's badge poll runs every 3 s
# and takes a moment, so this comes true between polls.)
SETTLED = """async () => {
  const busy = () => document.readyState !== "complete" || document.fonts.status !== "loaded"
    || document.querySelector(
      ".htmx-request, .htmx-swapping, .htmx-settling, .htmx-added, [aria-busy=true]")
    || document.getAnimations().some(a => a.playState === "running"
      && a.effect.getComputedTiming().iterations !== Infinity);
  const scrolled = () => [scrollX, scrollY, ...[...document.querySelectorAll("*")]
    .filter(el => el.scrollTop || el.scrollLeft).map(el => el.scrollTop + "," + el.scrollLeft)]
    .join(" ");
  if (busy()) return false;
  const before = scrolled();
  for (let i = 0; i < 2; i++) await new Promise(done => requestAnimationFrame(done));
  return !busy() && scrolled() === before;
}"""


async def settled(page: Page) -> None:
    """Wait until the page is no longer swapping anything in (see ``SETTLED``)."""
    await page.wait_for_function(SETTLED, polling=50)


@dataclass
class PageLog:
    """What went wrong in the page, as the browser reported it."""

    console_errors: list[str] = field(default_factory=list)
    page_errors: list[str] = field(default_factory=list)

    def on_console(self, message: ConsoleMessage) -> None:
        if message.type == "error":
            self.console_errors.append(message.text)

    def on_page_error(self, error: Error) -> None:
        self.page_errors.append(str(error))


@dataclass
class Browsing:
    page: Page
    server: LiveServer
    log: PageLog

    async def sign_in(self, path: str = "/") -> None:
        """Open the printed-URL form of ``path``; the app sets its cookie and redirects."""
        sep = "&" if "?" in path else "?"
        await self.page.goto(f"{self.server.url}{path}{sep}token={TOKEN}")
        assert self.page.url == f"{self.server.url}{path}"

    async def csp_violations(self) -> list[str]:
        found = await self.page.evaluate("window.__cspViolations || []")
        return [str(v) for v in found]


@asynccontextmanager
async def axe_page(browser: Browser, width: int = 1200, height: int = 800) -> AsyncIterator[Page]:
    """A page in a context of its own for the axe-core checks. axe is injected as a script
    of its own, which the app's CSP rightly refuses; this context alone ignores the policy
    (the CSP probe still records what the page's own markup would break)."""
    context = await browser.new_context(
        viewport={"width": width, "height": height}, bypass_csp=True
    )
    context.set_default_timeout(TIMEOUT_MS)
    await context.add_init_script(CSP_PROBE)
    try:
        yield await context.new_page()
    finally:
        await context.close()


@pytest.fixture
def no_agents_on_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """PATH is one empty folder: no agent CLI is found by name (request it before the
    server, so the app never sees another PATH)."""
    empty = tmp_path / "empty-path"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))
    return empty


@pytest.fixture(scope="session")
async def shared_chromium() -> AsyncIterator[Browser]:
    """One Chromium for every browser test of this test process (they share its event
    loop); each test works in contexts of its own, which ``browser`` closes after it."""
    if not Path(CHROMIUM).exists():
        pytest.skip(
            f"no Chromium at {CHROMIUM} (install Debian's chromium or set ANGELIA_CHROMIUM)"
        )
    async with async_playwright() as pw:
        chromium = await pw.chromium.launch(
            executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS
        )
        try:
            yield chromium
        finally:
            await chromium.close()


@pytest.fixture
async def browser(shared_chromium: Browser) -> AsyncIterator[Browser]:
    before = set(shared_chromium.contexts)
    try:
        yield shared_chromium
    finally:
        # Pages a test left open would go on polling servers that are gone.
        for context in shared_chromium.contexts:
            if context not in before:
                await context.close()


@pytest.fixture
async def browsing(browser: Browser, server: LiveServer) -> AsyncIterator[Browsing]:
    context = await browser.new_context()
    context.set_default_timeout(TIMEOUT_MS)
    await context.add_init_script(CSP_PROBE)
    page = await context.new_page()
    log = PageLog()
    page.on("console", log.on_console)
    page.on("pageerror", log.on_page_error)
    try:
        yield Browsing(page=page, server=server, log=log)
    finally:
        # Closing first ends the page's event stream, so the server stops promptly.
        await context.close()
