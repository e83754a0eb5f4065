"""A new user's first hour in Chromium, on a desktop and a phone-sized viewport, against a
real ``angelia serve`` child: the wizard on a fresh data dir, a session, an approval with a
message typed while it waits, a reload, a server restart and a resumed conversation. At
each step the newest event is in view and the chrome (titles, status, badge) is current."""

from __future__ import annotations

import asyncio
import os
import re
from pathlib import Path
from typing import Any

import pytest
from playwright.async_api import Browser, Page, expect

from tests.browser.conftest import settled
from tests.browser.test_approvals import bash, pending_card, type_and_send
from tests.browser.test_chrome import (
    DESKTOP_HEAD_PX,
    LIVE,
    PHONE_HEAD_PX,
    height,
    open_at,
    sidebar_entry,
)
from tests.browser.test_scroll import LAST_EVENT, PLACE_JS, VIEWPORTS, assert_fully_in_view
from tests.conftest import write_scenario
from tests.faults._support import ServerProcess, fake_starts
from tests.web.profiles.test_pages_profiles import install_fake_claude

pytestmark = pytest.mark.browser

FIRST = "run the checks"
SECOND = "and then the docs"
THIRD = "one more after the restart"
HEAD_PX = {"desktop": DESKTOP_HEAD_PX, "phone": PHONE_HEAD_PX}


