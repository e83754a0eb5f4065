"""The sessions sidebar in a real browser follows sessions live: one started elsewhere
appears in its place, a status or title changes in its row, a deleted one leaves, focus
on a row's link survives it all, on a desktop, a small laptop and a phone; the page
holds one stream for it and its transcript; axe finds nothing serious."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx
import pytest
from playwright.async_api import Browser, Page, Request, expect

from tests.api.test_board import bash, profile_with
from tests.api.test_chat import make_profile
from tests.browser.conftest import CSP_PROBE, TIMEOUT_MS, Browsing
from tests.browser.test_ui import axe_problems
from tests.conftest import TOKEN, LiveServer
from tests.helpers import send

pytestmark = pytest.mark.browser

VIEWPORTS = [(1366, 900), (1024, 700), (390, 844)]


async def new_session(client: httpx.AsyncClient, profile_id: str, title: str) -> str:
    r = await client.post("/api/sessions", json={"profile_id": profile_id, "title": title})
    assert r.status_code == 201, r.text
    sid: str = r.json()["id"]
    return sid


def sidebar_link(page: Page, sid: str) -> Any:
    return page.locator(f'nav.sidebar .nav-sessions a[href="/sessions/{sid}"]')


def session_links(page: Page) -> Any:
    """The sidebar's session links, top first."""
    return page.locator("nav.sidebar .nav-sessions a")


async def open_menu_on_a_phone(page: Page) -> None:
    toggle = page.get_by_role("button", name="Menu")
    if await toggle.is_visible():
        await toggle.click()
        await expect(toggle).to_have_attribute("aria-expanded", "true")


@pytest.mark.parametrize(("width", "height"), VIEWPORTS)
async def test_a_session_started_elsewhere_appears_changes_and_leaves(
    browsing: Browsing,
    client: httpx.AsyncClient,
    project_dir: Path,
    fake_claude: dict[str, Any],
    width: int,
    height: int,
) -> None:
    asking = await profile_with(
        client, project_dir, fake_claude, "asking", [[bash("make test"), {"text": "Passed."}]]
    )
    first = await new_session(client, asking, "First one")
    page = browsing.page
    await page.set_viewport_size({"width": width, "height": height})
    streams: list[str] = []

    def on_request(request: Request) -> None:
        if request.resource_type == "eventsource":
            streams.append(request.url.removeprefix(browsing.server.url).split("?")[0])

    page.on("request", on_request)
    await browsing.sign_in(f"/sessions/{first}")
    await open_menu_on_a_phone(page)
    await expect(sidebar_link(page, first)).to_have_attribute("aria-current", "page")

    # Another tab (here the API) starts a session: it appears at the top, no reload.
    second = await new_session(client, asking, "Second one")
    row = sidebar_link(page, second)
    await expect(row).to_be_visible()
    await expect(row).to_contain_text("Second one")
    await expect(session_links(page).first).to_have_attribute("href", f"/sessions/{second}")
    assert await row.get_attribute("aria-current") is None
    # Its agent asks for an approval: the dot says so, in words too.
    await send(client, second, "run the tests")
    dot = page.locator(f'nav.sidebar [data-status-of="{second}"]')
    await expect(dot).to_have_class("dot dot-waiting")
    await expect(dot).to_have_attribute("title", "waiting for you")
    await expect(dot.locator(".visually-hidden")).to_have_text("waiting for you")
    # Renamed elsewhere, then deleted: the row follows, then leaves.
    r = await client.patch(f"/api/sessions/{second}", json={"title": "Renamed"})
    assert r.status_code == 200, r.text
    await expect(row.locator(".nav-title")).to_have_text("Renamed")
    r = await client.delete(f"/api/sessions/{second}")
    assert r.status_code == 204, r.text
    await expect(row).to_have_count(0)
    await expect(sidebar_link(page, first)).to_have_attribute("aria-current", "page")

    # One stream for the transcript and the sidebar both.
    assert streams == [f"/sessions/{first}/live"]
    assert browsing.log.page_errors == [] and browsing.log.console_errors == []
    assert await browsing.csp_violations() == []


async def test_keyboard_focus_on_a_sidebar_link_survives_updates(
    browsing: Browsing, client: httpx.AsyncClient, project_dir: Path, fake_claude: dict[str, Any]
) -> None:
    pid = await make_profile(client, project_dir, fake_claude)
    older = await new_session(client, pid, "Older")
    newer = await new_session(client, pid, "Newer")
    page = browsing.page
    await page.set_viewport_size({"width": 1366, "height": 900})
    await browsing.sign_in(f"/sessions/{newer}")
    link = sidebar_link(page, older)
    await link.focus()
    await expect(link).to_be_focused()

    # A new session above it, then a rename that moves its own row to the top.
    third = await new_session(client, pid, "Third")
    await expect(sidebar_link(page, third)).to_be_visible()
    await expect(link).to_be_focused()
    r = await client.patch(f"/api/sessions/{older}", json={"title": "Older, renamed"})
    assert r.status_code == 200, r.text
    await expect(link.locator(".nav-title")).to_have_text("Older, renamed")
    await expect(session_links(page).first).to_have_attribute("href", f"/sessions/{older}")
    await expect(link).to_be_focused()
    # And the keyboard goes on from there, to the next row.
    await page.keyboard.press("Tab")
    await expect(sidebar_link(page, third)).to_be_focused()
    assert browsing.log.page_errors == [] and browsing.log.console_errors == []


async def test_the_history_page_sidebar_follows_and_axe_finds_nothing_serious(
    browser: Browser,
    server: LiveServer,
    client: httpx.AsyncClient,
    project_dir: Path,
    fake_claude: dict[str, Any],
) -> None:
    pid = await make_profile(client, project_dir, fake_claude)
    await new_session(client, pid, "Before")
    # axe is injected as a script of its own, which the app's CSP rightly refuses; this
    # context alone ignores the policy (the other tests check the pages keep to it).
    context = await browser.new_context(viewport={"width": 1024, "height": 700}, bypass_csp=True)
    context.set_default_timeout(TIMEOUT_MS)
    await context.add_init_script(CSP_PROBE)
    page = await context.new_page()
    try:
        await page.goto(f"{server.url}/sessions?token={TOKEN}")
        made = await new_session(client, pid, "After")
        row = sidebar_link(page, made)
        await expect(row).to_contain_text("After")
        await expect(page.locator("nav.sidebar .nav-heading")).to_have_count(1)
        assert await axe_problems(page) == []
    finally:
        await context.close()
