"""A phone away from the desk answers the real Claude Code's approval: it pairs through the
HTTPS proxy standing in for ``tailscale serve``, then takes the notification's two taps,
open the session and Allow once, at the narrowest phone width (360 px)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import httpx
import pytest
from playwright.async_api import expect

from app.settings import Settings
from tests.browser.phone import pair, phone_and_desk, remote_origin
from tests.browser.test_approvals import pending_card
from tests.browser.test_scroll import assert_fully_in_view, place
from tests.conftest import LiveServer
from tests.fakes.fake_model_server import FakeModelServer
from tests.helpers import count, of_kind, send, wait_for_events

pytestmark = [pytest.mark.real_cli, pytest.mark.browser]

ALLOW_ONCE = '.perm[data-status="pending"] button[value="allow_once"]'


@pytest.fixture
def proxy(tls_proxy: Any) -> Any:
    return tls_proxy(0)


@pytest.fixture
def settings(settings: Settings, proxy: Any) -> Settings:
    """This module's server knows the proxy's origin as its remote origin."""
    settings.remote_origin = remote_origin(proxy)
    return settings


async def test_a_paired_phone_answers_a_real_approval_in_two_taps(
    server: LiveServer,
    client: httpx.AsyncClient,
    claude_session: str,
    proxy: Any,
    project_dir: Path,
    fake_model: FakeModelServer,
) -> None:
    proxy.upstream_port = server.port
    origin = remote_origin(proxy)
    sid = claude_session
    async with phone_and_desk(origin, server.url, phone_width=360) as both:
        await pair(both, "Pocket")
        phone = both.phone

        # Started at the desk; the real CLI's Bash call waits for a decision.
        await send(client, sid, "run touch")
        await wait_for_events(client, sid, count("permission_request"), timeout=60)

        # Tap 1: the notification opens its session (the push's url). The button is there
        # to take, in view and under no bar, without a scroll.
        await phone.goto(f"{origin}/sessions/{sid}")
        card = pending_card(phone)
        await expect(card.locator("pre.cmd")).to_contain_text("touch")
        assert_fully_in_view(await place(phone, ALLOW_ONCE))
        assert await phone.evaluate("document.documentElement.scrollWidth <= innerWidth")

        # Tap 2.
        await card.get_by_role("button", name=re.compile("^Allow once")).tap()
        events = await wait_for_events(client, sid, count("turn_end"), timeout=60)
        [decision] = of_kind(events, "permission_decision")
        assert decision["decision"] == "allow_once", decision
        assert (project_dir / "made_by_fake.txt").exists()
        await expect(phone.locator(".msg.assistant .md").last).to_have_text("done", timeout=60_000)
        assert fake_model.message_requests(), "the real CLI never asked the model"
