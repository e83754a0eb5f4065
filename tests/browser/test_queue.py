"""Messages sent while the agent works wait in the app: in a real browser they can be
edited or dropped until they go, and the page follows what became of each."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import httpx
import pytest
from playwright.async_api import expect

from tests.api.test_chat import fake_log, make_session
from tests.browser.conftest import Browsing
from tests.browser.test_approvals import type_and_send
from tests.conftest import write_scenario

pytestmark = pytest.mark.browser


def prompts_sent(fake: dict[str, Any]) -> list[Any]:
    """The user messages the fake claude read on its stdin, in order."""
    return [
        e["stdin"]["message"]["content"]
        for e in fake_log(fake)
        if e.get("stdin", {}).get("type") == "user"
    ]


async def busy_session(
    browsing: Browsing,
    client: httpx.AsyncClient,
    project_dir: Path,
    fake: dict[str, Any],
    seconds: float,
) -> str:
    """A session open in the browser whose first turn takes ``seconds``."""
    write_scenario(fake["scenario"], [[{"sleep": seconds}, {"text": "first done"}]])
    sid = await make_session(client, project_dir, fake)
    await browsing.sign_in(f"/sessions/{sid}")
    await type_and_send(browsing.page, "take your time")
    return sid


async def test_edit_and_drop_waiting_messages(
    browsing: Browsing, client: httpx.AsyncClient, project_dir: Path, fake_claude: dict[str, Any]
) -> None:
    await busy_session(browsing, client, project_dir, fake_claude, 4)
    page = browsing.page
    await expect(page.locator("#session-status .status")).to_have_attribute(
        "data-status", "working"
    )
    await type_and_send(page, "second, draft")
    await type_and_send(page, "third")

    waiting = page.locator('.msg.user[data-queue="waiting"]')
    await expect(waiting).to_have_count(2)
    second, third = waiting.nth(0), waiting.nth(1)
    await expect(second.locator(".queue-label")).to_have_text("waits for the current turn to end")

    # Edit: the text box opens in place; Escape cancels, Save keeps the new text.
    await second.get_by_role("button", name="Edit").click()
    box = second.get_by_label("Edit the waiting message")
    await expect(box).to_be_focused()
    await expect(box).to_have_value("second, draft")
    await box.fill("never mind")
    await box.press("Escape")
    await expect(box).to_be_hidden()
    await expect(second.locator(".bubble")).to_have_text("second, draft")
    await second.get_by_role("button", name="Edit").click()
    await box.fill("   ")
    await second.get_by_role("button", name="Save").click()
    await expect(second.locator(".queue-problem")).to_contain_text("empty")
    await box.fill("second, final")
    await second.get_by_role("button", name="Save").click()
    await expect(box).to_be_hidden()
    await expect(second.locator(".bubble")).to_have_text("second, final")
    await expect(second.locator(".queue-edited")).to_have_text("(edited)")

    await third.get_by_role("button", name="Drop").click()
    await expect(page.locator('.msg.user[data-queue="dropped"]')).to_have_count(1)
    dropped = page.locator('.msg.user[data-queue="dropped"]')
    await expect(dropped.locator(".queue-label")).to_have_text("dropped: not sent")
    await expect(dropped.get_by_role("button")).to_have_count(0)

    sent = page.locator('.msg.user[data-queue="sent"]')
    await expect(sent).to_have_count(1, timeout=15_000)
    await expect(sent.locator(".bubble")).to_have_text("second, final")
    # Once sent it can no longer be edited or dropped (rewinding to it is another matter).
    await expect(sent.get_by_role("button", name=re.compile("^(Edit|Drop)$"))).to_have_count(0)
    await expect(page.locator(".msg.assistant .md").last).to_have_text("echo: second, final")
    assert prompts_sent(fake_claude)[1:] == ["second, final"]

    await page.reload()
    await expect(sent.locator(".bubble")).to_have_text("second, final")
    await expect(dropped.locator(".bubble")).to_have_text("third")
    await expect(page.locator(".queue-tools")).to_have_count(0)
    assert browsing.log.page_errors == [] and await browsing.csp_violations() == []


async def test_a_message_that_went_meanwhile_says_already_sent(
    browsing: Browsing, client: httpx.AsyncClient, project_dir: Path, fake_claude: dict[str, Any]
) -> None:
    sid = await busy_session(browsing, client, project_dir, fake_claude, 1.5)
    page = browsing.page
    await type_and_send(page, "soon gone")
    message = page.locator('.msg.user[data-queue="waiting"]')
    await expect(message).to_have_count(1)
    # The page stops hearing about the queue, so it still offers Drop after the message went.
    await page.evaluate(
        """document.addEventListener("htmx:sseBeforeMessage", function (evt) {
          if (evt.detail.type.indexOf("queued_") === 0) {
            evt.preventDefault();
            evt.stopPropagation();
          }
        }, true)"""
    )
    for _ in range(100):
        if not (await client.get(f"/api/sessions/{sid}/queue")).json():
            break
        await page.wait_for_timeout(100)
    else:
        pytest.fail("the waiting message never went")
    await message.get_by_role("button", name="Drop").click()
    await expect(message.locator(".queue-problem")).to_have_text(re.compile("^Already sent"))
    await expect(message.get_by_role("button", name="Drop")).to_have_count(0)
