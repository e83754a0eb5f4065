"""A subagent's work arriving live nests under its Agent call in a real browser, its
status line follows the task reports, and a reload shows the same."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx
import pytest
from playwright.async_api import expect

from tests.api.test_chat import make_session
from tests.browser.conftest import Browsing
from tests.conftest import LiveServer
from tests.web.test_pages_subagents import subagent_events

pytestmark = pytest.mark.browser


async def test_subagent_items_nest_live_and_after_reload(
    browsing: Browsing,
    server: LiveServer,
    client: httpx.AsyncClient,
    project_dir: Path,
    fake_claude: dict[str, Any],
) -> None:
    sid = await make_session(client, project_dir, fake_claude)
    page = browsing.page
    await browsing.sign_in(f"/sessions/{sid}")
    log = server.app.state.angelia.events

    def store(event: dict[str, Any]) -> None:
        payload = {k: v for k, v in event.items() if k not in ("seq", "session_id", "kind", "at")}
        log.append(sid, event["kind"], payload)

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
    await expect(group.locator(".subagent-log .msg.assistant")).to_have_text("I will touch it")

    for event in events[10:]:
        store(event)
    await expect(page.locator(".agent-call .tool-call[data-tcid=A1]")).to_have_attribute(
        "data-state", "done"
    )
    await page.reload()
    await expect(status).to_have_text("completed · last tool: Bash · Made x")
    await expect(group.locator(".subagent-log > .event")).to_have_count(3)
    assert browsing.log.page_errors == [] and await browsing.csp_violations() == []
