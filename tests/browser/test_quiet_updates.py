"""Live updates heard through a screen reader and used from the keyboard, in Chromium: a
waiting approval says nothing new while it waits, the badge's poll and the board's
updates leave focus where it was, the board says one short line per change, and an
approval in another session is said once."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import httpx
import pytest
from playwright.async_api import Page, expect

from tests.api.test_board import bash, profile_with, worktree_session
from tests.api.test_worktree_sessions import repo
from tests.browser.conftest import Browsing
from tests.helpers import count, send, wait_for_events
from tests.services.git.conftest import commit_all

pytestmark = pytest.mark.browser
__all__ = ["repo"]

# Records, per live region of the page, each new text it would be read as (what
# aria-hidden hides left out) and each write into it outside what aria-hidden hides.
RECORD = """() => {
  const said = (node) => {
    if (node.nodeType === 3) return node.data;
    if (node.nodeType !== 1 || node.hidden) return "";
    if (node.getAttribute("aria-hidden") === "true") return "";
    let out = "";
    for (const child of node.childNodes) out += said(child);
    return out;
  };
  const LIVE = "[aria-live], [role=log], [role=status], [role=alert]";
  const last = new Map();
  window.heard = [];
  window.writes = [];
  const read = () => {
    for (const region of document.querySelectorAll(LIVE)) {
      const text = said(region).replace(/\\s+/g, " ").trim();
      if (last.has(region) && last.get(region) !== text) {
        window.heard.push({ region: region.id || region.className, text });
      }
      last.set(region, text);
    }
  };
  read();
  new MutationObserver((mutations) => {
    for (const m of mutations) {
      const el = m.target.nodeType === 1 ? m.target : m.target.parentElement;
      if (el && el.closest(LIVE) && !el.closest("[aria-hidden=true]")) {
        window.writes.push(el.id || el.className || el.tagName);
      }
    }
    read();
  }).observe(document.body, { childList: true, characterData: true, subtree: true });
}"""


async def heard(page: Page) -> list[dict[str, str]]:
    said: list[dict[str, str]] = await page.evaluate("window.heard")
    return said


async def focused(page: Page) -> str:
    """The focused element, as tag#id.class[href]."""
    name: str = await page.evaluate(
        """() => { const el = document.activeElement;
          const href = el.getAttribute("href") || "";
          return el.tagName + "#" + el.id + "." + el.className + "[" + href + "]"; }"""
    )
    return name


async def waiting_session(
    client: httpx.AsyncClient, folder: Path, fake: dict[str, Any], title: str
) -> str:
    pid = await profile_with(client, folder, fake, title, [[bash(f"make {title}"), {"text": "ok"}]])
    r = await client.post("/api/sessions", json={"profile_id": pid, "title": title})
    assert r.status_code == 201, r.text
    sid: str = r.json()["id"]
    await send(client, sid, "go")
    await wait_for_events(client, sid, count("permission_request"))
    return sid


async def test_a_waiting_approval_is_quiet_and_the_badge_keeps_focus(
    browsing: Browsing, client: httpx.AsyncClient, project_dir: Path, fake_claude: dict[str, Any]
) -> None:
    alpha = await waiting_session(client, project_dir, fake_claude, "alpha")
    page = browsing.page
    await browsing.sign_in(f"/sessions/{alpha}")
    card = page.locator('.perm[data-status="pending"]')
    # The ticker is for the eye; assistive tech hears when it was asked, once.
    asked = re.compile(r"^Needs approval Bash \(asked at \S*\d\d")
    await expect(card).to_have_accessible_name(asked)
    await expect(card.locator(".perm-wait")).to_have_attribute("aria-hidden", "true")
    badge = page.locator("#pending-badge .badge")
    await expect(badge).to_have_attribute("data-count", "1")
    await badge.focus()
    await page.evaluate(RECORD)

    await page.wait_for_timeout(10_000)  # three polls of the badge, ten ticks of the clock
    assert await heard(page) == []
    assert await page.evaluate("window.writes") == []
    assert await focused(page) == "A#.badge[/permissions?status=pending]"

    # An approval in another session: said once, in one short line, and the badge's
    # link keeps the focus as its count changes.
    await waiting_session(client, project_dir, fake_claude, "beta")
    await expect(badge).to_have_attribute("data-count", "2")
    await page.wait_for_timeout(7_000)  # two more polls
    assert await heard(page) == [{"region": "pending-said", "text": "beta needs approval: Bash"}]
    assert await focused(page) == "A#.badge[/permissions?status=pending]"
    assert browsing.log.page_errors == [] and browsing.log.console_errors == []
    assert await browsing.csp_violations() == []


async def test_the_board_says_short_lines_and_keeps_focus(
    browsing: Browsing, client: httpx.AsyncClient, repo: Path, fake_claude: dict[str, Any]
) -> None:
    asking = await profile_with(
        client, repo, fake_claude, "asking", [[bash("make test"), {"text": "Tests pass."}]]
    )
    page = browsing.page
    await browsing.sign_in("/board")
    await page.evaluate(RECORD)
    a = await worktree_session(client, asking, "beta")
    await send(client, a["id"], "run them")
    card = page.locator(f"#board-{a['id']}")
    await expect(card.locator(".board-asks code")).to_have_text("make test")

    # A card replaced by the stream keeps the focus on the same control.
    opened = card.get_by_role("link", name="Open")
    await opened.focus()
    wt = Path(a["worktree"]["path"])
    (wt / "g.txt").write_text("g\n")
    commit_all(wt, "add g")
    await expect(card.locator("[data-field=files]")).to_have_text("1 file changed")
    assert await focused(page) == f"A#.btn small[/sessions/{a['id']}]"

    # Answered from the keyboard: focus stays in the card, never on <body>.
    await card.get_by_role("button", name="Allow once").focus()
    await page.keyboard.press("Enter")
    await wait_for_events(client, a["id"], count("turn_end"))
    await expect(card.locator("[data-field=status]")).to_have_text("live")
    assert await page.evaluate(
        f"document.getElementById('board-{a['id']}').contains(document.activeElement)"
    )
    assert not await page.evaluate("document.activeElement === document.body")

    lines = [h["text"] for h in await heard(page) if h["region"] == "board-said" and h["text"]]
    assert "beta needs approval: Bash" in lines
    assert lines[-1] == "beta finished"
    assert all(len(line) < 80 for line in lines), lines
    # The cards themselves say nothing: only the status line does.
    assert {h["region"] for h in await heard(page)} <= {"board-said"}
    assert browsing.log.page_errors == [] and browsing.log.console_errors == []
