"""The composer's choice while the agent works, in a real browser: queue the message or
send it now, into the running turn; a backend that cannot take it offers the queue only
and says why."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import httpx
import pytest
from playwright.async_api import Page, expect

from tests.api.test_chat import make_session
from tests.api.test_steering import slow_acp_session
from tests.browser.conftest import Browsing, settled
from tests.browser.test_approvals import type_and_send
from tests.browser.test_queue import prompts_sent
from tests.conftest import write_scenario
from tests.real.test_real_claude_images_rewind import png

pytestmark = pytest.mark.browser

STEER = "look at the tests first"
DOCS = Path(__file__).resolve().parents[2] / "docs" / "screenshots"


async def tab_to(page: Page, element_id: str, presses: int = 8) -> None:
    """Press Tab until ``element_id`` has the focus (it must be reachable by keyboard)."""
    for _ in range(presses):
        await page.keyboard.press("Tab")
        if await page.evaluate("document.activeElement && document.activeElement.id") == (
            element_id
        ):
            return
    raise AssertionError(f"#{element_id} is not reachable with Tab")


async def test_send_now_goes_into_the_running_turn_and_the_transcript_marks_where(
    browsing: Browsing, client: httpx.AsyncClient, project_dir: Path, fake_claude: dict[str, Any]
) -> None:
    write_scenario(
        fake_claude["scenario"],
        [[{"text": "working on it"}, {"sleep": 6}], [{"text": "tests first, then"}]],
    )
    sid = await make_session(client, project_dir, fake_claude)
    page = browsing.page
    await page.set_viewport_size({"width": 360, "height": 740})
    await browsing.sign_in(f"/sessions/{sid}")
    choice = page.locator("#steer-choice")
    await expect(choice).to_be_hidden()
    await type_and_send(page, "fix the bug")
    await expect(page.locator(".msg.assistant", has_text="working on it")).to_be_visible()

    # The choice shows while the turn runs; the queue stays the default.
    await expect(choice).to_be_visible()
    await expect(page.get_by_role("radio", name="Queue")).to_be_checked()
    now = page.get_by_role("radio", name="Send now")
    await expect(now).not_to_be_checked()
    await settled(page)
    box = await choice.bounding_box()
    assert box is not None and box["x"] >= 0 and box["x"] + box["width"] <= 360

    # Keyboard only: from the message box to the choice, arrows pick "Send now".
    await page.locator("#composer-text").focus()
    await tab_to(page, "steer-queue")
    await page.keyboard.press("ArrowRight")
    await expect(now).to_be_checked()
    await page.keyboard.press("Shift+Tab")
    while await page.evaluate("document.activeElement.id") != "composer-text":
        await page.keyboard.press("Shift+Tab")
    await page.keyboard.type(STEER)
    await page.keyboard.press("Enter")
    await expect(page.locator("#composer-text")).to_have_value("")

    sent = page.locator(".msg.user", has_text=STEER)
    await expect(sent.locator(".steer-label")).to_have_text("sent into the running turn")
    await expect(sent).not_to_have_attribute("data-queue", "waiting")
    # It lands once the fake's turn has run its course (a sleep of a few seconds).
    await expect(page.locator(".steer-landed")).to_contain_text(STEER, timeout=30_000)
    await expect(page.locator(".msg.assistant", has_text="tests first, then")).to_be_visible()
    await expect(choice).to_be_hidden()
    # In the order it happened: the answer so far, the message, where it landed, the rest.
    order = await page.evaluate(
        """() => [...document.querySelectorAll('#transcript .msg, #transcript .steer-landed')]
            .map(el => el.classList.contains('steer-landed') ? 'landed'
                 : el.classList.contains('user') ? 'user:' + el.querySelector('.bubble').textContent
                 : 'agent:' + el.textContent.trim())"""
    )
    assert [o.split(":")[0] for o in order] == ["user", "agent", "user", "landed", "agent"]
    assert order[2] == "user:" + STEER
    assert prompts_sent(fake_claude) == ["fix the bug", STEER]

    # A reload shows the same, from the stored events.
    await page.reload()
    await expect(page.locator(".steer-landed")).to_contain_text(STEER)
    await expect(page.locator(".msg.user .steer-label")).to_have_count(1)
    assert await browsing.csp_violations() == []


async def test_images_are_kept_for_the_queue_and_nothing_is_sent_now(
    browsing: Browsing, client: httpx.AsyncClient, project_dir: Path, fake_claude: dict[str, Any]
) -> None:
    write_scenario(fake_claude["scenario"], [[{"text": "working on it"}, {"sleep": 30}]])
    sid = await make_session(client, project_dir, fake_claude)
    page = browsing.page
    await browsing.sign_in(f"/sessions/{sid}")
    await type_and_send(page, "fix the bug")
    await page.get_by_role("radio", name="Send now").check()
    await page.locator("#attach-input").set_input_files(
        files=[{"name": "one.png", "mimeType": "image/png", "buffer": png(2, 2)}]
    )
    await page.locator("#composer-text").fill(STEER)
    await page.locator("#composer-text").press("Enter")
    await expect(page.locator("#composer-error")).to_contain_text("Images go with a queued")
    await expect(page.locator("#composer-text")).to_have_value(STEER)
    await expect(page.locator("#attach-list li")).to_have_count(1)
    assert prompts_sent(fake_claude) == ["fix the bug"]
    await client.post(f"/api/sessions/{sid}/interrupt")


async def test_a_backend_that_cannot_steer_offers_the_queue_only_and_says_why(
    browsing: Browsing, client: httpx.AsyncClient, tmp_path: Path
) -> None:
    sid = await slow_acp_session(client, tmp_path)
    page = browsing.page
    await browsing.sign_in(f"/sessions/{sid}")
    await type_and_send(page, "start")

    choice = page.locator("#steer-choice")
    await expect(choice).to_be_visible()
    await expect(page.get_by_role("radio", name="Queue")).to_be_checked()
    await expect(page.get_by_role("radio", name="Send now")).to_have_count(0)
    await expect(page.locator("#steer-why")).to_contain_text(
        "cannot take a message while it works; queue it for when the turn ends."
    )
    await type_and_send(page, "and then this")
    waiting = page.locator('.msg.user[data-queue="waiting"]')
    await expect(waiting.locator(".bubble")).to_have_text("and then this")
    await page.locator("#stop-btn").click()
    await expect(choice).to_be_hidden()


@pytest.mark.skipif(
    os.environ.get("ANGELIA_SCREENSHOTS") != "1", reason="set ANGELIA_SCREENSHOTS=1"
)
async def test_screenshot_of_a_message_sent_into_the_running_turn(
    browsing: Browsing, client: httpx.AsyncClient, project_dir: Path, fake_claude: dict[str, Any]
) -> None:
    out = Path(os.environ.get("ANGELIA_SCREENSHOTS_DIR") or DOCS)
    tests = {"tool": "Bash", "input": {"command": "pytest -q"}}
    write_scenario(
        fake_claude["scenario"],
        [
            [{"text": "I'll run the whole suite first."}, tests, {"sleep": 3}],
            [{"text": "Looking at `tests/test_login.py` first, as you asked."}, {"sleep": 30}],
        ],
    )
    sid = await make_session(client, project_dir, fake_claude)
    page = browsing.page
    await page.set_viewport_size({"width": 1200, "height": 800})
    await browsing.sign_in(f"/sessions/{sid}")
    await type_and_send(page, "The login tests fail on CI. Can you look?")
    await expect(page.locator("#steer-choice")).to_be_visible()
    await page.get_by_role("radio", name="Send now").check()
    await type_and_send(page, "Start with tests/test_login.py, the rest passed.")
    await expect(page.locator(".steer-landed")).to_be_visible(timeout=30_000)
    await expect(page.locator(".msg.assistant", has_text="as you asked")).to_be_visible()
    await page.locator("#composer-text").fill("And check the clock fixture too.")
    await page.screenshot(path=str(out / "steering.png"))
    await client.post(f"/api/sessions/{sid}/interrupt")
