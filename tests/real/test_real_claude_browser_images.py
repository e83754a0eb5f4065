"""Images and rewinding files from the chat page, with the real Claude Code CLI.

A user pastes images into the composer, removes one and sends: the message shows the
rest and the fake model receives exactly those. A file the agent wrote is put back (here:
removed) through "Rewind files to here" and its confirm dialog.
"""

from __future__ import annotations

import base64
import re
from pathlib import Path
from typing import Any

import httpx
import pytest
from playwright.async_api import expect

from tests.browser.conftest import Browsing
from tests.browser.test_images_rewind import image_file, paste
from tests.fakes.fake_model_server import FakeModelServer, request_images
from tests.helpers import count, of_kind, wait_for_events
from tests.real.test_real_claude_images_rewind import png

pytestmark = [pytest.mark.real_cli, pytest.mark.browser]


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


async def test_pasted_images_reach_the_model_and_show_in_the_message(
    browsing: Browsing,
    client: httpx.AsyncClient,
    claude_session: str,
    fake_model: FakeModelServer,
) -> None:
    sid = claude_session
    page = browsing.page
    await browsing.sign_in(f"/sessions/{sid}")
    tray = page.locator("#attach-list li")
    first, second, third = png(2, 1), png(3, 2), png(5, 3)

    await page.locator("#composer-text").click()
    await paste(page, image_file(first, "first.png"), image_file(second, "second.png"))
    await expect(tray).to_have_count(2)
    await page.locator("#attach-input").set_input_files(
        files=[{"name": "third.png", "mimeType": "image/png", "buffer": third}]
    )
    await expect(tray).to_have_count(3)
    await page.get_by_role("button", name="Remove image 2 (second.png)").click()
    await expect(tray).to_have_count(2)

    await page.locator("#composer-text").click()
    await page.keyboard.type("what is in these images")
    await page.keyboard.press("Enter")
    await expect(page.locator("#composer-text")).to_have_value("")
    await expect(tray).to_have_count(0)
    bubble_images = page.locator(".msg.user .msg-images img")
    await expect(bubble_images).to_have_count(2)
    await expect(page.locator(".msg.user .bubble")).to_have_text("what is in these images")
    await expect(page.locator(".msg.assistant .md")).to_have_text("hello from fake")

    sent = [i for e in fake_model.message_requests() for i in request_images(e)]
    assert [i["source"] for i in sent[:2]] == [
        {"type": "base64", "media_type": "image/png", "data": b64(first)},
        {"type": "base64", "media_type": "image/png", "data": b64(third)},
    ]
    assert b64(second) not in {i["source"]["data"] for i in sent}

    # The same images after a reload, served behind the cookie.
    await page.reload()
    await expect(bubble_images).to_have_count(2)
    hrefs = await page.locator(".msg.user .msg-images a").evaluate_all(
        "links => links.map(a => a.getAttribute('href'))"
    )
    for href, data in zip(hrefs, (first, third), strict=True):
        served = await page.request.get(browsing.server.url + href)
        assert served.ok and await served.body() == data
    assert await bubble_images.evaluate_all("imgs => imgs.every(i => i.naturalWidth > 0)")
    assert await browsing.csp_violations() == []
    assert browsing.log.page_errors == []


@pytest.fixture
def fake_rules(project_dir: Path) -> dict[str, Any]:
    write = {"file_path": str(project_dir / "notes.txt"), "content": "written by the agent\n"}
    return {"rules": [{"match": "write the notes", "tool": "Write", "input": write}]}


async def test_rewind_from_the_page_removes_the_file_the_agent_wrote(
    browsing: Browsing, client: httpx.AsyncClient, claude_session: str, project_dir: Path
) -> None:
    sid = claude_session
    notes = project_dir / "notes.txt"
    page = browsing.page
    await browsing.sign_in(f"/sessions/{sid}")
    await page.locator("#composer-text").fill("write the notes")
    await page.keyboard.press("Enter")
    card = page.locator('.perm[data-status="pending"]')
    await card.get_by_role("button", name=re.compile("^Allow once")).click()
    await wait_for_events(client, sid, count("turn_end"))
    assert notes.read_text() == "written by the agent\n"

    message = page.locator(".msg.user")
    await message.hover()
    await message.get_by_role("button", name="Rewind files to here (before message #1)").click()
    dialog = page.locator("#rewind-dialog")
    await expect(dialog.locator("#rewind-files li")).to_have_text(["notes.txt"])
    assert notes.exists()  # the dry run changed nothing
    await dialog.get_by_role("button", name="Rewind").click()
    await expect(dialog).to_be_hidden()
    line = page.locator(".event.rewind")
    await expect(line).to_have_text("↶ Files rewound to before message #1: notes.txt")
    assert not notes.exists()

    events = (await client.get(f"/api/sessions/{sid}/events")).json()["events"]
    [rewind] = of_kind(events, "rewind")
    assert rewind["files"] == [str(notes)] and rewind["event_seq"] == 1
    await page.reload()
    await expect(line).to_have_text("↶ Files rewound to before message #1: notes.txt")
    assert browsing.log.page_errors == []
