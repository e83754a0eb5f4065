"""The phone screenshots in docs/screenshots (see test_screenshots.py for how to take
them): pairing from the desktop, and a phone answering an approval through the HTTPS
proxy standing in for ``tailscale serve``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from playwright.async_api import expect

from app.settings import Settings
from tests.browser.demo import make_profile, make_session
from tests.browser.phone import (
    allow_on_desk,
    ask_from_phone,
    phone_and_desk,
    served_remotely,
    start_pairing,
)
from tests.browser.test_approvals import bash, pending_card
from tests.browser.test_screenshots import ONLY_WHEN_ASKED, shots  # noqa: F401 (a fixture)
from tests.conftest import write_scenario
from tests.helpers import count, send, wait_for_events

pytestmark = [pytest.mark.browser, ONLY_WHEN_ASKED]


async def test_phone_screenshots(
    settings: Settings,
    tls_proxy: Any,
    fake_claude: dict[str, Any],
    shots: tuple[Path, Path],  # noqa: F811
) -> None:
    out, cwd = shots
    write_scenario(
        fake_claude["scenario"],
        [[{"text": "Running the suite."}, bash("pytest -q tests/auth"), {"text": "All pass."}]],
    )
    async with (
        served_remotely(settings, tls_proxy) as (server, origin),
        server.client() as client,
        phone_and_desk(origin, server.url) as both,
    ):
        await both.desk.set_viewport_size({"width": 1200, "height": 800})
        url = await start_pairing(both)
        await both.desk.screenshot(path=str(out / "pair.png"))
        await ask_from_phone(both, url, "Pixel 9")
        await expect(both.desk.get_by_text("Pair 'Pixel 9'?")).to_be_visible()
        await both.desk.screenshot(path=str(out / "pair-allow.png"))
        await allow_on_desk(both, "Pixel 9")

        profile = await make_profile(
            client, cwd, name="app", command=fake_claude["command"], env=fake_claude["env"]
        )
        sid = await make_session(client, profile, "Check the token refresh")
        await send(client, sid, "Run the auth tests before I merge")
        await wait_for_events(client, sid, count("permission_request"))
        phone = both.phone
        await phone.set_viewport_size({"width": 390, "height": 844})
        await phone.goto(f"{origin}/sessions/{sid}")
        await expect(pending_card(phone)).to_be_visible()
        await phone.screenshot(path=str(out / "phone-approval.png"))
