"""The first hour's parallel part in Chromium, on a large and a small laptop and a phone,
against a real ``angelia serve`` child and the fake claude: two agents in worktrees of
one real repository. The sidebar follows both (the second appears, waits and goes live
without a reload); each one's Changes tab shows its edit side by side with every row's
Before and After level; the finish panel's counts agree with the Changes list, the
first is committed and fast-forwarded from the keyboard, and the second, now behind,
is offered only what is possible and merged with a merge commit. Whatever is acted on
is in view and under no fixed bar; the pages run cleanly and axe finds nothing serious."""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

import httpx
import pytest
from playwright.async_api import Browser, BrowserContext, Locator, Page, expect

from tests.api.test_board import bash, profile_with, worktree_session
from tests.browser.conftest import PageLog, settled
from tests.browser.test_chrome import LIVE, open_at
from tests.browser.test_sidebar import open_menu_on_a_phone, sidebar_link
from tests.browser.test_split_diff import ROWS
from tests.browser.test_ui import axe_problems
from tests.conftest import TOKEN
from tests.faults._support import ServerProcess
from tests.helpers import count, wait_for_events
from tests.services.git.conftest import git, init_repo

pytestmark = pytest.mark.browser

VIEWPORTS = {"1366x900": (1366, 900), "1024x700": (1024, 700), "390x844": (390, 844)}
# Unchanged lines as short as much code is: on a laptop each fits its half of the split
# view (about 38 characters at 1024 px wide); the changed one is longer.
SETTINGS = [
    "from pathlib import Path",
    "",
    "DATA_DIR = Path.home() / '.app'",
    "TOKEN_MINUTES = 30",
    "RETRIES = 3",
    "TIMEOUT_SECONDS = 10",
    "LOG_LEVEL = 'info'",
]
SETTINGS_AFTER = [line.replace("30", "int(env('TOKEN_MINUTES', 30))") for line in SETTINGS]
README = ["# app", "", "Run it with `make run`.", "", "Tests: `make test`."]
README_AFTER = [*README[:3], "Settings live in settings.py.", *README[3:]]

# Where an element is against every scrolling box around it and the window, and which
# fixed or sticky bars (outside it) overlap it; ``hit`` says the element itself (or
# something in it) is what a pointer at its centre would reach.
IN_VIEW_JS = """
(el) => {
  const box = el.getBoundingClientRect();
  let frame = {top: 0, left: 0, bottom: window.innerHeight, right: window.innerWidth};
  for (let p = el.parentElement; p && p !== document.body; p = p.parentElement) {
    const css = getComputedStyle(p);
    if (!/(auto|scroll|hidden)/.test(css.overflowX + css.overflowY)) continue;
    const r = p.getBoundingClientRect();
    frame = {
      top: Math.max(frame.top, r.top + p.clientTop),
      left: Math.max(frame.left, r.left + p.clientLeft),
      bottom: Math.min(frame.bottom, r.top + p.clientTop + p.clientHeight),
      right: Math.min(frame.right, r.left + p.clientLeft + p.clientWidth),
    };
  }
  const covered = Array.from(document.querySelectorAll("body *")).filter((n) => {
    const css = getComputedStyle(n);
    if (css.position !== "fixed" && css.position !== "sticky") return false;
    if (n.contains(el) || el.contains(n) || css.visibility === "hidden") return false;
    const r = n.getBoundingClientRect();
    return r.width > 0 && r.height > 0 && r.bottom > box.top + 1 && r.top < box.bottom - 1
      && r.right > box.left + 1 && r.left < box.right - 1;
  }).map((n) => n.id || n.className || n.tagName);
  const hitAt = document.elementFromPoint(box.left + box.width / 2, box.top + box.height / 2);
  return {
    box: {top: box.top, left: box.left, bottom: box.bottom, right: box.right},
    frame, covered, hit: !!hitAt && el.contains(hitAt),
  };
}
"""


async def assert_in_view(target: Locator) -> None:
    """``target`` lies wholly inside its scroll containers and the window, clear of any
    fixed or sticky bar: the user sees what they act on."""
    where: dict[str, Any] = await target.evaluate(IN_VIEW_JS)
    box, frame = where["box"], where["frame"]
    assert box["bottom"] > box["top"], where
    assert box["top"] >= frame["top"] - 1 and box["bottom"] <= frame["bottom"] + 1, where
    assert box["left"] >= frame["left"] - 1 and box["right"] <= frame["right"] + 1, where
    assert where["covered"] == [] and where["hit"], where


async def press(page: Page, target: Locator, key: str = "Enter") -> None:
    """``key`` on the focused ``target``, once it is seen to be in view."""
    await expect(target).to_be_focused()
    await assert_in_view(target)
    await page.keyboard.press(key)


async def click(target: Locator) -> None:
    await target.scroll_into_view_if_needed()
    await assert_in_view(target)
    await target.click()


async def close_menu_on_a_phone(page: Page) -> None:
    toggle = page.get_by_role("button", name="Menu")
    if await toggle.is_visible() and await toggle.get_attribute("aria-expanded") == "true":
        await toggle.click()
        await expect(toggle).to_have_attribute("aria-expanded", "false")


