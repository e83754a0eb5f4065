"""Pairing a phone in Chromium: the phone comes in through the HTTPS proxy standing in for
``tailscale serve`` (the remote host name resolved to loopback), the desktop is a second,
loopback browser context signed in with the token."""

from __future__ import annotations

import re
import time
from pathlib import Path
from typing import Any

import pytest
from playwright.async_api import BrowserContext, async_playwright, expect

from app.main import create_app
from app.settings import Settings
from app.web.access.devices import qr_svg
from tests.api.test_chat import make_session
from tests.browser.conftest import CHROMIUM, CHROMIUM_ARGS, CSP_PROBE, TIMEOUT_MS
from tests.browser.test_approvals import bash, pending_card, type_and_send
from tests.browser.test_axe_pages import axe_findings
from tests.conftest import TOKEN, LiveServer, write_scenario
from tests.fakes.tls_proxy import TEST_HOST

pytestmark = pytest.mark.browser


async def test_a_phone_pairs_once_the_desktop_allows_answers_and_is_unpaired(
    settings: Settings, tls_proxy: Any, project_dir: Path, fake_claude: dict[str, Any]
) -> None:
    if not Path(CHROMIUM).exists():
        pytest.skip(f"no Chromium at {CHROMIUM}")
    proxy = tls_proxy(0)
    origin = f"https://{TEST_HOST}:{proxy.port}"
    settings.remote_origin = origin
    server = LiveServer(create_app(settings))
    proxy.upstream_port = server.port
    await server.start()
    write_scenario(fake_claude["scenario"], [[bash("touch x"), {"text": "done"}]])
    try:
        async with server.client() as client, async_playwright() as pw:
            sid = await make_session(client, project_dir, fake_claude)
            args = [*CHROMIUM_ARGS, f"--host-resolver-rules=MAP {TEST_HOST} 127.0.0.1"]
            browser = await pw.chromium.launch(executable_path=CHROMIUM, args=args)

            async def context(**options: Any) -> BrowserContext:
                made = await browser.new_context(bypass_csp=True, **options)
                made.set_default_timeout(TIMEOUT_MS)
                await made.add_init_script(CSP_PROBE)
                return made

            phone_ctx = await context(
                viewport={"width": 390, "height": 800}, ignore_https_errors=True
            )
            desk_ctx = await context()
            phone, desk = await phone_ctx.new_page(), await desk_ctx.new_page()

            # No cookie: the pairing page, never the app.
            answer = await phone.goto(f"{origin}/sessions/{sid}")
            assert answer is not None and answer.status == 401
            await expect(phone).to_have_title("Pair this device · Angelia")

            await desk.goto(f"{server.url}/devices?token={TOKEN}")
            await desk.get_by_role("button", name="Pair a phone").click()
            url = (await desk.locator("#pair-url").text_content() or "").strip()
            assert re.fullmatch(rf"{re.escape(origin)}/pair#s=[\w-]{{43}}", url)
            # The QR on the page is that link, drawn on the server.
            drawn = await desk.locator(".pair-new__qr svg path.qrline").get_attribute("d")
            modules = re.search(r'class="qrline"[^>]* d="([^"]+)"', qr_svg(url))
            assert modules and drawn == modules.group(1)
            assert await axe_findings(desk) == []

            await phone.goto(url)
            await expect(phone.get_by_role("heading", level=1)).to_have_text("Pair this device")
            # The secret left the address bar (and this history entry) at once.
            assert phone.url == f"{origin}/pair"
            assert await axe_findings(phone) == []
            await phone.get_by_label("Name this device").fill("Test Phone")
            await phone.get_by_role("button", name="Pair").click()
            await expect(phone.locator("#pair-status")).to_contain_text("Waiting")
            assert await phone_ctx.cookies() == []

            # The desktop's page shows the question by itself.
            await expect(desk.get_by_text("Pair 'Test Phone'?")).to_be_visible()
            await desk.get_by_role("button", name="Allow").click()
            await expect(desk.locator("#devices-done")).to_have_text("The device is paired.")

            await phone.wait_for_url(re.compile(re.escape(origin) + r"/(?!pair)"))
            cookies = await phone_ctx.cookies()
            assert [(c["name"], c["secure"], c["httpOnly"], c["sameSite"]) for c in cookies] == [
                ("__Host-angelia_dev", True, True, "Strict")
            ]
            await desk.reload()
            await expect(desk.locator("#devices")).to_contain_text("Test Phone")

            # The phone answers an approval.
            await phone.goto(f"{origin}/sessions/{sid}")
            await type_and_send(phone, "run touch")
            card = pending_card(phone)
            await expect(card.locator("pre.cmd")).to_have_text("touch x")
            await card.get_by_role("button", name=re.compile("^Allow once")).click()
            await expect(phone.locator(".msg.assistant .md")).to_have_text(["done"])

            # Unpaired from the desktop: the phone's open stream ends, its next request is
            # refused.
            await desk.goto(f"{server.url}/devices")
            await desk.get_by_role("button", name="Unpair").click()
            revoked = time.monotonic()
            await expect(desk.locator("#devices-done")).to_have_text("That device is unpaired.")
            await expect(phone.locator("#link-banner")).to_contain_text(
                "no longer paired", timeout=5000
            )
            # The stream ended and the page saw why (link.js halts on the 401 that follows).
            assert time.monotonic() - revoked < 5
            answer = await phone.goto(f"{origin}/sessions/{sid}")
            assert answer is not None and answer.status == 401
            await expect(phone).to_have_title("Pair this device · Angelia")
            r = await client.get("/api/devices")
            assert r.json() == []
            await browser.close()
    finally:
        await server.stop()
