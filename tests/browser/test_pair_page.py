"""The *Pair this device* page in Chromium, reached as a phone would: HTTPS through the
proxy standing in for ``tailscale serve``, the remote host name resolved to loopback."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from playwright.async_api import Response, async_playwright, expect

from app.main import create_app
from app.settings import Settings
from tests.browser.conftest import CHROMIUM, CHROMIUM_ARGS, CSP_PROBE, TIMEOUT_MS
from tests.browser.test_axe_pages import axe_findings
from tests.conftest import TOKEN, LiveServer
from tests.fakes.tls_proxy import TEST_HOST


async def test_a_phone_without_a_device_session_sees_how_to_pair(
    settings: Settings, tls_proxy: Any
) -> None:
    if not Path(CHROMIUM).exists():
        pytest.skip(f"no Chromium at {CHROMIUM}")
    proxy = tls_proxy(0)
    settings.remote_origin = f"https://{TEST_HOST}:{proxy.port}"
    server = LiveServer(create_app(settings))
    proxy.upstream_port = server.port
    await server.start()
    try:
        async with async_playwright() as pw:
            args = [*CHROMIUM_ARGS, f"--host-resolver-rules=MAP {TEST_HOST} 127.0.0.1"]
            browser = await pw.chromium.launch(executable_path=CHROMIUM, args=args)
            context = await browser.new_context(
                viewport={"width": 390, "height": 800}, ignore_https_errors=True, bypass_csp=True
            )
            context.set_default_timeout(TIMEOUT_MS)
            await context.add_init_script(CSP_PROBE)
            page = await context.new_page()
            loaded: list[Response] = []
            page.on("response", lambda response: loaded.append(response))
            # Even the token in the address is no way in from another device.
            answer = await page.goto(f"{settings.remote_origin}/sessions?token={TOKEN}")
            assert answer is not None and answer.status == 401
            await expect(page).to_have_title("Pair this device · Angelia")
            await expect(page.get_by_role("main")).to_contain_text("Devices")
            await expect(page.get_by_role("heading", level=1)).to_have_text("Pair this device")
            assert await page.locator("html").get_attribute("lang") == "en"
            assert await page.locator("a[href], form, script").count() == 0
            assert TOKEN not in await page.content()
            sheets = [r for r in loaded if r.url.endswith("/static/app.css")]
            assert sheets and all(r.status == 200 for r in sheets)
            assert await page.context.cookies() == []
            assert await axe_findings(page) == []
            await browser.close()
    finally:
        await server.stop()
