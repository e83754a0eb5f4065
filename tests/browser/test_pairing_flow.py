"""Pairing a phone in Chromium: the phone comes in through the HTTPS proxy standing in for
``tailscale serve`` (the remote host name resolved to loopback), the desktop is a second,
loopback browser context signed in with the token (tests/browser/phone.py)."""

from __future__ import annotations

import re
import time
from pathlib import Path
from typing import Any

import pytest
from playwright.async_api import expect

from app.settings import Settings
from app.web.access.devices import qr_svg
from tests.api.test_chat import make_session
from tests.browser.phone import (
    allow_on_desk,
    ask_from_phone,
    phone_and_desk,
    served_remotely,
    start_pairing,
)
from tests.browser.test_approvals import bash, pending_card, type_and_send
from tests.browser.test_axe_pages import axe_findings
from tests.conftest import write_scenario

pytestmark = pytest.mark.browser


async def test_a_phone_pairs_once_the_desktop_allows_answers_and_is_unpaired(
    settings: Settings, tls_proxy: Any, project_dir: Path, fake_claude: dict[str, Any]
) -> None:
    write_scenario(fake_claude["scenario"], [[bash("touch x"), {"text": "done"}]])
    async with (
        served_remotely(settings, tls_proxy) as (server, origin),
        server.client() as client,
        phone_and_desk(origin, server.url) as both,
    ):
        sid = await make_session(client, project_dir, fake_claude)
        phone, desk, phone_ctx = both.phone, both.desk, both.phone_context

        # No cookie: the pairing page, never the app.
        answer = await phone.goto(f"{origin}/sessions/{sid}")
        assert answer is not None and answer.status == 401
        await expect(phone).to_have_title("Pair this device · Angelia")

        url = await start_pairing(both)
        # The QR on the page is that link, drawn on the server.
        drawn = await desk.locator(".pair-new__qr svg path.qrline").get_attribute("d")
        modules = re.search(r'class="qrline"[^>]* d="([^"]+)"', qr_svg(url))
        assert modules and drawn == modules.group(1)
        assert await axe_findings(desk) == []

        await ask_from_phone(both, url, "Test Phone")
        assert await axe_findings(phone) == []
        assert await phone_ctx.cookies() == []
        await allow_on_desk(both, "Test Phone")
        cookies = await phone_ctx.cookies()
        assert [(c["name"], c["secure"], c["httpOnly"], c["sameSite"]) for c in cookies] == [
            ("__Host-angelia_device", True, True, "Strict")
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
