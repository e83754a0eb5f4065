"""The plan-limit meter and a scheduled continue in a real browser: the meter appears when
a turn stops on the limit, the continue is scheduled and cancelled from the keyboard,
stays after a reload, shows its time in the browser's zone, is listed on the board, and
fits a phone's width above the composer."""

from __future__ import annotations

import os
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
import pytest

# anyio is a pytest plugin, so pytest rewrites its modules as they load, and Python
# 3.11.7's parser can fail doing that deep in a request's stack (CPython gh-106905): the
# first static file the server sends breaks off. Loaded at collection, it loads shallow.
from anyio import open_file  # noqa: F401
from playwright.async_api import Browser, Page, expect

from tests.api.test_chat import make_session
from tests.api.test_scheduled_continue import stopped_turn
from tests.browser.conftest import Browsing, settled
from tests.browser.test_approvals import type_and_send
from tests.conftest import TOKEN, LiveServer, write_scenario
from tests.helpers import count, send, wait_for_events

pytestmark = pytest.mark.browser

PHONE = {"width": 360, "height": 740}


async def local_clock(page: Page, utc: datetime) -> str:
    """The reset time as the browser shows it in its own zone: hours and minutes when it
    falls today there, with the day in front when it does not (a run near midnight)."""
    script = """(iso) => {
        const when = new Date(iso);
        const time = when.toLocaleTimeString(undefined, {hour: '2-digit', minute: '2-digit'});
        if (when.toDateString() === new Date().toDateString()) return time;
        const day = {weekday: 'short', day: 'numeric', month: 'short'};
        return when.toLocaleDateString(undefined, day) + ' ' + time;
    }"""
    shown: str = await page.evaluate(script, utc.isoformat())
    return shown


async def test_meter_and_a_scheduled_continue_from_the_keyboard(
    browsing: Browsing, client: httpx.AsyncClient, project_dir: Path, fake_claude: dict[str, Any]
) -> None:
    # An hour ahead: the bare time when that is still today in the browser's zone, the
    # day and the time when the hour crosses midnight.
    reset = int(time.time()) + 3600
    write_scenario(fake_claude["scenario"], [[{"text": "all fine"}], stopped_turn(reset)])
    sid = await make_session(client, project_dir, fake_claude)
    page = browsing.page
    await browsing.sign_in(f"/sessions/{sid}")
    panel = page.locator("#limits")

    # A backend that reported no limit: no meter at all.
    await type_and_send(page, "start")
    await expect(page.locator(".msg.assistant").last).to_contain_text("all fine")
    await expect(panel).to_be_hidden()

    # The turn that stops on the limit brings the meter and the offer, without a reload.
    await type_and_send(page, "go on")
    await expect(panel).to_be_visible()
    meters = panel.locator(".limit-meter")
    await expect(meters).to_have_count(2)
    await expect(meters.nth(0)).to_contain_text("5-hour limit")
    await expect(meters.nth(0)).to_contain_text("100% used")
    await expect(meters.nth(1)).to_contain_text("weekly limit")
    await expect(meters.nth(1)).to_contain_text("42% used")
    await expect(panel.locator("#limit-stopped")).to_contain_text("The 5-hour limit stopped")
    when = datetime.fromtimestamp(reset, UTC)
    shown = await local_clock(page, when)
    offer = panel.locator("#limit-continue")
    await expect(offer).to_have_text(f"Continue automatically at {shown}")

    # Keyboard only: the message box, a message of one's own, Enter.
    box = panel.get_by_label("Message to send")
    await expect(box).to_have_value("continue")
    await box.focus()
    await box.fill("carry on with the tests")
    await page.keyboard.press("Enter")
    scheduled = panel.locator("#limit-scheduled")
    await expect(scheduled.locator(".limit-message")).to_have_text("carry on with the tests")
    await expect(scheduled.locator(".clock")).to_have_text(shown)
    row = (await client.get(f"/api/sessions/{sid}/resume-at")).json()
    assert row["state"] == "pending" and row["message"] == "carry on with the tests"
    assert datetime.fromisoformat(row["at"]) == when

    # Stored: a reload shows it again; the board lists the session as scheduled.
    await page.reload()
    await expect(page.locator("#limit-scheduled")).to_contain_text("carry on with the tests")
    await page.goto(f"{browsing.server.url}/board")
    card = page.locator(f"#board-{sid}")
    await expect(card.locator(".board-scheduled")).to_have_text(f"scheduled: continue at {shown}")
    await page.go_back()

    cancel = page.locator("#limit-cancel")
    await cancel.focus()
    await page.keyboard.press("Enter")
    await expect(page.locator("#limit-scheduled")).to_have_count(0)
    await expect(page.locator("#limit-continue")).to_be_visible()
    assert (await client.get(f"/api/sessions/{sid}/resume-at")).json()["state"] == "cancelled"
    await page.goto(f"{browsing.server.url}/board")
    await expect(page.locator(f"#board-{sid} .board-scheduled")).to_have_count(0)

    assert browsing.log.console_errors == [] and browsing.log.page_errors == []
    assert await browsing.csp_violations() == []


