"""The composer's @ file mentions and described slash commands, in a real browser.

Typing "@" lists the session folder's files (git's view) fuzzy-filtered as the word grows;
ArrowDown/ArrowUp move, Enter takes one, Escape closes the list without stopping the turn;
the list stays on screen at phone width, and file names are shown as text. The slash list
shows each command's description as the CLI reported it.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import httpx
import pytest
from playwright.async_api import Browser, expect

from tests.api.test_chat import make_session as make_fake_session
from tests.browser.conftest import TIMEOUT_MS, Browsing, settled
from tests.browser.demo import finished_session
from tests.browser.test_screenshots import shots  # noqa: F401
from tests.conftest import TOKEN, LiveServer, write_scenario
from tests.helpers import send
from tests.services.git.conftest import init_repo

pytestmark = pytest.mark.browser

HOSTILE = "<img src=x onerror=alert(1)>.txt"
SIZES = {"desktop": (1280, 800), "phone": (360, 740)}


def make_project(root: Path) -> None:
    init_repo(root, {".gitignore": "secret.txt\n", "README.md": "hi\n"})
    for rel in ("app/services/files.py", "app/web/chat/files.py", "docs/guide.md", HOSTILE):
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text("x\n")
    (root / "secret.txt").write_text("ignored\n")


@pytest.mark.parametrize("size", list(SIZES))
async def test_at_lists_files_and_the_keyboard_picks_one(
    browsing: Browsing,
    client: httpx.AsyncClient,
    project_dir: Path,
    fake_claude: dict[str, Any],
    size: str,
) -> None:
    make_project(project_dir)
    sid = await make_fake_session(client, project_dir, fake_claude)
    page = browsing.page
    width, height = SIZES[size]
    await page.set_viewport_size({"width": width, "height": height})
    await browsing.sign_in(f"/sessions/{sid}")
    box = page.locator("#composer-text")
    menu = page.locator("#mentions")
    options = page.locator("#mentions-list li")

    # Characters in order, not a substring: "srvfl" is app/services/files.py.
    await box.click()
    await page.keyboard.type("please read @srvfl")
    await expect(menu).to_be_visible()
    await expect(options).to_have_text(["app/services/files.py"])
    await expect(options.first).to_have_attribute("aria-selected", "true")
    await expect(box).to_have_attribute("aria-controls", "mentions-list")
    await expect(box).to_have_attribute("aria-activedescendant", "mention-opt-1")
    # Nothing of it is out of view or under the fixed bars, at any width.
    await settled(page)
    shown = await menu.bounding_box()
    assert shown is not None
    assert shown["x"] >= 0 and shown["x"] + shown["width"] <= width
    head = await page.locator("#session-head").bounding_box()
    assert head is not None and shown["y"] >= head["y"] + head["height"]

    # The word grows: the list follows; ArrowDown moves, Enter takes the active one.
    await page.keyboard.press("Backspace")
    await page.keyboard.press("Backspace")
    await page.keyboard.press("Backspace")
    await page.keyboard.press("Backspace")
    await page.keyboard.press("Backspace")
    await page.keyboard.type("files")
    await expect(options).to_have_text(["app/services/files.py", "app/web/chat/files.py"])
    await page.keyboard.press("ArrowDown")
    await expect(options.nth(1)).to_have_attribute("aria-selected", "true")
    await page.keyboard.press("ArrowDown")
    await expect(options.nth(0)).to_have_attribute("aria-selected", "true")
    await page.keyboard.press("ArrowUp")
    await page.keyboard.press("Enter")
    await expect(box).to_have_value("please read @app/web/chat/files.py ")
    await expect(menu).to_be_hidden()

    # Git's view: an ignored file is not offered; a miss says so.
    await page.keyboard.type("@secret")
    await expect(page.locator("#mentions-empty")).to_have_text("No file matches.")
    await expect(options).to_have_count(0)

    # Escape closes the list and leaves the message (it does not stop the turn).
    await box.fill("")
    await page.keyboard.type("@img")
    await expect(options).to_have_text([HOSTILE])
    assert await page.locator("#mentions-list img").count() == 0
    await page.keyboard.press("Escape")
    await expect(menu).to_be_hidden()
    await expect(box).to_have_value("@img")
    # Enter with the list closed sends the message as typed.
    await page.keyboard.press("Enter")
    await expect(page.locator("#transcript")).to_contain_text("@img")
    assert browsing.log.page_errors == []
    assert await browsing.csp_violations() == []


async def test_the_slash_list_shows_the_descriptions_the_cli_reports(
    browsing: Browsing, client: httpx.AsyncClient, project_dir: Path, fake_claude: dict[str, Any]
) -> None:
    commands = [
        {"name": "deploy-notes", "description": "Write the deploy notes (project)"},
        {"name": "greet", "description": "<b>Greets</b> the user (project)"},
    ]
    write_scenario(fake_claude["scenario"], [[{"text": "hi"}]], commands=commands)
    sid = await make_fake_session(client, project_dir, fake_claude)
    page = browsing.page
    await browsing.sign_in(f"/sessions/{sid}")
    box = page.locator("#composer-text")
    options = page.locator("#slash-list li")

    # Live: the CLI describes its commands when it starts and names them with the turn.
    await send(client, sid, "hello")
    await expect(options).to_have_count(4)
    await box.click()
    await page.keyboard.type("/de")
    await expect(options.filter(visible=True)).to_have_text(
        ["/deploy-notes Write the deploy notes (project)"]
    )
    await box.fill("")
    await page.keyboard.type("/gr")
    await expect(options.filter(visible=True).locator(".menu-desc")).to_have_text(
        "<b>Greets</b> the user (project)"
    )
    await page.keyboard.press("Enter")
    await expect(box).to_have_value("/greet ")

    # And after a reload, from the stored events.
    await page.reload()
    await page.locator("#composer-text").click()
    await page.keyboard.type("/dep")
    await expect(options.filter(visible=True)).to_have_text(
        ["/deploy-notes Write the deploy notes (project)"]
    )
    assert browsing.log.page_errors == []


@pytest.mark.skipif(
    os.environ.get("ANGELIA_SCREENSHOTS") != "1", reason="set ANGELIA_SCREENSHOTS=1"
)
async def test_screenshot_of_the_mention_list(
    browser: Browser,
    server: LiveServer,
    client: httpx.AsyncClient,
    shots: tuple[Path, Path],  # noqa: F811 (the fixture imported above)
) -> None:
    out, cwd = shots
    init_repo(cwd, {".gitignore": ".venv/\n", "README.md": "# app\n"})
    for rel in (
        "src/auth.py",
        "src/auth_tokens.py",
        "src/settings.py",
        "tests/test_auth.py",
        "tests/test_login.py",
        "docs/authentication.md",
    ):
        (cwd / rel).parent.mkdir(parents=True, exist_ok=True)
        (cwd / rel).write_text("\n")
    sid = await finished_session(server, client, cwd)
    context = await browser.new_context(viewport={"width": 1200, "height": 800})
    context.set_default_timeout(TIMEOUT_MS)
    page = await context.new_page()
    try:
        await page.goto(f"{server.url}/sessions/{sid}?token={TOKEN}")
        await page.locator("#composer-text").click()
        await page.keyboard.type("Also check the expiry in @auth")
        await expect(page.locator("#mentions-list li")).to_have_count(4)
        await page.keyboard.press("ArrowDown")
        await page.screenshot(path=str(out / "mentions.png"))
    finally:
        await context.close()