async def assert_newest_in_view(page: Page) -> None:
    """The last shown event sits inside the transcript's visible area, clear of the
    composer and any fixed bar; it is measured again until the scroll settles."""
    where: dict[str, Any] = {}
    await settled(page)
    for _ in range(LIVE // 100):
        where = await page.locator(LAST_EVENT).last.evaluate(PLACE_JS)
        try:
            assert_fully_in_view(where)
            return
        except AssertionError:
            await asyncio.sleep(0.1)
    assert_fully_in_view(where)


async def assert_chrome(page: Page, sid: str, title: str, status: re.Pattern[str] | str) -> None:
    """Heading, tab title and sidebar entry name the session; header status and sidebar
    dot agree on ``status``."""
    await expect(page.locator("h1.session-title")).to_have_text(title, timeout=LIVE)
    entry = sidebar_entry(page, sid)
    await expect(entry.locator(".nav-title")).to_have_text(title, timeout=LIVE)
    header = page.locator("#session-status .status")
    await expect(header).to_have_attribute("data-status", status, timeout=LIVE)
    dot = re.compile(rf"\bdot-({status if isinstance(status, str) else status.pattern})\b")
    await expect(entry.locator(".dot")).to_have_class(dot, timeout=LIVE)


@pytest.mark.parametrize("viewport", VIEWPORTS)
async def test_the_first_hour(
    browser: Browser,
    tmp_path: Path,
    project_dir: Path,
    monkeypatch: pytest.MonkeyPatch,
    viewport: str,
) -> None:
    install_fake_claude(tmp_path, monkeypatch, "unused")
    scenario = write_scenario(
        tmp_path / "first-hour.json", [[bash("make check"), {"sleep": 1}, {"text": "all green"}]]
    )
    fake = {"log": tmp_path / "fake_claude_log.jsonl"}
    monkeypatch.setenv("FAKE_CLAUDE_SCENARIO", str(scenario))
    monkeypatch.setenv("FAKE_CLAUDE_LOG", str(fake["log"]))
    monkeypatch.setenv("HOME", str(tmp_path))
    first = ServerProcess(tmp_path / "data", tmp_path, host=None, env=dict(os.environ)).start()
    second: ServerProcess | None = None
    context = await open_at(browser, VIEWPORTS[viewport])
    try:
        page = await context.new_page()
        errors: list[str] = []
        page.on("pageerror", lambda e: errors.append(str(e)))

        # First run: no profile, so the app opens the wizard with the fake claude found.
        await page.goto(first.signin_url)
        await expect(page).to_have_url(f"{first.url}/welcome")
        step1 = page.locator("#step-backend")
        await expect(step1.get_by_role("radio", name=re.compile("Claude Code"))).to_be_checked()
        await page.get_by_label("Project folder").fill(str(project_dir))
        mode = page.locator("#step-mode").get_by_role("radio", name=re.compile("^default"))
        await expect(mode).to_be_checked()
        await page.get_by_role("button", name="Create the profile and start a session").click()
        await expect(page).to_have_url(re.compile(r"/sessions/[^/?#]+$"))
        sid = page.url.rsplit("/", 1)[1]
        # The composer sends on Enter only once the page's scripts have run.
        await page.wait_for_load_state()
        await expect(page.locator("#transcript")).to_be_visible()
        await expect(page.locator("h1.session-title")).to_have_text("Untitled session")
        await expect(page).to_have_title("Untitled session · Angelia")

        # The turn asks to run a command: the card waits, and so does everything around it.
        await type_and_send(page, FIRST)
        card = pending_card(page)
        await expect(card.locator("pre.cmd")).to_have_text("make check")
        await assert_chrome(page, sid, FIRST, "waiting")
        badge = page.locator("#pending-badge .badge")
        await expect(badge).to_have_attribute("data-count", "1", timeout=LIVE)
        await expect(page).to_have_title(f"(1) {FIRST} · Angelia", timeout=LIVE)
        await assert_newest_in_view(page)
        # The count of waiting requests sits in the header's one row, and takes the
        # reader back to the card from wherever they scrolled.
        assert await height(page.locator("#session-head")) <= HEAD_PX[viewport]
        bar = page.locator("#session-head .head-bar")
        assert await bar.evaluate("b => b.scrollWidth <= b.clientWidth + 1"), "bar overflows"
        to_answer = page.locator("#pending-note")
        await expect(to_answer).to_have_text("1 to answer")
        await page.locator("#transcript").evaluate("log => { log.scrollTop = 0; }")
        await to_answer.click()
        await expect(card.get_by_role("button", name=re.compile("^Allow once"))).to_be_focused()
        await settled(page)
        assert_fully_in_view(await card.evaluate(PLACE_JS))

        # Typed while the card waits, the message is held below the turn.
        await type_and_send(page, SECOND)
        waiting = page.locator('.msg.user[data-queue="waiting"]')
        await expect(waiting).to_have_count(1)
        await settled(page)
        where = await waiting.evaluate(PLACE_JS)
        assert where["covered"] == [] and where["bottom"] <= where["windowBottom"] + 1, where
        await expect(badge).to_have_attribute("data-count", "1")

        # Allowed: the turn ends, the held message goes and is answered.
        await card.get_by_role("button", name=re.compile("^Allow once")).click()
        replies = page.locator("#transcript .msg.assistant .md")
        await expect(replies).to_have_text(["all green", f"echo: {SECOND}"])
        await expect(page.locator("#transcript .turn-end")).to_have_count(2)
        await expect(page.locator('.msg.user[data-queue="sent"]')).to_have_count(1)
        await expect(badge).to_have_count(0, timeout=LIVE)
        await expect(page).to_have_title(f"{FIRST} · Angelia", timeout=LIVE)
        await assert_chrome(page, sid, FIRST, "live")
        await assert_newest_in_view(page)

        await page.reload()
        await expect(replies).to_have_text(["all green", f"echo: {SECOND}"])
        await expect(page).to_have_title(f"{FIRST} · Angelia")
        await assert_chrome(page, sid, FIRST, "live")
        await expect(badge).to_have_count(0)
        await assert_newest_in_view(page)

        # Restarted on the same data dir and port: the CLI is gone, so the session is not
        # shown as running; the fresh process answers from the start of its scenario.
        write_scenario(scenario, [])
        first.stop()
        second = ServerProcess(
            first.data_dir, tmp_path, port=first.port, host=None, env=dict(os.environ)
        ).start()
        assert second.url == first.url
        # The tab left open went quiet when Angelia stopped (another program could have
        # taken the port); its Reconnect button brings it back, and a fresh load agrees.
        not_running = re.compile("interrupted|idle")
        await page.get_by_role("button", name="Reconnect").click()
        await assert_chrome(page, sid, FIRST, not_running)
        await page.reload()
        await assert_chrome(page, sid, FIRST, not_running)
        await expect(page).to_have_title(f"{FIRST} · Angelia")
        await expect(badge).to_have_count(0)
        await assert_newest_in_view(page)

        # Continuing resumes the same conversation in a new CLI process.
        await type_and_send(page, THIRD)
        await expect(replies.last).to_have_text(f"echo: {THIRD}")
        await expect(page.locator("#transcript .turn-end")).to_have_count(3)
        await assert_chrome(page, sid, FIRST, "live")
        await assert_newest_in_view(page)
        starts = fake_starts(fake)
        assert len(starts) == 2, starts
        assert "--resume" in " ".join(starts[1]["argv"]), starts[1]
        assert errors == []
    finally:
        await context.close()
        for server in (first, second):
            if server is not None and server.proc is not None and server.proc.poll() is None:
                server.stop()