async def assert_sidebar(page: Page, rows: dict[str, tuple[str, str]]) -> None:
    """Each session's sidebar row shows its title and its current status dot."""
    await open_menu_on_a_phone(page)
    for sid, (title, status) in rows.items():
        link = sidebar_link(page, sid)
        await expect(link.locator(".nav-title")).to_have_text(title, timeout=LIVE)
        dot = page.locator(f'nav.sidebar [data-status-of="{sid}"]')
        await expect(dot).to_have_class(f"dot dot-{status}", timeout=LIVE)
    await close_menu_on_a_phone(page)


async def open_split_changes(page: Page, path: str, after: list[str]) -> None:
    """From a session's page, its Changes tab in the split view, every row level, no
    short line wrapped on a laptop; on a phone nothing makes the page scroll sideways."""
    # On a phone the session's tabs are among its folded details.
    details = page.get_by_role("button", name="Details")
    if await details.is_visible() and await details.get_attribute("aria-expanded") == "false":
        await click(details)
    await click(page.get_by_role("link", name="Changes", exact=True))
    await expect(page).to_have_url(re.compile(r"/changes$"))
    await page.wait_for_load_state()
    await click(page.locator("#changes-summary").get_by_role("link", name="split"))
    await expect(page).to_have_url(re.compile(r"/changes\?view=split$"))
    await page.wait_for_load_state()
    table = page.locator(f"section[data-path='{path}'] table.split-diff")
    await expect(table.locator("tr.change").first).to_be_visible()
    await settled(page)
    width = page.viewport_size["width"] if page.viewport_size else 0
    rows: list[dict[str, Any]] = await table.evaluate(ROWS)
    assert [r["texts"][1] for r in rows] == after, rows
    for r in rows:
        assert max(r["tops"]) - min(r["tops"]) <= 1, (width, r)
        assert abs(r["heights"][0] - r["heights"][1]) <= 1, (width, r)
        if width >= 1024 and r["kind"] == "ctx":  # an unchanged line is not wrapped
            assert all(abs(h - r["line"]) <= 1 for h in r["heights"]), (width, r)
    page_width = await page.evaluate("document.documentElement.scrollWidth")
    assert page_width <= width, (page_width, width)
    # No cell's text is cut off inside the table either: long lines wrap in their column.
    clipped = await table.evaluate(
        "t => [...t.querySelectorAll('td')].filter(c => c.scrollWidth > c.clientWidth + 1)"
        ".map(c => c.textContent)"
    )
    assert clipped == [], (width, clipped)


async def finish_counts(page: Page) -> None:
    """The panel counts as many uncommitted files as the Changes list shows."""
    files = await page.locator("#changes-files li").count()
    assert files >= 1
    said = f"{files} uncommitted file{'s' if files != 1 else ''}"
    await expect(page.locator("#finish-dirty")).to_have_text(said)
    await expect(page.locator("#changes-summary")).to_contain_text(
        f"{files} file{'s' if files != 1 else ''} changed"
    )


async def axe_on_changes(browser: Browser, url: str, size: tuple[int, int]) -> list[str]:
    # axe is injected as a script of its own, which the app's CSP rightly refuses; this
    # context alone ignores the policy (the main one checks the pages keep to it).
    context = await browser.new_context(
        viewport={"width": size[0], "height": size[1]}, bypass_csp=True
    )
    try:
        page = await context.new_page()
        await page.goto(f"{url}?view=split&token={TOKEN}")
        await expect(page.locator("#finish-not-possible")).to_be_visible()
        return await axe_problems(page)
    finally:
        await context.close()


def make_repo(folder: Path) -> Path:
    text = {"settings.py": SETTINGS, "README.md": README}
    return init_repo(folder, {name: "\n".join(lines) + "\n" for name, lines in text.items()})


@pytest.mark.parametrize("size", list(VIEWPORTS))
async def test_two_agents_in_parallel_from_the_sidebar_to_main(
    browser: Browser,
    tmp_path: Path,
    project_dir: Path,
    fake_claude: dict[str, Any],
    monkeypatch: pytest.MonkeyPatch,
    size: str,
) -> None:
    width, height = VIEWPORTS[size]
    repo = make_repo(project_dir)
    monkeypatch.setenv("HOME", str(tmp_path))
    server = ServerProcess(tmp_path / "data", tmp_path, env=dict(os.environ)).start()
    context: BrowserContext = await open_at(browser, {"width": width, "height": height})
    log = PageLog()
    try:
        async with server.client() as client:
            await run_the_scenario(browser, context, log, server, client, repo, fake_claude, size)
    finally:
        await context.close()
        server.stop()
    # main has both agents' work, the second joined by a merge commit; the user's
    # checkout of main followed it.
    assert git(repo, "show", "main:settings.py").splitlines() == SETTINGS_AFTER
    assert git(repo, "show", "main:README.md").splitlines() == README_AFTER
    assert len(git(repo, "log", "-1", "--format=%P", "main").split()) == 2
    assert (repo / "README.md").read_text().splitlines() == README_AFTER
    assert git(repo, "status", "--porcelain") == ""


