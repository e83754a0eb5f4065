"""Chromium, signed in to a real ``angelia serve`` on its per-install loopback address,
visits another server on 127.0.0.1: that server must receive nothing it could replay."""

from __future__ import annotations

import ipaddress
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import urlsplit

import httpx
import pytest
from playwright.async_api import Browser

from app.web.access.guard import COOKIE_NAME
from tests.browser.conftest import TIMEOUT_MS, Browsing
from tests.conftest import TOKEN
from tests.faults._support import ServerProcess

PAGE = b"""<!doctype html>
<html><head><link rel="icon" href="/favicon.ico"><title>dev server</title></head>
<body><p>another local server</p><img id="pixel" src="/pixel.png" alt="pixel"></body></html>
"""


class Recorder(BaseHTTPRequestHandler):
    """A dev server on 127.0.0.1 that keeps every request's path and Cookie header."""

    seen: list[tuple[str, str | None]]

    def do_GET(self) -> None:  # noqa: N802 (the http.server name)
        self.seen.append((self.path, self.headers.get("Cookie")))
        body = PAGE if self.path == "/" else b"\x89PNG\r\n\x1a\n"
        self.send_response(200)
        self.send_header("Content-Type", "text/html" if self.path == "/" else "image/png")
        self.send_header("Content-Length", str(len(body)))
        # A cookie of its own, so there are Cookie headers to replay.
        self.send_header("Set-Cookie", "devserver=1; Path=/")
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.fixture
def foreign() -> Iterator[tuple[str, list[tuple[str, str | None]]]]:
    seen: list[tuple[str, str | None]] = []
    handler = type("Handler", (Recorder,), {"seen": seen})
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}", seen
    finally:
        httpd.shutdown()
        httpd.server_close()


@pytest.fixture
def angelia(tmp_path: Path) -> Iterator[ServerProcess]:
    server = ServerProcess(tmp_path / "data", tmp_path, host=None).start()
    try:
        yield server
    finally:
        server.stop()


async def test_another_loopback_server_gets_no_angelia_cookie(
    browser: Browser,
    angelia: ServerProcess,
    foreign: tuple[str, list[tuple[str, str | None]]],
) -> None:
    address = ipaddress.IPv4Address(urlsplit(angelia.url).hostname)
    assert address in ipaddress.IPv4Network("127.0.0.0/8") and str(address) != "127.0.0.1"
    assert angelia.signin_url == f"{angelia.url}/?token={TOKEN}"

    context = await browser.new_context()
    context.set_default_timeout(TIMEOUT_MS)
    try:
        page = await context.new_page()
        await page.goto(angelia.signin_url)
        # Signed in, the token gone from the address bar (a first run goes on to /welcome).
        assert page.url.startswith(f"{angelia.url}/") and TOKEN not in page.url
        held = [c for c in await context.cookies() if c["name"] == COOKIE_NAME]
        assert len(held) == 1 and held[0]["domain"] == str(address)
        secret = held[0]["value"]
        assert secret and secret != TOKEN and TOKEN not in secret

        # The page, its <img> and a favicon, twice (the second time with the dev server's
        # own cookie set), as a dev server the agent started would be visited.
        foreign_url, seen = foreign
        for _ in range(2):
            async with page.expect_response(lambda r: r.url.endswith("/pixel.png")):
                await page.goto(foreign_url + "/")
            await page.evaluate("fetch('/favicon.ico').then(r => r.blob())")
        assert {"/", "/pixel.png", "/favicon.ico"} <= {path for path, _ in seen}
        # Angelia still works for this browser.
        await page.goto(f"{angelia.url}/signins")
        assert await page.locator(".this-browser-badge").count() == 1
    finally:
        await context.close()

    received = [cookie for _, cookie in seen if cookie]
    assert received, "the dev server's own cookie should have come back"
    for cookie in received:
        assert COOKIE_NAME not in cookie and secret not in cookie and TOKEN not in cookie
    # Whatever the dev server got, none of it opens Angelia.
    async with httpx.AsyncClient(base_url=angelia.url, timeout=30) as replay:
        for cookie in received:
            r = await replay.get("/api/sessions", headers={"Cookie": cookie})
            assert r.status_code in (401, 403), cookie
            r = await replay.get("/", headers={"Cookie": cookie})
            assert r.status_code in (401, 403), cookie


async def test_the_signed_in_browsers_page_signs_this_browser_out(browsing: Browsing) -> None:
    page = browsing.page
    await browsing.sign_in("/sessions")
    await page.get_by_role("link", name="Signed-in browsers").click()
    await page.wait_for_url(f"{browsing.server.url}/signins")
    assert await page.locator("#signins li").count() == 1
    assert await page.locator(".this-browser-badge").count() == 1
    await page.get_by_role("button", name="Sign out this browser").click()
    await page.locator("#signed-out").wait_for()
    assert not await page.context.cookies()
    response = await page.goto(f"{browsing.server.url}/sessions")
    assert response is not None and response.status == 401
    assert not browsing.log.page_errors and not await browsing.csp_violations()
