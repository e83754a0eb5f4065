"""A phone that comes in through the HTTPS proxy standing in for ``tailscale serve`` (the
remote host name resolved to loopback), beside a desktop browser on loopback, and the
pairing that lets the phone in. Shared by the fake-CLI and the real-CLI pairing tests."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from playwright.async_api import Browser, BrowserContext, Page, async_playwright, expect

from app.main import create_app
from app.settings import Settings
from tests.browser.conftest import CHROMIUM, CHROMIUM_ARGS, CSP_PROBE, TIMEOUT_MS
from tests.conftest import TOKEN, LiveServer
from tests.fakes.tls_proxy import TEST_HOST


@dataclass
class PhoneAndDesk:
    browser: Browser
    phone: Page
    desk: Page
    origin: str  # the remote origin the phone uses
    local: str  # the loopback URL the desktop uses

    @property
    def phone_context(self) -> BrowserContext:
        return self.phone.context


def remote_origin(proxy: Any) -> str:
    return f"https://{TEST_HOST}:{proxy.port}"


@asynccontextmanager
async def served_remotely(
    settings: Settings, tls_proxy: Any
) -> AsyncIterator[tuple[LiveServer, str]]:
    """A server whose remote origin is a new proxy in front of it: (server, origin)."""
    proxy = tls_proxy(0)
    origin = remote_origin(proxy)
    settings.remote_origin = origin
    server = LiveServer(create_app(settings))
    proxy.upstream_port = server.port
    await server.start()
    try:
        yield server, origin
    finally:
        await server.stop()


@asynccontextmanager
async def phone_and_desk(
    origin: str, local: str, phone_width: int = 390
) -> AsyncIterator[PhoneAndDesk]:
    if not Path(CHROMIUM).exists():
        pytest.skip(f"no Chromium at {CHROMIUM}")
    args = [*CHROMIUM_ARGS, f"--host-resolver-rules=MAP {TEST_HOST} 127.0.0.1"]
    async with async_playwright() as pw:
        browser = await pw.chromium.launch(executable_path=CHROMIUM, args=args)

        async def context(**options: Any) -> BrowserContext:
            made = await browser.new_context(bypass_csp=True, **options)
            made.set_default_timeout(TIMEOUT_MS)
            await made.add_init_script(CSP_PROBE)
            return made

        phone_ctx = await context(
            viewport={"width": phone_width, "height": 800},
            is_mobile=True,
            has_touch=True,
            ignore_https_errors=True,
        )
        desk_ctx = await context()
        try:
            yield PhoneAndDesk(
                browser, await phone_ctx.new_page(), await desk_ctx.new_page(), origin, local
            )
        finally:
            await browser.close()


async def start_pairing(both: PhoneAndDesk) -> str:
    """The desktop's "Pair a phone": the link its QR code holds."""
    desk = both.desk
    await desk.goto(f"{both.local}/devices?token={TOKEN}")
    await desk.get_by_role("button", name="Pair a phone").click()
    url = (await desk.locator("#pair-url").text_content() or "").strip()
    assert re.fullmatch(rf"{re.escape(both.origin)}/pair#s=[\w-]{{43}}", url), url
    return url


async def ask_from_phone(both: PhoneAndDesk, url: str, name: str) -> None:
    """The phone opens the QR's link, names itself and asks; it waits for the desktop."""
    phone = both.phone
    await phone.goto(url)
    await expect(phone.get_by_role("heading", level=1)).to_have_text("Pair this device")
    # The secret left the address bar (and this history entry) at once.
    assert phone.url == f"{both.origin}/pair"
    await phone.get_by_label("Name this device").fill(name)
    await phone.get_by_role("button", name="Pair").click()
    await expect(phone.locator("#pair-status")).to_contain_text("Waiting")


async def allow_on_desk(both: PhoneAndDesk, name: str) -> None:
    """The desktop's page shows the question by itself; Allow lets the phone in."""
    desk = both.desk
    await expect(desk.get_by_text(f"Pair '{name}'?")).to_be_visible()
    await desk.get_by_role("button", name="Allow").click()
    await expect(desk.locator("#devices-done")).to_have_text("The device is paired.")
    await both.phone.wait_for_url(re.compile(re.escape(both.origin) + r"/(?!pair)"))


async def pair(both: PhoneAndDesk, name: str = "Test Phone") -> None:
    await ask_from_phone(both, await start_pairing(both), name)
    await allow_on_desk(both, name)
