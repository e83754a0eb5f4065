"""What a screen reader is told, read from Chromium's own accessibility tree: the count
of waiting requests is a link inside a status region, every message says who spoke as a
heading, the page's h1 is its first heading, the signed-out page is a whole document,
and the API reference passes axe."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
from playwright.async_api import Browser, Page, expect

from tests.browser.conftest import TIMEOUT_MS, Browsing, axe_page
from tests.browser.demo import finished_session
from tests.browser.test_ui import append, axe_problems
from tests.conftest import TOKEN, LiveServer

pytestmark = pytest.mark.browser

EDIT = {"file_path": "src/auth.py", "old_string": "a", "new_string": "b"}
# Every heading in document order, as the DOM has them (the tree below is Chromium's).
HEADINGS_JS = """
[...document.querySelectorAll("h1, h2, h3, h4, h5, h6, [role=heading]")]
  .filter(h => !h.closest("[hidden], [aria-hidden=true]"))
  .map(h => [Number(h.getAttribute("aria-level") || h.tagName.slice(1)), h.textContent.trim()])
"""


@dataclass(frozen=True)
class AxNode:
    role: str
    name: str
    level: int
    ancestors: tuple[str, ...]  # roles, nearest first


async def ax_tree(page: Page) -> list[AxNode]:
    """Chromium's accessibility tree in document order, without ignored nodes."""
    cdp = await page.context.new_cdp_session(page)
    try:
        found: dict[str, Any] = await cdp.send("Accessibility.getFullAXTree")
    finally:
        await cdp.detach()
    nodes = {n["nodeId"]: n for n in found["nodes"]}

    def value(node: dict[str, Any], key: str) -> str:
        return str((node.get(key) or {}).get("value", ""))

    def level(node: dict[str, Any]) -> int:
        for prop in node.get("properties", []):
            if prop["name"] == "level":
                return int(prop["value"]["value"])
        return 0

    shown: list[AxNode] = []

    def walk(node_id: str, above: tuple[str, ...]) -> None:
        node = nodes[node_id]
        role = value(node, "role")
        if not node.get("ignored"):
            shown.append(AxNode(role, value(node, "name"), level(node), above))
            above = (role, *above)
        for child in node.get("childIds", []):
            if child in nodes:
                walk(child, above)

    root = next(n for n in found["nodes"] if "parentId" not in n)
    walk(root["nodeId"], ())
    return shown


def text(node: AxNode) -> bool:
    """A run of text, not an element of its own."""
    return node.role in ("StaticText", "InlineTextBox")


def pending_card(n: int) -> dict[str, Any]:
    return {
        "permission_id": f"pending-{n}",
        "tool": "Edit",
        "input": EDIT,
        "title": "src/auth.py",
        "status": "pending",
    }


async def test_the_waiting_count_is_a_link_in_a_status_region_told_only_of_changes(
    browsing: Browsing, server: LiveServer, client: httpx.AsyncClient, project_dir: Path
) -> None:
    sid = await finished_session(server, client, project_dir)
    append(server, sid, "permission_request", pending_card(1))
    await browsing.sign_in(f"/sessions/{sid}")
    page = browsing.page
    note = page.locator("#pending-note")
    await expect(note).to_have_text("1 to answer")
    links = [n for n in await ax_tree(page) if n.name.endswith("to answer") and not text(n)]
    assert [(n.role, n.name) for n in links] == [("link", "1 to answer")], links
    assert "status" in links[0].ancestors, links[0]
    # Events that leave the count as it was do not rewrite it: the region would say it again.
    await note.evaluate(
        """el => {
          window.__countChanges = 0;
          new MutationObserver(m => { window.__countChanges += m.length; })
            .observe(el, {childList: true, subtree: true, characterData: true});
        }"""
    )
    append(server, sid, "assistant_message", {"text": "Still waiting.", "message_id": "m9"})
    await expect(page.locator("#transcript .msg.assistant").last).to_contain_text("Still waiting.")
    assert await page.evaluate("window.__countChanges") == 0
    append(server, sid, "permission_request", pending_card(2))
    await expect(note).to_have_text("2 to answer")
    links = [n for n in await ax_tree(page) if n.name.endswith("to answer") and not text(n)]
    assert [(n.role, n.name) for n in links] == [("link", "2 to answer")], links
    assert "status" in links[0].ancestors


