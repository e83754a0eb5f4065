"""Where a message typed while an approval waits shows, measured in a real browser on a
desktop and a phone-sized viewport: below the running turn while it waits, then in the
transcript where it went (after the turn it waited for), live and after a reload."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import httpx
import pytest
from playwright.async_api import Locator, Page, expect

from tests.api.test_chat import make_session
from tests.browser.conftest import Browsing, settled
from tests.browser.test_approvals import bash, pending_card, type_and_send
from tests.browser.test_scroll import PLACE_JS, VIEWPORTS
from tests.conftest import write_scenario

pytestmark = pytest.mark.browser

# Whether ``el`` comes after every item of the transcript that ``selector`` picks.
AFTER_ALL_JS = """
([el, selector]) => Array.from(document.querySelectorAll(selector)).every(
  (other) => other === el || other.contains(el)
    || (other.compareDocumentPosition(el) & Node.DOCUMENT_POSITION_FOLLOWING) !== 0)
"""


async def comes_after(message: Locator, selector: str) -> bool:
    handle = await message.element_handle()
    found: bool = await message.page.evaluate(AFTER_ALL_JS, [handle, selector])
    return found


async def assert_went_after_the_turn(page: Page) -> None:
    sent = page.locator('#transcript .msg.user[data-queue="sent"]')
    await expect(sent).to_have_count(1)
    await expect(sent.locator(".bubble")).to_have_text("and then this")
    await expect(sent).not_to_have_class(re.compile(r"\bqueued\b"))
    first_turn_end = page.locator("#transcript .turn-end").first
    # After everything the first turn showed, its end included.
    assert await comes_after(sent, "#transcript .tool-call, #transcript .tool-result")
    handle = await first_turn_end.element_handle()
    assert await sent.evaluate(
        "(el, end) => (end.compareDocumentPosition(el) & Node.DOCUMENT_POSITION_FOLLOWING) !== 0",
        handle,
    )


@pytest.mark.parametrize("viewport", VIEWPORTS)
async def test_a_message_typed_while_a_card_waits_goes_after_the_turn(
    browsing: Browsing,
    client: httpx.AsyncClient,
    project_dir: Path,
    fake_claude: dict[str, Any],
    viewport: str,
) -> None:
    # The turn runs on after the tool until the test has looked, however slow the machine.
    release = project_dir.parent / "release"
    turn = [bash("echo hi"), {"until_file": str(release)}, {"text": "ran it"}]
    write_scenario(fake_claude["scenario"], [turn])
    sid = await make_session(client, project_dir, fake_claude)
    page = browsing.page
    await page.set_viewport_size(VIEWPORTS[viewport])
    await browsing.sign_in(f"/sessions/{sid}")
    await type_and_send(page, "run it")
    card = pending_card(page)
    await expect(card).to_have_count(1)
    await type_and_send(page, "and then this")

    waiting = page.locator('.msg.user[data-queue="waiting"]')
    await expect(waiting).to_have_count(1)
    await expect(waiting).to_have_class(re.compile(r"\bqueued\b"))
    # Below the running turn, in view and clear of the composer.
    assert await comes_after(waiting, "#transcript .event")
    await settled(page)
    where = await waiting.evaluate(PLACE_JS)
    assert where["covered"] == [] and where["bottom"] <= where["windowBottom"] + 1, where

    await card.get_by_role("button", name=re.compile("^Allow once")).click()
    await expect(page.locator("#transcript .tool-result")).to_have_count(1)
    # The tool's output comes in while it still waits: it stays below that too.
    await expect(waiting).to_have_count(1)
    assert await comes_after(waiting, "#transcript .event")
    release.touch()

    await expect(
        page.locator("#transcript .msg.assistant", has_text="echo: and then this")
    ).to_have_count(1)
    await assert_went_after_the_turn(page)
    await expect(page.locator("#queue-waiting")).to_be_hidden()

    await page.reload()
    await expect(page.locator("#transcript .turn-end")).to_have_count(2)
    await assert_went_after_the_turn(page)
    assert browsing.log.page_errors == [] and await browsing.csp_violations() == []
