"""Images in the composer and rewinding files, in a real browser with the fake claude.

What the composer checks before sending, what it keeps when the server refuses, and the
rewind dialog's answers (files relative to the folder, none, a refusal). The real Claude
Code CLI takes the same paths in tests/real/test_real_claude_browser_images.py.
"""

from __future__ import annotations

import base64
import re
from pathlib import Path
from typing import Any

import httpx
import pytest
from playwright.async_api import Page, expect

from tests.api.test_chat import fake_log, make_session
from tests.browser.conftest import Browsing
from tests.conftest import write_scenario
from tests.helpers import count, of_kind, send, wait_for_events
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


async def rewind_session(
    client: httpx.AsyncClient, project_dir: Path, fake: dict[str, Any], answer: dict[str, Any]
) -> str:
    write_scenario(fake["scenario"], [[{"text": "done"}]], rewind=answer)
    sid = await make_session(client, project_dir, fake)
    await send(client, sid, "change the files")
    await wait_for_events(client, sid, count("turn_end"))
    return sid


async def test_rewind_asks_first_then_rewinds_and_says_so(
    browsing: Browsing, client: httpx.AsyncClient, project_dir: Path, fake_claude: dict[str, Any]
) -> None:
    files = [str(project_dir / "src" / "a.py"), "/elsewhere/<b>.txt"]
    answer = {"filesChanged": files, "insertions": 3, "deletions": 1}
    sid = await rewind_session(client, project_dir, fake_claude, answer)
    page = browsing.page
    await browsing.sign_in(f"/sessions/{sid}")
    message = page.locator(".msg.user")
    await message.hover()
    action = message.get_by_role("button", name="Rewind files to here (before message #1)")
    await action.click()
    dialog = page.locator("#rewind-dialog")
    await expect(dialog).to_be_visible()
    await expect(dialog.locator("#rewind-quote")).to_have_text("change the files")
    await expect(dialog.locator("#rewind-files li")).to_have_text(
        ["/elsewhere/<b>.txt", "src/a.py"]
    )
    await expect(dialog.locator("#rewind-stats")).to_have_text("+3 / −1 lines")
    go = dialog.get_by_role("button", name="Rewind")
    await expect(go).to_be_focused()
    # Nothing happened yet: the dry run only asked.
    events = (await client.get(f"/api/sessions/{sid}/events")).json()["events"]
    assert of_kind(events, "rewind") == []

    await go.click()
    await expect(dialog).to_be_hidden()
    line = page.locator(".event.rewind")
    await expect(line).to_have_text(
        "↶ Files rewound to before message #1: /elsewhere/<b>.txt, src/a.py"
    )
    await expect(action).to_be_focused()
    await page.reload()
    await expect(line).to_contain_text("/elsewhere/<b>.txt, src/a.py")
    requests = [
        e["stdin"]["request"]
        for e in fake_log(fake_claude)
        if e.get("stdin", {}).get("request", {}).get("subtype") == "rewind_files"
    ]
    assert [r.get("dry_run", False) for r in requests] == [True, True, False]
    assert browsing.log.page_errors == []


@pytest.mark.parametrize(
    ("answer", "says"),
    [
        ({}, "No file changes to undo since this message."),
        (
            {"canRewind": False, "error": "no checkpoint"},
            "Claude Code cannot rewind the files: no checkpoint",
        ),
    ],
)
async def test_rewind_with_nothing_to_do_only_closes(
    browsing: Browsing,
    client: httpx.AsyncClient,
    project_dir: Path,
    fake_claude: dict[str, Any],
    answer: dict[str, Any],
    says: str,
) -> None:
    sid = await rewind_session(client, project_dir, fake_claude, answer)
    page = browsing.page
    await browsing.sign_in(f"/sessions/{sid}")
    await page.get_by_role("button", name="Rewind files to here (before message #1)").click()
    dialog = page.locator("#rewind-dialog")
    await expect(dialog.locator("#rewind-status")).to_have_text(says)
    await expect(dialog.get_by_role("button", name="Rewind")).to_be_hidden()
    close = dialog.get_by_role("button", name="Close")
    await expect(close).to_be_focused()
    await page.keyboard.press("Escape")
    await expect(dialog).to_be_hidden()
    events = (await client.get(f"/api/sessions/{sid}/events")).json()["events"]
    assert of_kind(events, "rewind") == []


async def test_rewind_shows_on_a_queued_message_only_once_it_has_gone(
    browsing: Browsing, client: httpx.AsyncClient, project_dir: Path, fake_claude: dict[str, Any]
) -> None:
    approval = {"tool": "Bash", "input": {"command": "touch x"}, "permission": True}
    write_scenario(fake_claude["scenario"], [[approval, {"text": "done"}]])
    sid = await make_session(client, project_dir, fake_claude)
    page = browsing.page
    await browsing.sign_in(f"/sessions/{sid}")
    await send(client, sid, "run touch")
    card = page.locator('.perm[data-status="pending"]')
    await expect(card).to_have_count(1)
    r = await client.post(f"/api/sessions/{sid}/messages", json={"text": "and then this"})
    assert r.json()["queued"] is True
    queued = page.locator('.msg.user[data-queue="waiting"]')
    await expect(queued).to_have_count(1)
    await expect(queued.locator(".rewind-act")).to_be_hidden()

    await card.get_by_role("button", name=re.compile("^Allow once")).click()
    sent = page.locator('.msg.user[data-queue="sent"]')
    await expect(sent.locator(".rewind-act")).to_be_visible()
    await expect(page.locator(".rewind-act")).to_have_count(2)
