"""axe-core over every page of the app, each in the state that shows the most of it.

One server holds a session waiting on a permission, a question and a plan, a worktree
session with a review comment on its Changes tab, usage to chart and search results. Every
page is scanned at a desktop and a phone width, in light and in dark, signed out (the 401
page) and signed in, and checked for anything wider than the window. The GET routes that
answer HTML are read from the app itself, so a new page fails here until it is added to
``PAGES`` (or, with a reason, to ``NOT_PAGES``).
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any, Literal

import httpx
import pytest
from fastapi import FastAPI
from fastapi.routing import iter_route_contexts
from fastapi.sse import EventSourceResponse
from playwright.async_api import Browser, Page, expect

from tests.api.test_review_comments import comment, edited_session, make_repo
from tests.browser.conftest import CSP_PROBE, TIMEOUT_MS
from tests.browser.test_ui import AXE, chat_page_with_everything
from tests.conftest import TOKEN, LiveServer
from tests.helpers import count, send, wait_for_events
from tests.web.usage.test_pages_usage import seed

pytestmark = pytest.mark.browser

# Every HTML page, by route, with the URL that shows it (filled in from the data below).
PAGES: dict[str, str] = {
    "/": "/",
    "/welcome": "/welcome",
    "/sessions": "/sessions",
    "/sessions/{session_id}": "/sessions/{chat}",
    "/sessions/{session_id}/changes": "/sessions/{worktree}/changes",
    "/search": "/search?q=login",
    "/board": "/board",
    "/usage": "/usage",
    "/permissions": "/permissions",
    "/profiles": "/profiles",
    "/profiles/new": "/profiles/new",
    "/profiles/{profile_id}": "/profiles/{profile}",
    "/profiles/{profile_id}/edit": "/profiles/{profile}/edit",
    "/backends": "/backends",
    "/worktrees": "/worktrees",
    "/signins": "/signins",
    "/devices": "/devices",
    "/api-reference": "/api-reference",
}
# The worktree session's conversation too: its header has the worktree's controls.
EXTRA = ["/sessions/{worktree}"]
# What must be on a page before it is scanned, so the scan sees its fullest state.
SHOWN: dict[str, tuple[str, ...]] = {
    "/sessions/{chat}": (
        '.perm[data-status="pending"][data-prompt="question"]',
        '.perm[data-status="pending"][data-prompt="plan"]',
        '.perm[data-status="pending"]:not([data-prompt="question"]):not([data-prompt="plan"])',
    ),
    "/sessions/{worktree}/changes": (".review-note",),
    "/search?q=login": ("li.hit",),
    "/board": (".board-card",),
    "/usage": ("#cost-chart rect.bar",),
    "/permissions": ("table tr td",),
    "/sessions/{worktree}": ('.perm[data-status="pending"]',),
    "/worktrees": (".table-wrap table tr td",),
    "/signins": ("#signins li",),
}
# GET routes that answer HTML but are not pages of their own.
NOT_PAGES: dict[str, str] = {
    "/docs": "Swagger UI, kept for tools; the app's own reference is /api-reference",
    "/badge": "a fragment the sidebar polls into every page scanned here",
    "/sw.js": "the service worker's script, not a page",
    "/pair": "only on the remote origin (here the scanned 401 page); "
    "tests/browser/test_pairing_flow.py scans it there",
    "/manifest.webmanifest": "the web app manifest (JSON), not a page",
    "/sessions/{session_id}/earlier": "a fragment swapped into the scanned conversation",
    "/sessions/{session_id}/comments": "a fragment swapped into the scanned Changes tab",
    "/sessions/{session_id}/limits": "a fragment swapped into the scanned conversation",
    "/fs/dirs": "a fragment swapped into the scanned profile form's folder picker",
}
# Pages left out of the scan for now, each with why.
NOT_YET_CLEAN: dict[str, str] = {}
# A phone at its narrowest: 360 px is the common small Android, an iPhone is 375-430.
WIDTHS = (1280, 360)
NARROW = 600  # below it the menu and the session's details fold away
SCHEMES: tuple[Literal["light", "dark"], ...] = ("light", "dark")


def html_get_routes(app: FastAPI) -> set[str]:
    """The path of every GET route outside /api that does not answer JSON or an event stream."""
    found = set()
    for ctx in iter_route_contexts(app.routes):
        path, methods = ctx.path_format or ctx.path, ctx.methods
        if not path or not methods or "GET" not in methods:
            continue
        if path.startswith("/api/") or path.endswith(".json"):
            continue
        response_class = getattr(ctx.original_route, "response_class", None)
        if isinstance(response_class, type) and issubclass(response_class, EventSourceResponse):
            continue
        # A stream that writes its batches itself (app/web/sse.py) says so in its docs.
        answers = getattr(ctx.original_route, "responses", None) or {}
        if "text/event-stream" in answers.get(200, {}).get("content", {}):
            continue
        found.add(path)
    return found


def test_every_html_route_is_scanned_or_said_why_not(server: LiveServer) -> None:
    routes = html_get_routes(server.app)
    listed = set(PAGES) | set(NOT_PAGES) | set(NOT_YET_CLEAN)
    assert routes - listed == set(), "a page axe does not scan: add it to PAGES"
    assert listed - routes == set(), "listed but no longer a route"
    assert not set(PAGES) & set(NOT_YET_CLEAN)


# What sticks out past the right edge of the window, where nothing scrolls it back into
# view: a page wider than a phone makes the user pan sideways to read or answer anything.
OVERFLOW_JS = """() => {
  const width = document.documentElement.clientWidth;
  const clipped = (el) => {
    for (let up = el.parentElement; up && up !== document.body; up = up.parentElement) {
      if (getComputedStyle(up).overflowX !== "visible") return true;
    }
    return false;
  };
  return [...document.querySelectorAll("body *")]
    .filter((el) => el.getClientRects().length && el.getBoundingClientRect().right > width + 1
      && !clipped(el))
    .slice(0, 5)
    .map((el) => el.tagName.toLowerCase() + (el.id ? "#" + el.id : "")
      + (el.classList.length ? "." + [...el.classList].join(".") : "")
      + " ends at " + Math.round(el.getBoundingClientRect().right) + " of " + width);
}"""


async def scan(page: Page, url: str, shown: tuple[str, ...] = ()) -> list[str]:
    await page.goto(url)
    await expect(page.locator("h1").first).to_be_visible()
    for selector in shown:
        await expect(page.locator(selector).first).to_be_attached()
    wide: list[str] = await page.evaluate(OVERFLOW_JS)
    # Closed details hide their text from the contrast check: open them all.
    await page.evaluate("document.querySelectorAll('details').forEach(d => d.open = true)")
    return [f"wider than the window: {w}" for w in wide] + await axe_findings(page)


def first_reason(summary: str) -> str:
    """The first of axe's reasons ("Fix any of the following:" then one per line)."""
    lines = [line.strip() for line in summary.splitlines()]
    return lines[1] if len(lines) > 1 else summary


