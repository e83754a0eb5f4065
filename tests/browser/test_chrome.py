"""The page around a conversation in Chromium: the session header as one compact row
where it fits and two where it does not, never cutting the title short (measured, not
compared as pictures), its menu and pickers by keyboard and pointer, and
the title, status dots and badge following the session without a reload."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from playwright.async_api import Browser, BrowserContext, Locator, Page, expect

from tests.api.test_chat import make_session
from tests.browser.conftest import CSP_PROBE, TIMEOUT_MS, Browsing, PageLog, settled
from tests.browser.test_approvals import bash
from tests.conftest import TOKEN, LiveServer, write_scenario
from tests.faults._support import ServerProcess
from tests.helpers import count, send, wait_for_events

pytestmark = pytest.mark.browser

DESKTOP = {"width": 1280, "height": 800}
PHONE = {"width": 360, "height": 740}
# Two toolbar rows and their padding; the old header took about 230 px.
DESKTOP_HEAD_PX = 64
WIDE_HEAD_PX = 40
PHONE_HEAD_PX = 56
# What follows the session comes with the badge poll (every 3 s) or the event stream.
LIVE = TIMEOUT_MS


async def open_at(browser: Browser, viewport: dict[str, int]) -> BrowserContext:
    context = await browser.new_context(viewport=viewport)  # type: ignore[arg-type]
    context.set_default_timeout(TIMEOUT_MS)
    await context.add_init_script(CSP_PROBE)
    return context


@pytest.fixture
async def quiet_session(
    client: httpx.AsyncClient, project_dir: Path, fake_claude: dict[str, Any]
) -> AsyncIterator[str]:
    """A session with a title, a finished turn and a cost: what a header usually shows."""
    write_scenario(fake_claude["scenario"], [[{"text": "all done"}]])
    sid = await make_session(client, project_dir, fake_claude)
    await client.patch(f"/api/sessions/{sid}", json={"title": "Tidy the reports module"})
    await send(client, sid, "tidy it")
    await wait_for_events(client, sid, count("turn_end", 1))
    yield sid


async def height(locator: Locator) -> float:
    box = await locator.bounding_box()
    assert box is not None
    return float(box["height"])


async def allow_and_finish(client: httpx.AsyncClient, sid: str) -> None:
    """Allow the one waiting request through the API and wait for the turn to end."""
    pending = (await client.get("/api/permissions", params={"status": "pending"})).json()
    r = await client.post(
        f"/api/permissions/{pending[0]['id']}/decision", json={"decision": "allow_once"}
    )
    assert r.status_code == 200
    await wait_for_events(client, sid, count("turn_end", 1))


def sidebar_entry(page: Page, sid: str) -> Locator:
    return page.locator(f"nav.sidebar a[href='/sessions/{sid}']")


HEADER_CONTROLS = [
    "h1.session-title",
    "#session-status",
    "#session-model",
    "#session-cost",
    "#mode-select",
    "#model-select",
    "#session-menu-btn",
]


async def header_holds_everything(page: Page, rows_px: int) -> None:
    """The header is at most ``rows_px`` high, the title is whole, and every control is
    shown inside it, none past its edge or pushing the page sideways."""
    head = page.locator("#session-head")
    await expect(page.locator("h1.session-title")).to_have_text("Tidy the reports module")
    await expect(page.locator("#session-tokens")).to_be_visible()
    await settled(page)
    assert await height(head) <= rows_px
    head_box = await head.bounding_box()
    log_box = await page.locator("#transcript").bounding_box()
    assert head_box is not None and log_box is not None
    # The conversation starts right under it.
    assert log_box["y"] <= head_box["y"] + rows_px + 1
    title = page.locator("h1.session-title")
    assert await title.evaluate("h => h.scrollWidth <= h.clientWidth"), "the title is cut"
    for selector in HEADER_CONTROLS:
        await expect(page.locator(selector)).to_be_visible()
        box = await page.locator(selector).bounding_box()
        assert box is not None, selector
        assert head_box["y"] <= box["y"] and box["y"] + box["height"] <= head_box["y"] + rows_px
        right = head_box["x"] + head_box["width"]
        assert box["x"] + box["width"] <= right, f"{selector} sticks out of the header"
    assert await page.evaluate("document.documentElement.scrollWidth <= innerWidth")
    await expect(page.locator("#session-tokens")).to_be_visible()


@pytest.mark.parametrize(
    ("width", "rows_px"), [(760, 100), (1024, 100), (1200, DESKTOP_HEAD_PX), (1600, WIDE_HEAD_PX)]
)
async def test_the_header_wraps_rather_than_cut_the_title_or_hide_the_menu(
    browser: Browser, server: LiveServer, quiet_session: str, width: int, rows_px: int
) -> None:
    # One row where everything fits, two on a laptop, three at most on a small one.
    context = await open_at(browser, {"width": width, "height": 800})
    page = await context.new_page()
    try:
        await page.goto(f"{server.url}/sessions/{quiet_session}?token={TOKEN}")
        await header_holds_everything(page, rows_px)
    finally:
        await context.close()


async def test_desktop_header_keeps_the_title_whole_and_every_control_in_reach(
    browser: Browser, server: LiveServer, quiet_session: str
) -> None:
    context = await open_at(browser, DESKTOP)
    page = await context.new_page()
    log = PageLog()
    page.on("pageerror", log.on_page_error)
    try:
        await page.goto(f"{server.url}/sessions/{quiet_session}?token={TOKEN}")
        head = page.locator("#session-head")
        await header_holds_everything(page, DESKTOP_HEAD_PX)

        # The menu by keyboard: Enter opens it, Tab reaches its actions, Escape closes it.
        menu = page.locator("#session-menu")
        button = page.locator("#session-menu-btn")
        await expect(menu).to_be_hidden()
        await expect(button).to_have_attribute("aria-expanded", "false")
        await button.focus()
        await page.keyboard.press("Enter")
        await expect(button).to_have_attribute("aria-expanded", "true")
        await expect(menu.get_by_text("Rename", exact=True)).to_be_visible()
        # The menu drops over the conversation: the header keeps its height.
        await settled(page)
        assert await height(head) <= DESKTOP_HEAD_PX
        for _ in range(10):
            await page.keyboard.press("Tab")
            if await page.evaluate("document.activeElement.textContent.trim()") == "Rename":
                break
        await page.keyboard.press("Enter")
        await expect(page.get_by_label("New title")).to_be_visible()
        await page.keyboard.press("Escape")
        await expect(menu).to_be_hidden()
        await expect(button).to_be_focused()
        await expect(button).to_have_attribute("aria-expanded", "false")

        # By pointer: export and delete are there, and a click elsewhere closes it.
        await button.click()
        await menu.get_by_text("Export", exact=True).click()
        await expect(menu.get_by_role("link", name="Markdown")).to_be_visible()
        await expect(menu.get_by_text("Delete…", exact=True)).to_be_visible()
        await page.locator("h1.session-title").click()
        await expect(menu).to_be_hidden()

        # The bypass confirmation opens under the mode picker, not as a second line.
        await page.locator("#mode-select").select_option("bypassPermissions")
        await expect(page.locator("#mode-confirm")).to_be_visible()
        await settled(page)
        assert await height(head) <= DESKTOP_HEAD_PX
        await page.locator("#mode-select").select_option("default")
        await expect(page.locator("#mode-confirm")).to_be_hidden()

        # The pickers work in place.
        await page.locator("#mode-select").select_option("plan")
        await page.locator("#mode-form").get_by_role("button", name="Switch").click()
        # The switch is done when the form says so (the picker shows "plan" at once).
        await expect(page.locator("#mode-form")).to_have_attribute("data-mode", "plan")
        await expect(page.locator("#mode-select")).to_have_value("plan")
        await settled(page)
        assert await height(head) <= DESKTOP_HEAD_PX
        assert log.page_errors == []
    finally:
        await context.close()


async def test_phone_header_folds_to_title_and_status(
    browser: Browser, server: LiveServer, quiet_session: str
) -> None:
    context = await open_at(browser, PHONE)
    page = await context.new_page()
    try:
        await page.goto(f"{server.url}/sessions/{quiet_session}?token={TOKEN}")
        head = page.locator("#session-head")
        toggle = page.get_by_role("button", name="Details")
        await expect(toggle).to_have_attribute("aria-expanded", "false")
        await expect(page.locator("h1.session-title")).to_have_text("Tidy the reports module")
        await settled(page)
        assert await height(head) <= PHONE_HEAD_PX
        await expect(page.locator("h1.session-title")).to_be_visible()
        await expect(page.locator("#session-status .status")).to_be_visible()
        await expect(page.locator("#mode-select")).to_be_hidden()

        await toggle.click()
        await expect(toggle).to_have_attribute("aria-expanded", "true")
        switch = page.locator("#mode-form").get_by_role("button", name="Switch")
        await expect(page.locator("#mode-select")).to_be_visible()
        await settled(page)
        for control in (
            page.locator("#mode-select"),
            switch,
            page.locator("#model-select"),
            page.locator("#session-menu-btn"),
            page.locator("#session-cost"),
        ):
            await expect(control).to_be_visible()
            box = await control.bounding_box()
            assert box is not None and box["x"] >= 0
            assert box["x"] + box["width"] <= PHONE["width"], await control.evaluate(
                "e => e.outerHTML.slice(0, 80)"
            )
        await page.locator("#session-menu-btn").click()
        await expect(
            page.locator("#session-menu").get_by_text("Rename", exact=True)
        ).to_be_visible()
        # The open menu is on the screen, not hanging off its left edge.
        await settled(page)
        panel = await page.locator("#session-menu").bounding_box()
        assert panel is not None and panel["x"] >= 0
        assert panel["x"] + panel["width"] <= PHONE["width"]
        assert await page.evaluate("document.documentElement.scrollWidth <= innerWidth")
    finally:
        await context.close()


async def test_title_dots_and_badge_follow_the_session(
    browsing: Browsing, client: httpx.AsyncClient, project_dir: Path, fake_claude: dict[str, Any]
) -> None:
    write_scenario(fake_claude["scenario"], [[bash("touch x"), {"text": "done"}]])
    sid = await make_session(client, project_dir, fake_claude)
    page = browsing.page
    await browsing.sign_in(f"/sessions/{sid}")
    title = page.locator("h1.session-title")
    entry = sidebar_entry(page, sid)
    await expect(title).to_have_text("Untitled session", timeout=LIVE)

    # The first message names the session and the agent asks: the page says so.
    await send(client, sid, "run touch")
    await expect(title).to_have_text("run touch", timeout=LIVE)
    await expect(entry.locator(".nav-title")).to_have_text("run touch", timeout=LIVE)
    await expect(entry.locator(".dot")).to_have_class("dot dot-waiting", timeout=LIVE)
    await expect(page.locator("#pending-badge .badge")).to_have_text(
        "1 waiting for approval", timeout=LIVE
    )
    await expect(page).to_have_title("(1) run touch · Angelia", timeout=LIVE)

    # Answered through the API, the turn ends: nothing is waiting any more.
    await allow_and_finish(client, sid)
    await expect(entry.locator(".dot")).to_have_class("dot dot-live", timeout=LIVE)
    await expect(page.locator("#session-status .status")).to_have_attribute(
        "data-status", "live", timeout=LIVE
    )
    await expect(page.locator("#pending-badge .badge")).to_have_count(0, timeout=LIVE)
    await expect(page).to_have_title("run touch · Angelia", timeout=LIVE)

    # Renamed through the API: heading, tab title and sidebar follow.
    r = await client.patch(f"/api/sessions/{sid}", json={"title": "Touch the marker file"})
    assert r.status_code == 200
    await expect(title).to_have_text("Touch the marker file", timeout=LIVE)
    await expect(entry.locator(".nav-title")).to_have_text("Touch the marker file", timeout=LIVE)
    await expect(page).to_have_title("Touch the marker file · Angelia", timeout=LIVE)

    assert browsing.log.page_errors == []
    assert await browsing.csp_violations() == []


async def test_a_restart_turns_a_live_dot_into_interrupted(
    browser: Browser, tmp_path: Path, project_dir: Path, fake_claude: dict[str, Any]
) -> None:
    write_scenario(fake_claude["scenario"], [[{"text": "started", "chunks": 2}, {"sleep": 60}]])
    first = ServerProcess(tmp_path / "served", tmp_path).start()
    second: ServerProcess | None = None
    context = await open_at(browser, DESKTOP)
    try:
        async with first.client() as client:
            sid = await make_session(client, project_dir, fake_claude)
            await send(client, sid, "start a long turn")
            await wait_for_events(client, sid, count("assistant_message", 1))
        page = await context.new_page()
        await page.goto(f"{first.url}/sessions/{sid}?token={TOKEN}")
        entry = sidebar_entry(page, sid)
        await expect(entry.locator(".dot")).to_have_class("dot dot-working", timeout=LIVE)

        # Killed mid-turn and started again on the same address: the tab left open says
        # the turn was interrupted, with a dot that is not the running green.
        first.kill9()
        second = ServerProcess(first.data_dir, tmp_path, port=first.port).start()
        await expect(entry.locator(".dot")).to_have_class("dot dot-interrupted", timeout=LIVE)
        status = page.locator("#session-status .status")
        await expect(status).to_have_attribute("data-status", "interrupted", timeout=LIVE)
        await expect(status).to_have_text("interrupted", timeout=LIVE)
        dot_colour = await entry.locator(".dot").evaluate(
            "d => getComputedStyle(d).backgroundColor"
        )
        assert dot_colour == "rgba(0, 0, 0, 0)"
    finally:
        await context.close()
        for server in (first, second):
            if server is not None and server.proc is not None and server.proc.poll() is None:
                server.stop()


async def test_history_row_and_changes_heading_follow_the_session(
    browsing: Browsing, client: httpx.AsyncClient, project_dir: Path, fake_claude: dict[str, Any]
) -> None:
    """Pages that only show a session keep up too: its History row trades the count of
    waiting approvals for the status once they are answered, and the Changes tab's heading
    and tab title take the session's new name."""
    write_scenario(fake_claude["scenario"], [[bash("touch x"), {"text": "done"}]])
    sid = await make_session(client, project_dir, fake_claude)
    history = browsing.page
    await browsing.sign_in("/sessions")
    changes = await history.context.new_page()
    await changes.goto(f"{browsing.server.url}/sessions/{sid}/changes")
    heading = changes.locator("h1.session-title")
    await expect(heading).to_have_text("Untitled session")
    row = history.locator(f".history-status[data-row-of='{sid}']")

    await send(client, sid, "run touch")
    await expect(row).to_have_text("1 waiting for approval", timeout=LIVE)
    await expect(row.locator(".dot")).to_have_class("dot dot-waiting")
    await expect(heading).to_have_text("run touch", timeout=LIVE)
    await expect(changes).to_have_title("(1) Changes · run touch · Angelia", timeout=LIVE)

    await allow_and_finish(client, sid)
    await expect(row.locator(".status")).to_have_attribute("data-status", "live", timeout=LIVE)
    await expect(row).to_have_text("live")
    await expect(changes).to_have_title("Changes · run touch · Angelia", timeout=LIVE)
    assert browsing.log.page_errors == []
