"""Hostile agent output, played by a fake ``claude`` into a real session, in real Chromium.

Each payload tries to run script (setting ``window.pwned``), open a dialog, fetch from
another host, or disguise itself. It reaches every surface that shows agent output: the
streamed text, the finished Markdown message, thinking, a tool call's input, its output,
an error output, a permission card, a denial message, a crash's stderr, and the user's
own message and the session title. The page is checked twice: as the live stream built it,
and after a reload (the stored rendering).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import sys
from collections.abc import AsyncIterator, Awaitable
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx
import pytest

from tests.conftest import TOKEN, LiveServer, write_scenario
from tests.helpers import count, wait_for_events
from tests.security._support import app_endpoints, make_session

pytestmark = pytest.mark.browser

CHROMIUM = os.environ.get("ANGELIA_CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
HOSTILE_FAKE = Path(__file__).with_name("hostile_claude.py")

# (payload, what must be visible where it is rendered as Markdown). Pre-formatted
# surfaces (tool input/output, user text, stderr) must show the payload itself.
PAYLOADS: list[tuple[str, str]] = [
    ("<script>window.pwned=1;alert(1)</script>", "<script>window.pwned=1;alert(1)</script>"),
    ('<img src=x onerror="window.pwned=2;alert(2)">', '<img src=x onerror="window.pwned=2'),
    ('<a href="#" onclick="window.pwned=3">click me</a>', 'onclick="window.pwned=3"'),
    ('<div onmouseover="window.pwned=4" id="cover">cover</div>', 'onmouseover="window.pwned=4"'),
    ("[js link](javascript:window.pwned=5)", "[js link](javascript:window.pwned=5)"),
    (
        "[data link](data:text/html;base64,PHNjcmlwdD5wYXJlbnQucHduZWQ9Njwvc2NyaXB0Pg==)",
        "[data link](data:text/html;base64,",
    ),
    ("![pixel](javascript:window.pwned=7)", "![pixel](javascript:window.pwned=7)"),
    ("![tracker](http://evil.example/track.png)", "Image: tracker"),
    (
        '<svg onload="window.pwned=8"><script>window.pwned=9</script></svg>',
        '<svg onload="window.pwned=8"><script>window.pwned=9</script></svg>',
    ),
    ("<!-- a comment --><b>not bold</b>", "<!-- a comment --><b>not bold</b>"),
    (
        '<iframe src="javascript:parent.pwned=10"></iframe>',
        '<iframe src="javascript:parent.pwned=10"></iframe>',
    ),
    ('<object data="http://evil.example/x.swf"></object>', '<object data="http://evil.example'),
    (
        '<link rel=stylesheet href="http://evil.example/x.css"><style>body{background:red}</style>',
        "<style>body{background:red}</style>",
    ),
    ('<meta http-equiv="refresh" content="0;url=http://evil.example/">', "http-equiv"),
    ('<base href="http://evil.example/">', '<base href="http://evil.example/">'),
    ('<form action="http://evil.example/"><button>go</button></form>', "<form action="),
    ("<javascript:window.pwned=11>", "<javascript:window.pwned=11>"),
    ('"><script>window.pwned=12</script><x a="', "<script>window.pwned=12</script>"),
    (
        "<math><mtext><table><mglyph><style><img src=x onerror=window.pwned=13>",
        "<mglyph><style><img src=x onerror=window.pwned=13>",
    ),
    ("{{ 7 * 7 }} {% raw %} ${7*7}", "{{ 7 * 7 }} {% raw %} ${7*7}"),
    (
        "bidi: access\u202e\u2066 // check if admin \u2069\u2066 end",
        "bidi: access\ufffd\ufffd // check if admin \ufffd\ufffd end",
    ),
]
CODE_FENCE = "```html\n<script>window.pwned=14</script>\n<img src=x onerror=alert(14)>\n```"
BIG_TAIL = " <script>window.pwned=99</script> BIG-LINE-END"
BIG_LINE = "L" * (1024 * 1024) + BIG_TAIL
ALL = "\n\n".join(p for p, _ in PAYLOADS)
PLAIN = "\n".join(p for p, _ in PAYLOADS)


def as_shown(text: str) -> str:
    """What a pre-formatted surface shows: bidi controls become U+FFFD."""
    return re.sub("[\u202a-\u202e\u2066-\u2069]", "\ufffd", text)


def scenario() -> list[list[dict[str, Any]]]:
    turn_one: list[dict[str, Any]] = [
        {"thinking": ALL},
        {"text": ALL + "\n\n" + CODE_FENCE, "chunks": 12},
        {"tool": "Bash", "input": {"command": PLAIN, "description": PLAIN}, "output": PLAIN},
        {"tool": "Read", "input": {"file_path": PAYLOADS[1][0]}, "output": PLAIN, "is_error": True},
        {
            "tool": "Write",
            "input": {"file_path": "/tmp/" + PAYLOADS[0][0], "content": PLAIN},
            "permission": True,
            "description": PAYLOADS[2][0],
        },
        {"text": "after the card"},
    ]
    turn_two: list[dict[str, Any]] = [
        {"text": BIG_LINE, "chunks": 4},
        {"crash": 1, "stderr": "stderr: " + PLAIN},
    ]
    return [turn_one, turn_two]


def allowed_paths(server: LiveServer, sid: str) -> re.Pattern[str]:
    """GET routes of the app itself, with this session's id as the only id."""
    alternatives = []
    for ep in app_endpoints(server.app):
        if ep.method != "GET" or ep.kind == "websocket":
            continue
        if ep.kind == "mount":
            prefix = ep.path.rsplit("/", 1)[0]
            alternatives.append(re.escape(prefix) + r"/[\w./-]+")
            continue
        pieces = re.split(r"(\{[^}]+\})", ep.path)
        alternatives.append(
            "".join(
                (re.escape(sid) if piece.startswith("{session_id") else "[^/]+")
                if piece.startswith("{")
                else re.escape(piece)
                for piece in pieces
            )
        )
    return re.compile("^(?:" + "|".join(alternatives) + ")$")


