"""The history pages in a real browser: search from the sidebar, open a hit, land on it."""

from __future__ import annotations

import re
from datetime import UTC, datetime
from pathlib import Path

import httpx
import pytest
from playwright.async_api import Page, expect
from sqlalchemy import insert

from app.db.models import Event
from app.web.chat.pages import EARLIER_EVENTS, PAGE_EVENTS
from tests.browser.conftest import Browsing, settled
from tests.conftest import LiveServer

pytestmark = pytest.mark.browser

# Enough later events that the old ones are far outside the tail the page opens with.
LATER = 700


async def long_session(server: LiveServer, client: httpx.AsyncClient, project_dir: Path) -> str:
    """A session whose first event (a collapsed tool output) says "quokkaneedle", followed
    by many short messages and one recent one that says "recentneedle"."""
    body = {"name": "p", "backend": "claude", "cwd": str(project_dir)}
    profile_id = (await client.post("/api/profiles", json=body)).json()["id"]
    r = await client.post("/api/sessions", json={"profile_id": profile_id, "title": "Long one"})
    sid: str = r.json()["id"]
    state = server.app.state.angelia
    output = "\n".join(f"line {i}" for i in range(30)) + "\nquokkaneedle found here"
    state.events.append(sid, "tool_result", {"tool_call_id": "t1", "output": output})
    state.events.flush_sync()
    now = datetime.now(UTC)
    # The filler needs no search rows, so it goes straight into the table.
    with state.engine.begin() as conn:
        conn.execute(
            insert(Event.__table__),  # type: ignore[attr-defined]
            [
                {
                    "session_id": sid,
                    "seq": seq,
                    "kind": "user_message",
                    "payload": {"text": f"filler {seq}"},
                    "created_at": now,
                }
                for seq in range(2, LATER + 2)
            ],
        )
    state.events.forget(sid)
    state.events.append(sid, "assistant_message", {"text": "recentneedle", "message_id": "m"})
    state.events.flush_sync()
    return sid


async def search_from_sidebar(page: Page, words: str) -> None:
    box = page.locator("#nav-search-q")
    await box.fill(words)
    await box.press("Enter")
    await expect(page).to_have_url(re.compile(r"/search\?q=" + words + "$"))


async def test_search_result_opens_the_session_at_the_event(
    browsing: Browsing, server: LiveServer, client: httpx.AsyncClient, project_dir: Path
) -> None:
    sid = await long_session(server, client, project_dir)
    page = browsing.page
    await browsing.sign_in("/sessions")
    await expect(page.locator("li.history-row")).to_have_count(1)

    # An event far older than the tail: the page opens on the events around it.
    await search_from_sidebar(page, "quokkaneedle")
    hits = page.locator("li.hit")
    await expect(hits).to_have_count(1)
    await expect(hits.locator(".snippet mark")).to_have_text("quokkaneedle")
    await hits.locator("a.hit-link").click()
    await expect(page).to_have_url(f"{browsing.server.url}/sessions/{sid}?around=1#e-1")
    found = page.locator("#e-1")
    await expect(found).to_have_class(re.compile(r"\bis-found\b"))
    await expect(found).to_have_attribute("open", "")
    await expect(found.locator("pre.output")).to_contain_text("quokkaneedle found here")
    await expect(found.locator("pre.output")).to_be_in_viewport()
    later = page.locator("#history-later")
    await expect(later).to_contain_text(f"{LATER + 2 - PAGE_EVENTS} later events")
    await later.get_by_role("link", name="Jump to the latest").click()
    await expect(page.locator(f"#e-{LATER + 2}")).to_be_in_viewport()
    await expect(page.locator("#history-later")).to_have_count(0)

    # A recent event is in the tail the page renders anyway.
    await search_from_sidebar(page, "recentneedle")
    await page.locator("a.hit-link").click()
    await expect(page).to_have_url(re.compile(rf"/sessions/{sid}\?around={LATER + 2}#e-"))
    await expect(page.locator(f"#e-{LATER + 2}")).to_be_in_viewport()
    await expect(page.locator(f"#e-{LATER + 2}")).to_have_class(re.compile(r"\bis-found\b"))

    assert browsing.log.console_errors == []
    assert browsing.log.page_errors == []
    assert await browsing.csp_violations() == []


async def test_loading_earlier_events_keeps_the_reader_in_place(
    browsing: Browsing, server: LiveServer, client: httpx.AsyncClient, project_dir: Path
) -> None:
    sid = await long_session(server, client, project_dir)
    page = browsing.page
    await browsing.sign_in(f"/sessions/{sid}")
    events = page.locator("#transcript .event")
    await expect(events).to_have_count(PAGE_EVENTS)
    first = page.locator(f"#e-{LATER + 2 - PAGE_EVENTS + 1}")
    # Scrolled to the top once the page has finished opening at its last event.
    await settled(page)
    await page.locator("#transcript").evaluate("log => { log.scrollTop = 0; }")
    await expect(events).to_have_count(PAGE_EVENTS + EARLIER_EVENTS)
    # The reader still sees what was at the top, so the next page waits for more scrolling
    # instead of every earlier page loading one after the other.
    await expect(first).to_be_in_viewport()
    await page.wait_for_timeout(1500)
    shown = PAGE_EVENTS + EARLIER_EVENTS
    await expect(events).to_have_count(shown)
    # Each scroll to the top loads one more page, down to the session's first event.
    while shown < LATER + 2:
        shown = min(shown + EARLIER_EVENTS, LATER + 2)
        await page.locator("#transcript").evaluate("log => { log.scrollTop = 0; }")
        await expect(events).to_have_count(shown)

    assert browsing.log.console_errors == []
    assert browsing.log.page_errors == []
    assert await browsing.csp_violations() == []


async def test_rename_and_delete_from_the_session_page(
    browsing: Browsing, server: LiveServer, client: httpx.AsyncClient, project_dir: Path
) -> None:
    body = {"name": "p", "backend": "claude", "cwd": str(project_dir)}
    profile_id = (await client.post("/api/profiles", json=body)).json()["id"]
    r = await client.post("/api/sessions", json={"profile_id": profile_id, "title": "Old name"})
    sid = r.json()["id"]
    page = browsing.page
    await browsing.sign_in(f"/sessions/{sid}")

    # Rename and delete live in the header's menu.
    await page.get_by_role("button", name="Session actions").click()
    await page.get_by_text("Rename", exact=True).click()
    await page.get_by_label("New title").fill("New name")
    await page.get_by_role("button", name="Save").click()
    await expect(page.locator("h1.session-title")).to_have_text("New name")
    await expect(page).to_have_title("New name · Angelia")

    await page.get_by_role("button", name="Session actions").click()
    await page.get_by_text("Delete…", exact=True).click()
    await page.get_by_role("button", name="Delete for good").click()
    await expect(page).to_have_url(f"{browsing.server.url}/sessions")
    await expect(page.locator("li.history-row")).to_have_count(0)
    assert (await client.get(f"/api/sessions/{sid}")).status_code == 404

    assert browsing.log.console_errors == []
    assert browsing.log.page_errors == []
    assert await browsing.csp_violations() == []