async def run_the_scenario(
    browser: Browser,
    context: BrowserContext,
    log: PageLog,
    server: ServerProcess,
    client: httpx.AsyncClient,
    repo: Path,
    fake: dict[str, Any],
    size: str,
) -> None:
    quiet = await profile_with(client, repo, fake, "settings", [[{"text": "Done."}]])
    asking = await profile_with(
        client, repo, fake, "readme", [[bash("make test"), {"text": "Tests pass."}]]
    )
    # The first agent worked in its worktree before the page was opened.
    one = await worktree_session(client, quiet, "Read the token lifetime from the env")
    r = await client.post(f"/api/sessions/{one['id']}/messages", json={"text": "do it"})
    assert r.status_code == 202, r.text
    await wait_for_events(client, one["id"], count("turn_end"))
    (Path(one["worktree"]["path"]) / "settings.py").write_text("\n".join(SETTINGS_AFTER) + "\n")

    page = await context.new_page()
    page.on("console", log.on_console)
    page.on("pageerror", log.on_page_error)
    await page.goto(f"{server.url}/sessions/{one['id']}?token={TOKEN}")
    await assert_sidebar(page, {one["id"]: (one["title"], "live")})

    # The second starts while the page is open: it appears, asks, is allowed, goes on.
    two = await worktree_session(client, asking, "Say where the settings are")
    r = await client.post(f"/api/sessions/{two['id']}/messages", json={"text": "document it"})
    assert r.status_code == 202, r.text
    await assert_sidebar(
        page, {two["id"]: (two["title"], "waiting"), one["id"]: (one["title"], "live")}
    )
    pending = (await client.get("/api/permissions", params={"status": "pending"})).json()
    r = await client.post(
        f"/api/permissions/{pending[0]['id']}/decision", json={"decision": "allow_once"}
    )
    assert r.status_code == 200, r.text
    await wait_for_events(client, two["id"], count("turn_end"))
    (Path(two["worktree"]["path"]) / "README.md").write_text("\n".join(README_AFTER) + "\n")
    await assert_sidebar(page, {two["id"]: (two["title"], "live")})

    # The first one's changes, side by side, then committed and merged from the keyboard.
    await open_split_changes(page, "settings.py", SETTINGS_AFTER)
    panel = page.locator("#finish")
    await finish_counts(page)
    message = panel.get_by_label("Commit message")
    await message.focus()
    await assert_in_view(message)
    await page.keyboard.press("Control+A")
    await page.keyboard.type("Read the token lifetime from the environment")
    await page.keyboard.press("Tab")
    await press(page, panel.get_by_role("button", name="Commit all changes"))
    await expect(panel.locator("#finish-done")).to_contain_text("Committed")
    await page.wait_for_load_state()
    await expect(panel.locator("#finish-ahead")).to_have_text("1")
    await expect(panel.locator("#finish-behind")).to_have_text("0")
    await expect(panel.locator("#finish-dirty")).to_have_count(0)
    await expect(panel.locator("#finish-not-possible")).to_have_count(0)
    # The commit button is off now: from the message, Tab reaches the first strategy.
    await panel.get_by_label("Commit message").focus()
    await page.keyboard.press("Tab")
    await press(page, panel.get_by_role("button", name="Fast-forward"))
    await expect(panel.locator("#finish-done")).to_contain_text("into main")
    await page.wait_for_load_state()
    await expect(panel.locator("#finish-merged")).to_be_visible()

    # To the second through the sidebar: main moved on, so it cannot simply move there.
    await open_menu_on_a_phone(page)
    await click(sidebar_link(page, two["id"]))
    await expect(page.locator("h1.session-title")).to_have_text(two["title"])
    await page.wait_for_load_state()
    await open_split_changes(page, "README.md", README_AFTER)
    await finish_counts(page)
    await click(panel.get_by_role("button", name="Commit all changes"))
    await expect(panel.locator("#finish-done")).to_contain_text("Committed")
    await page.wait_for_load_state()
    await expect(panel.locator(".finish-where")).to_contain_text("1 commit ahead, 1 behind")
    merge = panel.get_by_role("group", name="Merge into main")
    await expect(merge.get_by_role("button")).to_have_text(["Merge commit", "Squash"])
    await expect(merge.get_by_role("list", name="Not possible now")).to_have_text(
        "Fast-forward: not possible, main has 1 commit this branch does not."
    )
    assert await axe_on_changes(browser, page.url.split("?")[0], VIEWPORTS[size]) == []
    await click(merge.get_by_role("button", name="Merge commit"))
    await expect(panel.locator("#finish-done")).to_contain_text("Merged")
    await page.wait_for_load_state()
    await expect(panel.locator("#finish-merged")).to_be_visible()
    await assert_sidebar(
        page, {one["id"]: (one["title"], "live"), two["id"]: (two["title"], "live")}
    )

    assert log.page_errors == [] and log.console_errors == []
    assert await page.evaluate("window.__cspViolations") == []
