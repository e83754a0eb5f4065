"""Where the chat's scroll position lands, measured in a real browser on a desktop and a
phone-sized viewport: a session opens at its last event even when rows arrive after the
first layout (the "Rewind files to here" actions), sending brings the view to the end,
and a permalink opens with its event's top in view."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx
import pytest
from playwright.async_api import Page, expect

from tests.api.test_chat import make_session
from tests.browser.conftest import Browsing, settled
from tests.browser.test_approvals import type_and_send
from tests.conftest import LiveServer, write_scenario

pytestmark = pytest.mark.browser

VIEWPORTS = {"desktop": {"width": 1280, "height": 800}, "phone": {"width": 360, "height": 740}}
ROUNDS = 40
TALL_LINES = 60

# Where an element is against the transcript's visible scroll area, the composer and
# any fixed or sticky bar on the page.
PLACE_JS = """
(el) => {
  const log = document.getElementById("transcript");
  const box = el.getBoundingClientRect();
  const frame = log.getBoundingClientRect();
  const top = frame.top + log.clientTop;
  const bottom = top + log.clientHeight;
  const bars = Array.from(document.querySelectorAll("body *")).filter((node) => {
    const position = getComputedStyle(node).position;
    return (position === "fixed" || position === "sticky") && !log.contains(node);
  });
  const composer = document.getElementById("composer");
  if (composer) bars.push(composer);
  const over = (from, to) => bars.filter((bar) => {
    const r = bar.getBoundingClientRect();
    return r.width > 0 && r.height > 0 && r.top < to - 0.5 && r.bottom > from + 0.5
      && r.left < box.right && r.right > box.left;
  }).map((bar) => bar.id || bar.className || bar.tagName);
  return {
    top: box.top, bottom: box.bottom, height: box.height,
    viewTop: top, viewBottom: bottom, windowBottom: window.innerHeight,
    covered: over(box.top, box.bottom), coveredTop: over(box.top, box.top + 24),
  };
}
"""


async def place(page: Page, selector: str) -> dict[str, Any]:
    await settled(page)
    found: dict[str, Any] = await page.locator(selector).last.evaluate(PLACE_JS)
    return found


def assert_fully_in_view(where: dict[str, Any]) -> None:
    assert where["height"] > 0, where
    assert where["top"] >= where["viewTop"] - 1, where
    assert where["bottom"] <= where["viewBottom"] + 1, where
    assert where["bottom"] <= where["windowBottom"] + 1, where
    assert where["covered"] == [], where


def assert_top_in_view(where: dict[str, Any]) -> None:
    assert where["height"] > 0, where
    assert where["viewTop"] - 1 <= where["top"] < where["viewBottom"] - 24, where
    assert where["coveredTop"] == [], where


LAST_EVENT = "#transcript > .event:not([hidden])"


def tall_text(label: str) -> str:
    return "\n".join(f"{label} line {i}" for i in range(TALL_LINES))


async def long_session(
    server: LiveServer, client: httpx.AsyncClient, project_dir: Path, fake: dict[str, Any]
) -> str:
    """A Claude session (so its messages get the late "Rewind files to here" rows) with
    many rounds of message, tool call, output and answer; its first message is tall."""
    sid = await make_session(client, project_dir, fake)
    events = server.app.state.angelia.events
    events.append(sid, "user_message", {"text": tall_text("first"), "message_id": "u0"})
    for i in range(ROUNDS):
        events.append(sid, "user_message", {"text": f"question {i}", "message_id": f"u{i + 1}"})
        call = {"tool_call_id": f"t{i}", "tool": "Bash", "input": {"command": f"echo {i}"}}
        events.append(sid, "tool_call", call)
        events.append(sid, "tool_result", {"tool_call_id": f"t{i}", "output": f"{i}\n"})
        answer = {"text": f"answer {i}\n\n- one\n- two", "message_id": f"a{i}"}
        events.append(sid, "assistant_message", answer)
        events.append(sid, "turn_end", {"stop_reason": "end_turn"})
    events.append(sid, "assistant_message", {"text": "the very last answer", "message_id": "z"})
    events.flush_sync()
    return sid


@pytest.fixture(params=list(VIEWPORTS))
async def opened(
    request: pytest.FixtureRequest,
    browsing: Browsing,
    server: LiveServer,
    client: httpx.AsyncClient,
    project_dir: Path,
    fake_claude: dict[str, Any],
) -> str:
    """The long session open in the browser at one of the viewports, rewind rows shown."""
    sid = await long_session(server, client, project_dir, fake_claude)
    await browsing.page.set_viewport_size(VIEWPORTS[request.param])
    await browsing.sign_in(f"/sessions/{sid}")
    await expect(browsing.page.locator(".can-rewind .rewind-act").first).to_be_attached()
    return sid


async def test_a_long_session_opens_at_its_last_event_and_stays_there(
    browsing: Browsing, opened: str
) -> None:
    page = browsing.page
    await expect(page.locator(LAST_EVENT).last.locator(".md")).to_have_text("the very last answer")
    assert_fully_in_view(await place(page, LAST_EVENT))
    await page.wait_for_timeout(2000)
    assert_fully_in_view(await place(page, LAST_EVENT))
    assert browsing.log.page_errors == []


async def test_sending_brings_the_view_to_the_message_and_its_reply(
    browsing: Browsing, opened: str, fake_claude: dict[str, Any]
) -> None:
    write_scenario(fake_claude["scenario"], [[{"text": "a short reply", "chunks": 3}]])
    page = browsing.page
    turn_ends = page.locator("#transcript .turn-end")
    # The page opens at its tail, so only the latest of the rounds are shown.
    shown = await turn_ends.count()
    assert 0 < shown <= ROUNDS
    # The reader had scrolled up to read something older before writing.
    await page.locator("#transcript").evaluate("log => { log.scrollTop = log.scrollHeight / 3; }")
    await type_and_send(page, "one more question")
    mine = page.locator("#transcript .msg.user", has_text="one more question")
    await expect(mine).to_have_count(1)
    reply = page.locator("#transcript .msg.assistant", has_text="a short reply")
    await expect(reply).to_have_count(1)
    await expect(turn_ends).to_have_count(shown + 1)
    await settled(page)
    assert_fully_in_view(await mine.evaluate(PLACE_JS))
    assert_fully_in_view(await reply.evaluate(PLACE_JS))
    await expect(page.locator("#jump")).to_be_hidden()


async def test_a_permalink_opens_with_the_top_of_its_event_in_view(
    browsing: Browsing, server: LiveServer, opened: str
) -> None:
    page = browsing.page
    # An early event that fits the view, and one taller than the view.
    await page.goto(f"{server.url}/sessions/{opened}?around=7#e-7")
    target = page.locator("#e-7")
    await expect(target).to_contain_text("question 1")
    await expect(page.locator(".can-rewind .rewind-act").first).to_be_attached()
    await settled(page)
    assert_fully_in_view(await target.evaluate(PLACE_JS))
    await page.wait_for_timeout(2000)
    assert_fully_in_view(await target.evaluate(PLACE_JS))

    await page.goto(f"{server.url}/sessions/{opened}?around=1#e-1")
    target = page.locator("#e-1")
    await expect(target).to_contain_text("first line 0")
    assert_top_in_view(await target.evaluate(PLACE_JS))
    await page.wait_for_timeout(2000)
    assert_top_in_view(await target.evaluate(PLACE_JS))
    assert browsing.log.page_errors == []