async def stopped_session(
    client: httpx.AsyncClient,
    project_dir: Path,
    fake: dict[str, Any],
    *,
    resets_in: int = 3600,
    ask: str = "go",
    schedule: bool = False,
) -> str:
    """A session whose one turn stopped on the 5-hour limit; ``schedule``: set to continue."""
    write_scenario(fake["scenario"], [stopped_turn(int(time.time()) + resets_in)])
    sid = await make_session(client, project_dir, fake)
    await send(client, sid, ask)
    await wait_for_events(client, sid, count("turn_end"))
    if schedule:
        r = await client.post(f"/api/sessions/{sid}/resume-at", json={})
        assert r.status_code == 201, r.text
    return sid


async def test_a_refusal_is_said_in_the_panel(
    browsing: Browsing, client: httpx.AsyncClient, project_dir: Path, fake_claude: dict[str, Any]
) -> None:
    sid = await stopped_session(client, project_dir, fake_claude)
    page = browsing.page
    await browsing.sign_in(f"/sessions/{sid}")
    await page.locator("#limit-message").fill("   ")
    # Past the browser's own check for an empty box: the server's word is what shows.
    await page.locator("#limit-message").evaluate("(el) => el.removeAttribute('required')")
    await page.locator("#limit-continue").click()
    await expect(page.locator("#limit-error")).to_have_text(
        "message: is empty; write what to send (e.g. continue)"
    )
    assert (await client.get(f"/api/sessions/{sid}/resume-at")).json() is None


async def test_the_page_follows_the_continue_as_it_goes(
    browsing: Browsing, client: httpx.AsyncClient, project_dir: Path, fake_claude: dict[str, Any]
) -> None:
    # Late enough to find it still waiting on a busy machine, soon enough to see it go.
    sid = await stopped_session(client, project_dir, fake_claude, resets_in=8, schedule=True)
    page = browsing.page
    await browsing.sign_in(f"/sessions/{sid}")
    await expect(page.locator("#limit-scheduled")).to_be_visible()
    # At the reset the message goes as the user's own, and the panel lets go of it.
    await expect(page.locator(".msg.user").last).to_contain_text("continue", timeout=20_000)
    await expect(page.locator(".msg.assistant").last).to_contain_text("echo: continue")
    await expect(page.locator("#limit-scheduled")).to_have_count(0)
    await expect(page.locator("#limit-continue")).to_have_count(0)
    assert browsing.log.console_errors == [] and browsing.log.page_errors == []


async def fits_above_the_composer(page: Page) -> None:
    """The panel whole, inside the screen's width, and not under the composer."""
    await settled(page)
    panel = await page.locator("#limits").bounding_box()
    composer = await page.locator("#composer").bounding_box()
    assert panel is not None and composer is not None
    assert panel["x"] >= 0 and panel["x"] + panel["width"] <= PHONE["width"]
    assert panel["y"] >= 0 and panel["y"] + panel["height"] <= composer["y"] + 0.5
    assert await page.evaluate("document.documentElement.scrollWidth") <= PHONE["width"]


async def test_the_panel_fits_a_phone_above_the_composer(
    browser: Browser,
    server: LiveServer,
    client: httpx.AsyncClient,
    project_dir: Path,
    fake_claude: dict[str, Any],
) -> None:
    sid = await stopped_session(client, project_dir, fake_claude)
    context = await browser.new_context(viewport=PHONE)
    page = await context.new_page()
    try:
        await page.goto(f"{server.url}/sessions/{sid}?token={TOKEN}")
        offer = page.locator("#limit-continue")
        await expect(offer).to_be_visible()
        await fits_above_the_composer(page)
        await offer.click()
        await expect(page.locator("#limit-cancel")).to_be_visible()
        await fits_above_the_composer(page)
    finally:
        await context.close()


@pytest.mark.skipif(
    os.environ.get("ANGELIA_SCREENSHOTS") != "1", reason="set ANGELIA_SCREENSHOTS=1"
)
async def test_screenshot_of_the_limit_meter(
    browser: Browser,
    server: LiveServer,
    client: httpx.AsyncClient,
    project_dir: Path,
    fake_claude: dict[str, Any],
) -> None:
    """docs/screenshots/limits.png: a session stopped by its 5-hour limit, set to continue."""
    out = Path(
        os.environ.get("ANGELIA_SCREENSHOTS_DIR")
        or Path(__file__).parents[2] / "docs" / "screenshots"
    )
    out.mkdir(parents=True, exist_ok=True)
    ask = "Refactor the report exporter and run the tests"
    sid = await stopped_session(
        client, project_dir, fake_claude, resets_in=2 * 3600, ask=ask, schedule=True
    )
    context = await browser.new_context(viewport={"width": 1200, "height": 560})
    page = await context.new_page()
    try:
        await page.goto(f"{server.url}/sessions/{sid}?token={TOKEN}")
        await expect(page.locator("#limit-scheduled")).to_be_visible()
        await page.screenshot(path=str(out / "limits.png"))
    finally:
        await context.close()