class Watch:
    """Everything the page does that a payload could cause."""

    def __init__(self, server: LiveServer, sid: str) -> None:
        self.netloc = urlsplit(server.url).netloc
        self.paths = allowed_paths(server, sid)
        self.dialogs: list[str] = []
        self.bad_requests: list[str] = []
        self.popups: list[str] = []
        self.page_errors: list[str] = []

    def on_request(self, request: Any) -> None:
        parts = urlsplit(request.url)
        if (
            request.method != "GET"
            or parts.netloc != self.netloc
            or not self.paths.match(parts.path)
        ):
            self.bad_requests.append(f"{request.method} {request.url[:200]}")

    async def on_dialog(self, dialog: Any) -> None:
        self.dialogs.append(f"{dialog.type}: {dialog.message}")
        await dialog.dismiss()


INIT_SCRIPT = """
window.__violations = [];
document.addEventListener("securitypolicyviolation", function (e) {
  window.__violations.push(e.violatedDirective + " " + e.blockedURI + " " + e.sample);
});
"""


@pytest.fixture
async def browser() -> AsyncIterator[Any]:
    if not Path(CHROMIUM).exists():
        pytest.skip(f"no Chromium at {CHROMIUM} (set ANGELIA_CHROMIUM)")
    from playwright.async_api import async_playwright

    async with async_playwright() as pw:
        b = await pw.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
        try:
            yield b
        finally:
            await b.close()


async def settle(waiting: Awaitable[object]) -> None:
    """Wait for the page to show something; if it never does, the audit says what broke."""
    from playwright.async_api import TimeoutError as PlaywrightTimeout

    with contextlib.suppress(PlaywrightTimeout):
        await waiting


