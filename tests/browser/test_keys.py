"""The chat page's own keys in Chromium, pressed as a user would: Escape in the message box
goes to a waiting card and decides nothing, Alt+Shift+J reaches the oldest card from
anywhere, and the mode picker switches in place with focus kept on it. (Ctrl+. stopping a
turn: test_ui.py.)"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import httpx
import pytest
from playwright.async_api import Page, expect

from tests.api.test_chat import fake_log, make_session
from tests.browser.conftest import Browsing
from tests.browser.demo import finished_session
from tests.browser.test_approvals import answers, bash, pending_card
from tests.browser.test_ui import append
from tests.conftest import LiveServer, write_scenario
from tests.helpers import send

pytestmark = pytest.mark.browser

FOCUS_ON_BODY = "document.activeElement === null || document.activeElement === document.body"


async def assert_focus_not_on_body(page: Page) -> None:
    assert not await page.evaluate(FOCUS_ON_BODY)


async def pending_ids(client: httpx.AsyncClient, sid: str) -> list[str]:
    rows = (await client.get("/api/permissions", params={"status": "pending"})).json()
    return [r["id"] for r in rows if r["session_id"] == sid]


async def test_escape_in_the_message_box_goes_to_the_card_and_decides_nothing(
    browsing: Browsing, client: httpx.AsyncClient, project_dir: Path, fake_claude: dict[str, Any]
) -> None:
    write_scenario(fake_claude["scenario"], [[bash("echo one"), {"text": "finished"}]])
    sid = await make_session(client, project_dir, fake_claude)
    page = browsing.page
    await browsing.sign_in(f"/sessions/{sid}")
    await send(client, sid, "go")
    card = pending_card(page)
    await expect(card.locator("pre.cmd")).to_have_text("echo one")
    waiting = await pending_ids(client, sid)
    assert len(waiting) == 1

    box = page.locator("#composer-text")
    await box.click()
    await page.keyboard.type("half a thought")
    await page.keyboard.press("Escape")
    allow = card.get_by_role("button", name=re.compile("^Allow once"))
    await expect(allow).to_be_focused()
    await expect(box).to_have_value("half a thought")
    # Nothing was cancelled or denied, and the turn still runs.
    await page.wait_for_timeout(500)
    assert await pending_ids(client, sid) == waiting
    session = (await client.get(f"/api/sessions/{sid}")).json()
    assert session["status"] in ("working", "waiting"), session["status"]
    stdin = [e["stdin"] for e in fake_log(fake_claude) if "stdin" in e]
    assert not any(m.get("request", {}).get("subtype") == "interrupt" for m in stdin)
    assert answers(fake_claude) == []
    await expect(card).to_have_count(1)

    # On the card, Escape denies it, as the card's hint says; focus stays on the card.
    await expect(card.locator(".perm-keys")).to_contain_text("Escape denies")
    await page.keyboard.press("Escape")
    await expect(page.locator(".perm.decided .outcome")).to_have_text("Denied by you")
    await expect(page.locator(".msg.assistant .md")).to_have_text("finished")
    assert [a["behavior"] for a in answers(fake_claude)] == ["deny"]
    await assert_focus_not_on_body(page)
    assert browsing.log.page_errors == [] and await browsing.csp_violations() == []


async def test_the_jump_key_reaches_the_oldest_card_from_the_sidebar(
    browsing: Browsing, server: LiveServer, client: httpx.AsyncClient, project_dir: Path
) -> None:
    sid = await finished_session(server, client, project_dir)
    for n in (1, 2):
        append(
            server,
            sid,
            "permission_request",
            {
                "permission_id": f"pending-{n}",
                "tool": "Bash",
                "input": {"command": f"echo {n}"},
                "status": "pending",
            },
        )
    page = browsing.page
    await browsing.sign_in(f"/sessions/{sid}")
    await expect(pending_card(page)).to_have_count(2)
    link = page.locator(f"nav.sidebar a[href='/sessions/{sid}']")
    await link.focus()
    await expect(link).to_be_focused()

    await page.keyboard.press("Alt+Shift+J")
    oldest = page.locator("#perm-pending-1")
    await expect(oldest.get_by_role("button", name=re.compile("^Allow once"))).to_be_focused()
    await expect(oldest).to_be_in_viewport()
    # Still waiting: going there answers nothing.
    await expect(pending_card(page)).to_have_count(2)
    await assert_focus_not_on_body(page)


async def test_the_mode_switches_in_place_by_keyboard(
    browsing: Browsing, client: httpx.AsyncClient, project_dir: Path, fake_claude: dict[str, Any]
) -> None:
    sid = await make_session(client, project_dir, fake_claude)
    page = browsing.page
    await browsing.sign_in(f"/sessions/{sid}")
    picker = page.locator("#mode-select")
    await expect(picker).to_have_value("default")
    await page.evaluate("window.keptAcrossTheSwitch = true")

    await picker.focus()
    await page.keyboard.press("ArrowDown")
    await expect(picker).to_have_value("acceptEdits")
    await page.keyboard.press("Tab")
    switch = page.locator("#mode-form").get_by_role("button", name="Switch")
    await expect(switch).to_be_focused()
    await page.keyboard.press("Enter")

    await expect(picker).to_be_focused()
    await expect(page.locator("#mode-form")).to_have_attribute("data-mode", "acceptEdits")
    await expect(page.locator(".transcript")).to_contain_text("acceptEdits")
    assert (await client.get(f"/api/sessions/{sid}")).json()["permission_mode"] == "acceptEdits"
    assert await page.evaluate("window.keptAcrossTheSwitch === true")
    await assert_focus_not_on_body(page)

    # Bypass without the confirmation is refused in place, with the reason and the box to
    # tick focused; Space ticks it and Shift+Tab goes back to Switch.
    await picker.select_option("bypassPermissions")
    await switch.focus()
    await page.keyboard.press("Enter")
    await expect(page.locator("#mode-error")).to_contain_text("confirm")
    assert (await client.get(f"/api/sessions/{sid}")).json()["permission_mode"] == "acceptEdits"
    confirm = page.locator("#mode-confirm input")
    await expect(confirm).to_be_focused()
    await page.keyboard.press("Space")
    await expect(confirm).to_be_checked()
    await page.keyboard.press("Shift+Tab")
    await expect(switch).to_be_focused()
    await page.keyboard.press("Enter")
    await expect(page.locator("#session-head")).to_have_class(re.compile(r"\bis-bypass\b"))
    await expect(page.locator("#mode-error")).to_have_count(0)
    await expect(picker).to_be_focused()
    assert await page.evaluate("window.keptAcrossTheSwitch === true")
    assert browsing.log.page_errors == [] and await browsing.csp_violations() == []
