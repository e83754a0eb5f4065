"""A subagent's work arriving live nests under its Agent call in a real browser, its
status line follows the task reports, and a reload shows the same."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest
from playwright.async_api import expect

from tests.api.test_chat import make_session
from tests.browser.conftest import Browsing
from tests.conftest import LiveServer
from tests.web.chat.test_pages_subagents import subagent_events
from tests.web.test_render import ev

pytestmark = pytest.mark.browser


Store = Callable[[dict[str, Any]], None]


@pytest.fixture
async def store(
    browsing: Browsing,
    server: LiveServer,
    client: httpx.AsyncClient,
    project_dir: Path,
    fake_claude: dict[str, Any],
) -> Store:
    """Opens a new session in the browser; the function it gives stores an event (as
    ``ev`` makes them) in that session, which the page then receives live."""
    sid = await make_session(client, project_dir, fake_claude)
    await browsing.sign_in(f"/sessions/{sid}")
    log = server.app.state.angelia.events

    def append(event: dict[str, Any]) -> None:
        payload = {k: v for k, v in event.items() if k not in ("seq", "session_id", "kind", "at")}
        log.append(sid, event["kind"], payload)

    return append


async def test_subagent_items_nest_live_and_after_reload(browsing: Browsing, store: Store) -> None:
    page = browsing.page

    events = subagent_events()
    for event in events[:6]:
        store(event)
    group = page.locator(".subagent[data-subagent-for=A1]")
    status = group.locator(".subagent-status")
    await expect(status).to_have_text("running…")
    await expect(group.locator(".subagent-name")).to_have_text(
        "Subagent · Make a file (general-purpose)"
    )
    await expect(group.locator(".subagent-log > .event")).to_have_count(2)
    await expect(group).not_to_have_attribute("open", "")
    # The subagent's request stays at the top level, saying who asked.
    card = page.locator('#transcript > .perm-event .perm[data-status="pending"]')
    await expect(card.locator(".perm-asker")).to_have_text(
        "Asked by the subagent Make a file (general-purpose)"
    )
    await expect(page.locator("#transcript > [data-kind=task]")).to_have_count(0)

    for event in events[6:10]:
        store(event)
    await expect(status).to_have_text("completed · last tool: Bash · Made x")
    await expect(group).to_have_attribute("data-status", "completed")
    await expect(group.locator(".tool-call[data-tcid=B1]")).to_have_attribute("data-state", "done")
    await group.locator("summary").first.click()
    await expect(group.locator(".subagent-log .msg.assistant .md")).to_have_text("I will touch it")

    for event in events[10:]:
        store(event)
    await expect(page.locator(".agent-call .tool-call[data-tcid=A1]")).to_have_attribute(
        "data-state", "done"
    )
    await page.reload()
    await expect(status).to_have_text("completed · last tool: Bash · Made x")
    await expect(group.locator(".subagent-log > .event")).to_have_count(3)
    assert browsing.log.page_errors == [] and await browsing.csp_violations() == []


async def test_an_odd_call_id_cannot_break_the_nesting(browsing: Browsing, store: Store) -> None:
    odd = 'a"]\n\\x'
    call = {"tool_call_id": odd, "tool": "Agent", "title": "odd", "input": {"description": "Odd"}}
    store(ev(1, "tool_call", **call))
    store(ev(2, "task", task_id="t", tool_call_id=odd, status="failed"))
    store(ev(3, "thought", text="inside", parent_tool_call_id=odd))
    group = browsing.page.locator(".subagent")
    await expect(group).to_have_attribute("data-status", "failed")
    await expect(group.locator(".subagent-log > .thought")).to_have_count(1)
    assert browsing.log.page_errors == []