async def test_each_message_is_a_heading_naming_who_spoke(
    browsing: Browsing, server: LiveServer, client: httpx.AsyncClient, project_dir: Path
) -> None:
    sid = await finished_session(server, client, project_dir)
    append(
        server,
        sid,
        "assistant_message",
        {"text": "# Summary\n\nAll green.", "message_id": "m-md"},
    )
    await browsing.sign_in(f"/sessions/{sid}")
    page = browsing.page
    await expect(page.locator("#transcript .msg.assistant").last).to_contain_text("All green.")
    headings = [(n.level, n.name) for n in await ax_tree(page) if n.role == "heading"]
    assert headings[0] == (1, "Fix flaky login test"), headings
    spoken = [h for h in headings if h[1] in ("You", "Claude Code")]
    assert (2, "You") in spoken and (2, "Claude Code") in spoken, headings
    # The agent's own "# Summary" is under its message's heading, not a second h1.
    assert (3, "Summary") in headings and [h for h in headings if h[0] == 1] == [headings[0]]
    # A message that arrives live says who spoke too.
    before = await page.get_by_role("heading", name="Claude Code", exact=True).count()
    append(server, sid, "assistant_message", {"text": "Done for now.", "message_id": "m-live"})
    live = page.locator("#transcript .msg.assistant").last
    await expect(live).to_contain_text("Done for now.")
    await expect(live.get_by_role("heading", name="Claude Code", exact=True)).to_have_count(1)
    await expect(page.get_by_role("heading", name="Claude Code", exact=True)).to_have_count(
        before + 1
    )


async def test_the_h1_is_the_first_heading_of_a_session_and_of_history(
    browsing: Browsing, server: LiveServer, client: httpx.AsyncClient, project_dir: Path
) -> None:
    sid = await finished_session(server, client, project_dir)
    await browsing.sign_in(f"/sessions/{sid}")
    page = browsing.page
    for path, title in ((f"/sessions/{sid}", "Fix flaky login test"), ("/sessions", "History")):
        await page.goto(server.url + path)
        # The sidebar lists today's session under its day, which is no heading.
        await expect(page.locator("nav.sidebar .nav-heading")).to_have_text(["Today"])
        await expect(page.get_by_role("list", name="Today")).to_be_visible()
        headings = await page.evaluate(HEADINGS_JS)
        assert headings[0] == [1, title], (path, headings[:3])
        # No level is skipped on the way down.
        levels = [level for level, _ in headings]
        assert all(b <= a + 1 for a, b in zip(levels, levels[1:], strict=False)), headings


async def test_the_signed_out_page_is_a_whole_document(
    browser: Browser, server: LiveServer
) -> None:
    context = await browser.new_context()
    context.set_default_timeout(TIMEOUT_MS)
    page = await context.new_page()
    try:
        answer = await page.goto(f"{server.url}/sessions")
        assert answer is not None and answer.status == 401
        assert await page.title() == "Not signed in · Angelia"
        assert await page.locator("html").get_attribute("lang") == "en"
        tree = await ax_tree(page)
        mains = [n for n in tree if n.role == "main"]
        assert len(mains) == 1
        first = next(n for n in tree if n.role == "heading")
        assert (first.level, first.name) == (1, "This browser is not signed in")
        assert "main" in first.ancestors
    finally:
        await context.close()


async def test_the_api_reference_is_readable_and_passes_axe(
    browser: Browser, server: LiveServer
) -> None:
    problems: list[str] = []
    async with axe_page(browser) as page:
        await page.goto(f"{server.url}/docs?token={TOKEN}")
        # Swagger stays, and sends the reader to the reference first.
        await page.get_by_role("link", name="Read the API reference").click()
        await expect(page).to_have_url(f"{server.url}/api-reference")
        await expect(page.get_by_role("heading", level=1)).to_have_text("API reference")
        sidebar = page.get_by_role("navigation", name="Sessions and pages")
        link = sidebar.get_by_role("link", name="API reference")
        await expect(link).to_have_attribute("aria-current", "page")
        send = page.get_by_role("heading", name="POST /api/sessions/{session_id}/messages")
        await expect(send).to_have_count(1)
        operation = page.get_by_role("article").filter(has=send)
        await expect(operation.get_by_role("table")).to_contain_text("session_id")
        await operation.get_by_role("link", name="MessageIn").click()
        await expect(page).to_have_url(f"{server.url}/api-reference#schema-MessageIn")
        fields = page.get_by_role("table", name="Fields of MessageIn")
        await expect(fields.get_by_role("rowheader", name="text")).to_be_visible()
        assert await page.evaluate("window.__cspViolations") == []
        for scheme in ("light", "dark"):
            await page.emulate_media(color_scheme=scheme)
            problems += [f"{scheme}: {p}" for p in await axe_problems(page)]
        headings = await page.evaluate(HEADINGS_JS)
        levels = [level for level, _ in headings]
        assert levels[0] == 1 and all(b <= a + 1 for a, b in zip(levels, levels[1:], strict=False))
    assert problems == []