async def unfolded(page: Page) -> list[str]:
    """A phone folds the menu and the session's details: scan the chat with both open."""
    await page.get_by_role("button", name="Menu").click()
    await page.get_by_role("button", name="Details").click()
    await expect(page.locator("#nav-menu")).to_be_visible()
    await expect(page.locator("#head-more")).to_be_visible()
    return await axe_findings(page)


async def axe_findings(page: Page) -> list[str]:
    await page.add_script_tag(path=str(AXE))
    result = await page.evaluate("axe.run(document, {resultTypes: ['violations']})")
    # Each finding with where it is and axe's own words on why, enough to fix it from the log.
    return [
        f"{v['id']} ({v['impact']}) {n['target']}: {first_reason(n['failureSummary'])}"
        for v in result["violations"]
        if v["impact"] in ("serious", "critical")
        for n in v["nodes"][:5]
    ]


async def test_no_page_has_a_serious_axe_finding(
    browser: Browser,
    server: LiveServer,
    client: httpx.AsyncClient,
    project_dir: Path,
    fake_claude: dict[str, Any],
) -> None:
    repo = make_repo(project_dir)
    worktree, _ = await edited_session(client, repo, fake_claude)
    assert (await comment(client, worktree, 2, "Keep it lower case.")).status_code == 201
    # Its next turn asks before an edit: a real waiting request, for the audit and the board.
    await send(client, worktree, "make it Beta")
    await wait_for_events(client, worktree, count("permission_request"))
    chat = await chat_page_with_everything(server, client, repo)
    seed(server, repo)
    profiles = (await client.get("/api/profiles")).json()
    profile = (profiles if isinstance(profiles, list) else profiles["profiles"])[0]["id"]
    ids = {"chat": chat, "worktree": worktree, "profile": profile}
    urls = [url for route, url in PAGES.items() if route not in NOT_YET_CLEAN] + EXTRA

    problems: list[str] = []
    # Light and dark side by side: the browser renders one while the other is checked.
    for width in WIDTHS:
        found = await asyncio.gather(
            *(scan_all(browser, server, width, scheme, urls, ids) for scheme in SCHEMES)
        )
        problems += [p for one in found for p in one]
    assert problems == [], "\n".join(problems)


async def scan_all(
    browser: Browser,
    server: LiveServer,
    width: int,
    scheme: Literal["light", "dark"],
    urls: list[str],
    ids: dict[str, str],
) -> list[str]:
    """Every page in one context of this width and scheme: signed out, then signed in."""
    where = f"{width}px {scheme}"
    context = await browser.new_context(
        viewport={"width": width, "height": 800}, color_scheme=scheme, bypass_csp=True
    )
    context.set_default_timeout(TIMEOUT_MS)
    await context.add_init_script(CSP_PROBE)
    problems: list[str] = []
    try:
        page = await context.new_page()
        # Signed out first: every page answers with the 401 page.
        problems += [f"{where} 401: {p}" for p in await scan(page, server.url + "/sessions")]
        await page.goto(f"{server.url}/signins?token={TOKEN}")
        for url in urls:
            found = await scan(page, server.url + url.format(**ids), SHOWN.get(url, ()))
            problems += [f"{where} {url}: {p}" for p in found]
        if width < NARROW:
            problems += [f"{where} chat, menus open: {p}" for p in await unfolded(page)]
    finally:
        await context.close()
    return problems