async def audit(page: Any, watch: Watch, phase: str) -> None:
    assert urlsplit(page.url).netloc == watch.netloc, (phase, "navigated away", page.url)
    assert not watch.dialogs, (phase, watch.dialogs)
    assert not watch.popups, (phase, watch.popups)
    assert not watch.bad_requests, (phase, watch.bad_requests)
    assert not watch.page_errors, (phase, watch.page_errors)
    pwned = await page.evaluate("[typeof window.pwned, typeof parent.pwned, typeof top.pwned]")
    assert pwned == ["undefined"] * 3, (phase, pwned)
    violations = await page.evaluate("window.__violations")
    # A violation would mean hostile markup reached the DOM and only the CSP stopped it.
    assert violations == [], (phase, violations)
    # Nothing a payload wrote became an element.
    found = await page.evaluate(
        """() => {
          const t = document.querySelector('#transcript');
          const bad = [];
          t.querySelectorAll('script, iframe, object, embed, svg, math, img, style, link, meta,'
                             + ' base, form, [onerror], [onclick], [onload], [onmouseover], #cover')
            .forEach(el => bad.push(el.outerHTML.slice(0, 120)));
          t.querySelectorAll('a[href]').forEach(a => {
            if (!/^(https?:|mailto:|\\/|#)/i.test(a.getAttribute('href'))) bad.push(a.outerHTML);
          });
          if (document.querySelector('base')) bad.push('base');
          return bad;
        }"""
    )
    assert found == [], (phase, found)
    # Everything reads as text: open every fold, then compare what the user would see.
    await page.evaluate(
        "document.querySelectorAll('#transcript details').forEach(d => d.open = true)"
    )
    shown = as_shown(PLAIN)
    md = await page.locator("#transcript .msg.assistant .md").first.inner_text()
    for _, visible in PAYLOADS:
        assert visible in md, (phase, "assistant markdown", visible)
    assert "<script>window.pwned=14</script>" in md  # the code fence
    thought = await page.locator("#transcript .thought .md").first.inner_text()
    assert PAYLOADS[0][1] in thought and PAYLOADS[-1][1] in thought, phase
    outputs = await page.locator("#transcript .tool-result pre.output").all_inner_texts()
    assert sum(shown in o for o in outputs) >= 2, (phase, [o[:80] for o in outputs])
    tool_text = await page.locator("#transcript .tool-call").first.inner_text()
    assert shown.split("\n")[0] in tool_text, phase
    user = await page.locator("#transcript .msg.user .bubble").first.inner_text()
    assert user == shown, (phase, user[:200])
    card = await page.locator("#transcript .perm-event").first.inner_text()
    assert PAYLOADS[0][0] in card, (phase, card[:300])
    everything = await page.locator("#transcript").inner_text()
    assert "\u202e" not in everything and "\u2066" not in everything
    assert "denied: " + PAYLOADS[3][0] in everything, phase
    assert "stderr: " + shown.split("\n")[0] in everything, phase
    assert BIG_TAIL.strip() in everything, phase
    assert max(len(t) for t in await page.locator(".msg.assistant").all_inner_texts()) > 1_000_000


async def test_hostile_output_renders_as_inert_text(
    server: LiveServer,
    client: httpx.AsyncClient,
    project_dir: Path,
    fake_claude: dict[str, Any],
    browser: Any,
) -> None:
    write_scenario(fake_claude["scenario"], scenario())
    fake = {**fake_claude, "command": [sys.executable, str(HOSTILE_FAKE)]}
    sid = await make_session(client, project_dir, fake)
    watch = Watch(server, sid)
    context = await browser.new_context()
    await context.add_init_script(INIT_SCRIPT)
    context.on("request", watch.on_request)
    page = await context.new_page()
    context.on("page", lambda p: watch.popups.append(p.url))
    page.on("dialog", watch.on_dialog)
    page.on("pageerror", lambda e: watch.page_errors.append(str(e)))

    await page.goto(f"{server.url}/?token={TOKEN}")
    response = await page.goto(f"{server.url}/sessions/{sid}")
    assert response is not None and response.status == 200
    csp = response.headers["content-security-policy"]
    assert "script-src 'self'" in csp and "unsafe-inline" not in csp
    assert "object-src 'none'" in csp and "base-uri 'none'" in csp

    # Turn one, watched live.
    r = await client.post(f"/api/sessions/{sid}/messages", json={"text": PLAIN})
    assert r.status_code == 202
    events = await wait_for_events(client, sid, count("permission_request"))
    permission_id = next(e for e in events if e["kind"] == "permission_request")["permission_id"]
    await settle(page.locator('.perm[data-status="pending"]').first.wait_for(timeout=10_000))
    r = await client.post(
        f"/api/permissions/{permission_id}/decision",
        json={"decision": "deny", "message": "denied: " + PAYLOADS[3][0]},
    )
    assert r.status_code == 200, r.text
    await wait_for_events(client, sid, count("turn_end"))
    await settle(page.locator("#transcript .turn-end").first.wait_for(timeout=10_000))

    # Turn two: a 1 MiB single line, then a crash whose stderr is hostile.
    r = await client.post(f"/api/sessions/{sid}/messages", json={"text": "more"})
    assert r.status_code == 202
    await wait_for_events(client, sid, count("error"))
    await settle(page.locator("#transcript .error-card").first.wait_for(timeout=10_000))
    await settle(
        page.wait_for_function(
            "(document.querySelector('#transcript') || document.body).innerText"
            ".includes('BIG-LINE-END')",
            timeout=10_000,
        )
    )
    await asyncio.sleep(0.3)  # anything a payload might have scheduled
    await audit(page, watch, "live")

    await page.reload()
    await settle(page.locator("#transcript .error-card").first.wait_for(timeout=10_000))
    await asyncio.sleep(0.3)
    await audit(page, watch, "reloaded")
    await context.close()
