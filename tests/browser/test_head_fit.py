"""The chat page's header in Chromium, from a phone to a large desktop: the permission
mode and model pickers show every option whole when it is the chosen one, and the header
stays inside the window."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest
from playwright.async_api import Browser, expect

from tests.browser.conftest import TIMEOUT_MS, settled
from tests.browser.test_ui import chat_page_with_everything
from tests.conftest import TOKEN, LiveServer

pytestmark = pytest.mark.browser

# Each option in turn as the shown one (set without an event: nothing is switched): how
# wide the select has to be to show it whole (a copy holding only that option, in the same
# place so the same rules style it, but free to take the width it needs), how wide it is,
# and which of the header's controls then stand outside the header or the window.
MEASURE = """
id => [...document.getElementById(id).options].map(option => {
  const select = document.getElementById(id);
  select.value = option.value;
  const copy = select.cloneNode(false);
  copy.removeAttribute("id");
  copy.appendChild(option.cloneNode(true));
  copy.style.cssText =
    "position:absolute;visibility:hidden;width:auto;min-width:0;max-width:none;flex:none";
  select.parentNode.appendChild(copy);
  const need = copy.getBoundingClientRect().width;
  copy.remove();
  const head = document.getElementById("session-head");
  const edge = head.getBoundingClientRect();
  const out = [...head.querySelectorAll(".head-bar > *, .head-more > *, select, button, a")]
    .filter(el => el.getClientRects().length)
    .filter(el => {
      const box = el.getBoundingClientRect();
      return box.left < edge.left - 0.5 || box.right > Math.min(edge.right, innerWidth) + 0.5;
    })
    .map(el => el.id || el.className);
  return {text: option.text, need: need, width: select.getBoundingClientRect().width,
          out: out, overflows: head.scrollWidth > head.clientWidth,
          sideways: document.documentElement.scrollWidth > innerWidth};
})
"""


@pytest.mark.parametrize("width", [390, 1024, 1280, 1366, 1440, 1920])
async def test_the_header_pickers_show_their_choice_whole(
    browser: Browser,
    server: LiveServer,
    client: httpx.AsyncClient,
    project_dir: Path,
    width: int,
) -> None:
    # A busy header: requests waiting, costs, the context gauge, both pickers.
    sid = await chat_page_with_everything(server, client, project_dir)
    context = await browser.new_context(viewport={"width": width, "height": 800})
    context.set_default_timeout(TIMEOUT_MS)
    page = await context.new_page()
    try:
        await page.goto(f"{server.url}/sessions/{sid}?token={TOKEN}")
        if width < 480:
            # A phone folds the pickers behind one button.
            await page.get_by_role("button", name="Details").click()
        for picker in ("mode-select", "model-select"):
            await expect(page.locator(f"#{picker}")).to_be_visible()
            await settled(page)
            shown = await page.evaluate(MEASURE, picker)
            assert len(shown) > 1, picker
            for option in shown:
                assert option["width"] >= option["need"] - 0.5, (width, picker, option)
                assert option["out"] == [], (width, picker, option)
                assert not option["overflows"] and not option["sideways"], (width, option)
    finally:
        await context.close()


async def test_the_mode_picker_says_what_the_chosen_mode_means(
    browser: Browser, server: LiveServer, client: httpx.AsyncClient, project_dir: Path
) -> None:
    # The options name the mode alone; its meaning is the picker's description, for a
    # screen reader, and its title, for a pointer, and both follow a new choice.
    sid = await chat_page_with_everything(server, client, project_dir)
    context = await browser.new_context(viewport={"width": 1366, "height": 900})
    context.set_default_timeout(TIMEOUT_MS)
    page = await context.new_page()
    try:
        await page.goto(f"{server.url}/sessions/{sid}?token={TOKEN}")
        picker = page.get_by_role("combobox", name="Permission mode")
        await expect(picker).to_have_accessible_description("asks before changes")
        await picker.select_option("plan")
        await expect(picker).to_have_accessible_description("plans only, changes nothing")
        await expect(picker).to_have_attribute(
            "title", "Permission mode: plans only, changes nothing"
        )
    finally:
        await context.close()
