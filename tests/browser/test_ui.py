"""The chat page's items, keys, themes, narrow screens and accessibility in a real browser.

Most items come from events written or appended directly (tests/browser/demo.py): the
page renders stored and streamed events with the same partial, so that covers kinds the
fake claude never produces (plans, commands, errors). The fake claude runs where a real
turn matters (Ctrl+. stopping it, Escape not).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import httpx
import pytest
from playwright.async_api import Browser, Page, expect

from tests.api.test_chat import fake_log
from tests.api.test_chat import make_session as make_fake_session
from tests.browser.conftest import TIMEOUT_MS, Browsing, axe_page, settled
from tests.browser.demo import LONG_OUTPUT_LINES, finished_session, later_items
from tests.conftest import TOKEN, LiveServer, write_scenario
from tests.helpers import count, send, wait_for_events
from tests.real.test_real_claude_questions import PLAN, QUESTIONS
from tests.web.chat.test_pages_subagents import subagent_events

pytestmark = pytest.mark.browser

AXE = Path(__file__).parent / "vendor" / "axe.min.js"
# Neither the page nor its scrolling columns may scroll sideways (wide code and outputs
# scroll inside their own boxes).
NO_SIDEWAYS_SCROLL = """
document.documentElement.scrollWidth <= innerWidth &&
["main", "transcript"].every(id => {
  const el = document.getElementById(id);
  return !el || el.scrollWidth <= el.clientWidth;
})
"""


def append(server: LiveServer, sid: str, kind: str, payload: dict[str, Any]) -> None:
    events = server.app.state.angelia.events
    events.append(sid, kind, payload)
    events.flush_sync()  # stored before the page looks for it


async def at_bottom(page: Page) -> bool:
    return bool(
        await page.locator("#transcript").evaluate(
            "el => el.scrollHeight - el.scrollTop - el.clientHeight <= 48"
        )
    )


async def test_every_item_renders_stored_and_live(
    browsing: Browsing, server: LiveServer, client: httpx.AsyncClient, project_dir: Path
) -> None:
    sid = await finished_session(server, client, project_dir)
    page = browsing.page
    await page.context.grant_permissions(["clipboard-read", "clipboard-write"])
    await browsing.sign_in(f"/sessions/{sid}")

    # The header: credentials from the newest session_info, totals, model.
    await expect(page.locator("#session-auth .auth-source")).to_have_text(
        "API key from ANTHROPIC_API_KEY"
    )
    await expect(page.locator("#session-model")).to_have_text("claude-sonnet-4-5")
    await expect(page.locator("#session-cost")).to_have_text("$0.0421")

    # Stored items.
    await expect(page.locator(".msg.user .bubble")).to_have_text(re.compile("^The login test"))
    await expect(page.locator(".thought > summary")).to_have_text("Thought for 4.1 s")
    states = page.locator(".tool-call")
    await expect(states).to_have_count(3)
    await expect(page.locator(".tool-call[data-tcid=t1]")).to_have_attribute("data-state", "done")
    failed = page.locator(".tool-call[data-tcid=t2]")
    await expect(failed).to_have_attribute("data-state", "failed")
    await expect(failed.locator(".state-text")).to_be_visible()
    await expect(page.locator(".tool-result.is-error pre.output")).to_contain_text("1 failed")
    edit = page.locator(".tool-call[data-tcid=t3]")
    await edit.locator("> summary").click()
    await expect(edit.locator(".diff .del")).to_have_text("-datetime.now()")
    await expect(edit.locator(".diff .add")).to_have_text("+clock.now()")
    # The answered request is one line; the decision event does not repeat it.
    await expect(page.locator(".perm.decided .outcome")).to_have_text("Allowed once by you")
    await expect(page.locator(".event.decision")).to_be_hidden()
    code = page.locator(".md .code").first
    await expect(code.locator("code.language-python")).to_contain_text("clock.now()")
    await code.get_by_role("button", name="Copy code").click()
    await expect(code.locator("button.copy")).to_have_text("Copied")
    copied = await page.evaluate("navigator.clipboard.readText()")
    assert "expires = clock.now()" in copied
    await expect(page.locator(".turn-end")).to_have_text("18.4 s · $0.0421 · 12.4k in / 1.3k out")

    # Live items: the same partial arrives over the stream.
    for kind, payload in later_items():
        append(server, sid, kind, payload)
    await expect(page.locator(".turn-end")).to_have_count(2)
    plans = page.locator("details.plan")
    await expect(plans).to_have_count(2)
    await expect(plans.nth(0)).to_have_class(re.compile(r"\bis-old\b"))
    await expect(plans.nth(0)).not_to_have_attribute("open", "")
    await expect(plans.nth(0).locator(".plan-label")).to_have_text("Earlier plan")
    newest = plans.nth(1)
    await expect(newest).to_have_attribute("open", "")
    await expect(newest.locator("summary")).to_have_text("Plan · 2 of 4 done")
    await expect(newest.locator(".plan-in_progress")).to_contain_text("Fix it")
    await expect(page.locator(".tool-call[data-tcid=t10]")).to_have_attribute(
        "data-state", "stopped"
    )
    await expect(page.locator(".tool-call[data-tcid=t10] .state-text")).to_have_text("cancelled")
    # A decision whose card is not on the page keeps its own line.
    await expect(page.locator(".event.decision[data-pid=earlier-page]")).to_contain_text(
        "Denied by a saved rule"
    )
    card = page.locator(".error-card")
    await expect(card.locator(".error-message")).to_contain_text("exited with code 1")
    await expect(card.locator(".error-todo")).to_contain_text("Send a message to start")
    await expect(card.locator("details pre")).to_be_hidden()
    await expect(page.locator(".turn-end.is-error .flag")).to_have_text("Turn ended with an error")
    # The header's totals follow each turn.
    await expect(page.locator("#session-cost")).to_have_text("$0.0526")
    await expect(page.locator("#session-tokens")).to_contain_text("14.5k in / 1.4k out")

    # A 2,000-line output shows its first 200 lines; the rest waits behind "show all".
    result = page.locator(".tool-result[data-tcid=t9]")
    await result.locator("> summary").click()
    head = result.locator("> pre.output")
    assert (await head.inner_text()).count("\n") == 199
    rest = result.locator("details.show-all")
    await expect(rest.locator("summary")).to_have_text(
        f"Show all {LONG_OUTPUT_LINES} lines", use_inner_text=True
    )
    await expect(rest.locator("pre")).to_be_hidden()
    await rest.locator("summary").click()
    await expect(rest.locator("pre")).to_contain_text(f"[{LONG_OUTPUT_LINES - 1}]")
    await expect(rest.locator("summary")).to_have_text("Hide the rest", use_inner_text=True)

    assert browsing.log.console_errors == []
    assert browsing.log.page_errors == []
    assert await browsing.csp_violations() == []


async def test_streaming_appends_in_place_and_follows_only_at_the_bottom(
    browsing: Browsing, server: LiveServer, client: httpx.AsyncClient, project_dir: Path
) -> None:
    sid = await finished_session(server, client, project_dir)
    page = browsing.page
    await browsing.sign_in(f"/sessions/{sid}")
    await expect(page.locator(".turn-end")).to_have_count(1)

    append(server, sid, "user_message", {"text": "go on"})
    append(server, sid, "text_delta", {"text": "Hello", "message_id": "live-1"})
    bubble = page.locator("#live-live-1 .live-text")
    await expect(bubble).to_have_text("Hello")
    # Later pieces join the same text node's parent; nothing above is rebuilt.
    await bubble.evaluate(
        "el => { el.dataset.mark = 'same'; window.__firstChild = el.firstChild; }"
    )
    for piece in (", world", "!"):
        append(server, sid, "text_delta", {"text": piece, "message_id": "live-1"})
    await expect(bubble).to_have_text("Hello, world!")
    assert await bubble.evaluate(
        "el => el.dataset.mark === 'same' && el.firstChild === window.__firstChild"
    )
    assert await at_bottom(page)

    # Scrolled up, new output does not pull the view down: a button offers to.
    await page.locator("#transcript").evaluate("el => el.scrollTop = 0")
    for i in range(30):
        append(server, sid, "text_delta", {"text": f"\nline {i}", "message_id": "live-1"})
    jump = page.locator("#jump")
    await expect(jump).to_be_visible()
    await expect(bubble).to_contain_text("line 29")
    assert not await at_bottom(page)
    await jump.click()
    await expect(jump).to_be_hidden()
    assert await at_bottom(page)

    # The finished message replaces the stream where it stands.
    append(server, sid, "assistant_message", {"text": "Hello, **world**!", "message_id": "live-1"})
    await expect(page.locator("#live-live-1")).to_have_count(0)
    await expect(page.locator(".msg.assistant .md strong").last).to_have_text("world")
    assert browsing.log.page_errors == []


async def test_composer_slash_commands_grow_and_ctrl_period_stops_the_turn(
    browsing: Browsing, client: httpx.AsyncClient, project_dir: Path, fake_claude: dict[str, Any]
) -> None:
    write_scenario(fake_claude["scenario"], [[{"sleep": 20}], [{"sleep": 20}]])
    sid = await make_fake_session(client, project_dir, fake_claude)
    page = browsing.page
    await browsing.sign_in(f"/sessions/{sid}")
    box = page.locator("#composer-text")
    popup = page.locator("#slash")

    # Before the CLI has started, "/" says no commands are known yet.
    await box.click()
    await page.keyboard.type("/")
    await expect(popup).to_be_visible()
    await expect(page.locator("#slash-empty")).to_be_visible()
    await page.keyboard.press("Escape")
    await expect(popup).to_be_hidden()
    await box.fill("")

    # A turn starts: the fake reports its commands (compact, clear) in session_info.
    await send(client, sid, "think for a while")
    await expect(page.locator("#session-status .status")).to_have_attribute(
        "data-status", "working"
    )
    options = page.locator("#slash-list li")
    await expect(options).to_have_count(2)
    await box.click()
    await page.keyboard.type("/c")
    await expect(popup).to_be_visible()
    await expect(options.filter(visible=True)).to_have_text(["/compact", "/clear"])
    await expect(options.first).to_have_attribute("aria-selected", "true")
    await expect(box).to_have_attribute("aria-activedescendant", "slash-opt-1")
    await page.keyboard.press("ArrowDown")
    await expect(options.nth(1)).to_have_attribute("aria-selected", "true")
    await page.keyboard.type("l")
    await expect(options.filter(visible=True)).to_have_text(["/clear"])
    await page.keyboard.press("Enter")
    await expect(box).to_have_value("/clear ")
    await expect(popup).to_be_hidden()

    # The box grows with its text; Shift+Enter is a new line, not a send.
    await settled(page)
    before = (await box.bounding_box() or {"height": 0})["height"]
    await box.fill("")
    for i in range(5):
        await page.keyboard.type(f"line {i}")
        await page.keyboard.press("Shift+Enter")
    await expect(box).to_have_value(re.compile(r"line 4\n$"))
    await settled(page)
    assert (await box.bounding_box() or {"height": 0})["height"] > before
    await expect(box).to_have_value(re.compile(r"^line 0\nline 1\n"))

    # Escape in the message box does not stop the turn (nothing waits for an answer
    # either, so it does nothing); Ctrl+. does.
    await page.keyboard.press("Escape")
    await page.wait_for_timeout(500)
    await expect(page.locator("#session-status .status")).to_have_attribute(
        "data-status", "working"
    )
    await expect(box).to_be_focused()
    await page.keyboard.press("Control+Period")
    await wait_for_events(client, sid, count("turn_end"))
    stdin = [e["stdin"] for e in fake_log(fake_claude) if "stdin" in e]
    assert any(m.get("request", {}).get("subtype") == "interrupt" for m in stdin)
    await expect(page.locator("#session-status .status")).not_to_have_attribute(
        "data-status", "working"
    )

    await expect(box).to_be_focused()

    # Ctrl+. works from anywhere on the page (here the Stop button's own key hint says so).
    await send(client, sid, "again")
    await expect(page.locator("#session-status .status")).to_have_attribute(
        "data-status", "working"
    )
    stop = page.get_by_role("button", name="Stop")
    await expect(stop).to_have_attribute("aria-keyshortcuts", "Control+Period")
    sidebar_link = page.locator(f"nav.sidebar a[href='/sessions/{sid}']")
    await sidebar_link.focus()
    await page.keyboard.press("Control+Period")
    await wait_for_events(client, sid, count("turn_end", 2))
    await expect(sidebar_link).to_be_focused()
    assert browsing.log.page_errors == []
    assert await browsing.csp_violations() == []


async def chat_page_with_everything(
    server: LiveServer, client: httpx.AsyncClient, project_dir: Path
) -> str:
    sid = await finished_session(server, client, project_dir)
    for kind, payload in later_items():
        append(server, sid, kind, payload)
    edit = {"file_path": "src/auth.py", "old_string": "a", "new_string": "b"}
    append(
        server,
        sid,
        "permission_request",
        {
            "permission_id": "pending-1",
            "tool": "Edit",
            "input": edit,
            "title": "src/auth.py",
            "reason": "Edits need approval",
            "preview": {"kind": "diff", "path": "src/auth.py", "diff": "@@ -1 +1 @@\n-a\n+b\n"},
            "always_rule": "Edit(src/**)",
            "status": "pending",
        },
    )
    # The newer pieces: a question, a plan, a subagent's group, a waiting message, a model.
    asks = (("question", {"questions": QUESTIONS}), ("plan", {"plan": PLAN}))
    for prompt, given in asks:
        payload = {"permission_id": f"pending-{prompt}", "tool": prompt, "input": given}
        append(
            server, sid, "permission_request", {**payload, "prompt": prompt, "status": "pending"}
        )
    for event in subagent_events(finished=False)[1:]:
        fields = {k: v for k, v in event.items() if k not in ("seq", "session_id", "kind", "at")}
        append(server, sid, event["kind"], fields)
    append(
        server, sid, "user_message", {"text": "and then?", "queued": True, "queue_reason": "turn"}
    )
    append(server, sid, "model_changed", {"model": "haiku", "source": "user"})
    return sid


@pytest.mark.parametrize("scheme", ["light", "dark"])
async def test_narrow_screens_have_no_sideways_scroll_and_fold_the_menus(
    browser: Browser,
    server: LiveServer,
    client: httpx.AsyncClient,
    project_dir: Path,
    scheme: str,
) -> None:
    sid = await chat_page_with_everything(server, client, project_dir)
    context = await browser.new_context(viewport={"width": 360, "height": 740})
    context.set_default_timeout(TIMEOUT_MS)
    page = await context.new_page()
    try:
        await page.emulate_media(color_scheme=scheme)
        await page.goto(f"{server.url}/sessions/{sid}?token={TOKEN}")
        await expect(page.locator('.perm[data-status="pending"]').first).to_be_visible()
        assert await page.evaluate("matchMedia('(prefers-color-scheme: dark)').matches") == (
            scheme == "dark"
        )
        # Open everything that can be opened: still nothing wider than the screen.
        await page.evaluate("document.querySelectorAll('details').forEach(d => d.open = true)")
        width = NO_SIDEWAYS_SCROLL
        await settled(page)
        assert await page.evaluate(width)

        menu = page.locator("#nav-menu")
        toggle = page.get_by_role("button", name="Menu")
        await expect(menu).to_be_hidden()
        await expect(toggle).to_have_attribute("aria-expanded", "false")
        await toggle.click()
        await expect(menu).to_be_visible()
        await expect(toggle).to_have_attribute("aria-expanded", "true")
        await expect(page.locator("#nav-search-q")).to_be_visible()
        await settled(page)
        assert await page.evaluate(width)
        await page.locator("#nav-search-q").focus()
        await page.keyboard.press("Escape")
        await expect(menu).to_be_hidden()
        await expect(toggle).to_be_focused()

        more = page.locator("#head-more")
        await expect(more).to_be_hidden()
        await page.get_by_role("button", name="Details").click()
        await expect(page.locator("#mode-select")).to_be_visible()
        await settled(page)
        assert await page.evaluate(width)

        for path in ("/sessions", "/permissions", "/profiles"):
            await page.goto(server.url + path)
            await expect(page.locator("main h1")).to_be_visible()
            await settled(page)
            assert await page.evaluate(width), path
    finally:
        await context.close()


async def axe_problems(page: Page) -> list[str]:
    """Serious and critical axe-core findings on the page as it is now."""
    await page.add_script_tag(path=str(AXE))
    result = await page.evaluate("axe.run(document, {resultTypes: ['violations']})")
    return [
        f"{v['id']} ({v['impact']}): {[n['target'] for n in v['nodes'][:5]]}"
        for v in result["violations"]
        if v["impact"] in ("serious", "critical")
    ]


async def test_axe_finds_nothing_serious(
    browser: Browser, server: LiveServer, client: httpx.AsyncClient, project_dir: Path
) -> None:
    sid = await chat_page_with_everything(server, client, project_dir)
    profiles = (await client.get("/api/profiles")).json()
    profile_id = (profiles if isinstance(profiles, list) else profiles["profiles"])[0]["id"]
    problems: list[str] = []
    async with axe_page(browser) as page:
        await page.goto(f"{server.url}/sessions/{sid}?token={TOKEN}")
        await expect(page.locator('.perm[data-status="pending"]').first).to_be_visible()
        await expect(page.locator("details.plan")).to_have_count(2)
        for scheme in ("light", "dark"):
            await page.emulate_media(color_scheme=scheme)
            # Closed details hide their text from the contrast check: open them all.
            await page.evaluate("document.querySelectorAll('details').forEach(d => d.open = true)")
            await page.locator("#composer-text").fill("/")
            await page.locator("#composer-text").dispatch_event("input")
            await expect(page.locator("#slash")).to_be_visible()
            problems += [f"chat ({scheme}): {p}" for p in await axe_problems(page)]
        await page.emulate_media(color_scheme="light")
        for path in ("/sessions", f"/profiles/{profile_id}", "/permissions"):
            await page.goto(server.url + path)
            await expect(page.locator("main h1")).to_be_visible()
            problems += [f"{path}: {p}" for p in await axe_problems(page)]
    assert problems == []
