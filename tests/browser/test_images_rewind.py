"""Images in the composer, in a real browser with the fake claude.

What the composer checks before sending, how images go (by fetch, with Enter too) and what
it keeps when the server refuses.
"""

from __future__ import annotations

import base64
from pathlib import Path
from typing import Any

import httpx
import pytest
from playwright.async_api import Page, expect

from tests.api.test_chat import fake_log, make_session
from tests.browser.conftest import Browsing
from tests.helpers import count, of_kind, wait_for_events
from tests.real.test_real_claude_images_rewind import png

pytestmark = pytest.mark.browser

# Builds Files from base64 in the page and hands them over as a paste or a drop would.
TRANSFER_JS = """
([selector, how, files]) => {
  const transfer = new DataTransfer();
  for (const f of files) {
    const bytes = Uint8Array.from(atob(f.data), (c) => c.charCodeAt(0));
    transfer.items.add(new File([bytes], f.name, { type: f.type }));
  }
  const target = document.querySelector(selector);
  if (how === "paste") {
    target.dispatchEvent(new ClipboardEvent("paste", {
      clipboardData: transfer, bubbles: true, cancelable: true,
    }));
  } else {
    for (const type of ["dragenter", "dragover", "drop"]) {
      target.dispatchEvent(new DragEvent(type, {
        dataTransfer: transfer, bubbles: true, cancelable: true,
      }));
    }
  }
}
"""


def image_file(data: bytes, name: str, media_type: str = "image/png") -> dict[str, str]:
    return {"name": name, "type": media_type, "data": base64.b64encode(data).decode()}


async def paste(page: Page, *files: dict[str, str]) -> None:
    await page.evaluate(TRANSFER_JS, ["#composer-text", "paste", list(files)])


async def drop(page: Page, selector: str, *files: dict[str, str]) -> None:
    await page.evaluate(TRANSFER_JS, [selector, "drop", list(files)])


def sent_images(fake: dict[str, Any]) -> list[list[dict[str, Any]]]:
    """The image blocks of each user message the fake claude read on its stdin."""
    out = []
    for entry in fake_log(fake):
        msg = entry.get("stdin", {})
        if msg.get("type") == "user":
            content = msg["message"]["content"]
            blocks = content if isinstance(content, list) else []
            out.append([b for b in blocks if b.get("type") == "image"])
    return out


async def test_images_are_checked_sent_by_fetch_and_shown_in_the_message(
    browsing: Browsing, client: httpx.AsyncClient, project_dir: Path, fake_claude: dict[str, Any]
) -> None:
    sid = await make_session(client, project_dir, fake_claude)
    page = browsing.page
    await browsing.sign_in(f"/sessions/{sid}")
    tray = page.locator("#attach-list li")
    error = page.locator("#composer-error")

    await page.locator("#attach-input").set_input_files(
        files=[{"name": "one.png", "mimeType": "image/png", "buffer": png(2, 2)}]
    )
    await expect(tray).to_have_count(1)
    await paste(
        page, image_file(png(3, 1), "two.png"), image_file(b"hello", "notes.txt", "text/plain")
    )
    await expect(tray).to_have_count(2)
    await expect(error).to_have_text("notes.txt is not a PNG, JPEG, GIF or WebP image.")
    big = b"\x89PNG\r\n\x1a\n" + b"\0" * (5 * 1024 * 1024)
    await drop(page, "#transcript", image_file(big, "big.png"), image_file(png(4, 1), "three.png"))
    await expect(tray).to_have_count(3)
    await expect(error).to_have_text("big.png is larger than 5 MB (5.0 MB).")
    await expect(tray.locator("img").nth(1)).to_have_attribute("alt", "Attached image 2 (two.png)")

    # Removed from the keyboard: focus moves on to the next image's button.
    remove = page.get_by_role("button", name="Remove image 2 (two.png)")
    await remove.focus()
    await page.keyboard.press("Enter")
    await expect(tray).to_have_count(2)
    await expect(page.get_by_role("button", name="Remove image 2 (three.png)")).to_be_focused()

    # Enter sends images without any text.
    await page.locator("#composer-text").focus()
    await page.keyboard.press("Enter")
    await expect(tray).to_have_count(0)
    await expect(error).to_have_text("")
    shown = page.locator(".msg.user .msg-images img")
    await expect(shown).to_have_count(2)
    await expect(shown.first).to_have_attribute("alt", "Attached image 1")
    await expect(page.locator(".msg.user .bubble")).to_be_hidden()
    link = page.locator(".msg.user .msg-images a").first
    await expect(link).to_have_attribute("target", "_blank")
    await expect(link).to_have_attribute("rel", "noopener")
    # Served (with the cookie) and decoded by the browser.
    assert await shown.evaluate_all("imgs => imgs.every(i => i.complete && i.naturalWidth > 0)")

    await wait_for_events(client, sid, count("turn_end"))
    [blocks] = sent_images(fake_claude)
    assert [b["source"]["data"] for b in blocks] == [
        base64.b64encode(png(2, 2)).decode(),
        base64.b64encode(png(4, 1)).decode(),
    ]
    await page.reload()
    await expect(shown).to_have_count(2)
    assert await browsing.csp_violations() == []
    assert browsing.log.page_errors == []


async def test_a_refused_image_keeps_the_text_and_the_images(
    browsing: Browsing, client: httpx.AsyncClient, project_dir: Path, fake_claude: dict[str, Any]
) -> None:
    sid = await make_session(client, project_dir, fake_claude)
    page = browsing.page
    await browsing.sign_in(f"/sessions/{sid}")
    # Called a PNG, but not one: only the server can tell.
    await paste(page, image_file(b"GIF89a not really", "fake.png"))
    await expect(page.locator("#attach-list li")).to_have_count(1)
    box = page.locator("#composer-text")
    await box.fill("look at this")
    await page.get_by_role("button", name="Send").click()
    await expect(page.locator("#composer-error")).to_have_text(
        "Image 1: says image/png but the data is image/gif"
    )
    await expect(box).to_have_value("look at this")
    await expect(page.locator("#attach-list li")).to_have_count(1)
    events = (await client.get(f"/api/sessions/{sid}/events")).json()["events"]
    assert of_kind(events, "user_message") == []

    # Removing it, the text goes through the ordinary form.
    await page.get_by_role("button", name="Remove image 1 (fake.png)").click()
    await box.focus()
    await page.keyboard.press("Enter")
    await expect(page.locator(".msg.user .bubble")).to_have_text("look at this")
    await expect(page.locator(".msg.user .msg-images")).to_have_count(0)
