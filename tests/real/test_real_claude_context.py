"""The context gauge and Compact with the real Claude Code CLI and the fake model server.

The fake reports cache use on every call, so the figures the gauge shows must include it;
Claude Code's own count of its context is the ``pre_tokens`` of the ``compact_boundary``
it writes when compacting, which the gauge must equal. Compact is pressed on the page.
"""

from __future__ import annotations

from typing import Any

import httpx
import pytest
from playwright.async_api import expect

from tests.browser.conftest import Browsing
from tests.fakes.fake_model_server import FakeModelServer, request_texts
from tests.helpers import count, of_kind, wait_for_events
from tests.real.steps import TIMEOUT, take_turn

pytestmark = [pytest.mark.real_cli, pytest.mark.browser]

CACHE = {"cache_read_input_tokens": 150_000, "cache_creation_input_tokens": 2_000}
# Claude Code's window for the model it picks offline (claude-opus-5-5), from its
# result's modelUsage.
WINDOW = 1_000_000


@pytest.fixture
def fake_rules() -> dict[str, Any]:
    return {"chunk_delay": 0.02, "cache_usage": CACHE}


def summary_requests(fake_model: FakeModelServer) -> list[dict[str, Any]]:
    """The model calls that ask for a summary of the conversation (a compaction's)."""
    return [
        e for e in fake_model.message_requests() if any("<summary>" in t for t in request_texts(e))
    ]


async def test_gauge_equals_what_claude_code_counts_and_compact_from_the_page(
    browsing: Browsing,
    client: httpx.AsyncClient,
    claude_session: str,
    fake_model: FakeModelServer,
) -> None:
    sid = claude_session
    events = await take_turn(client, sid, "say hi")
    (usage,) = of_kind(events, "usage")
    assert usage["size"] == WINDOW
    # The cache the fake reported is part of the context, on top of the fresh input.
    assert usage["used"] > sum(CACHE.values()), usage
    figures = (await client.get(f"/api/sessions/{sid}/context")).json()
    assert (figures["used"], figures["size"], figures["level"]) == (usage["used"], WINDOW, "green")
    assert figures["can_compact"] is True, figures

    await browsing.sign_in(f"/sessions/{sid}")
    page = browsing.page
    gauge = page.locator("#session-head .ctx-gauge__badge")
    await expect(gauge).to_have_attribute("data-used", str(usage["used"]))
    assert not summary_requests(fake_model)
    await page.get_by_role("button", name="Session actions").click()
    await page.get_by_role("button", name="Compact").click()

    folded = page.locator(".event.compacted")
    await expect(folded).to_have_count(1, timeout=TIMEOUT * 1000)
    events = await wait_for_events(client, sid, count("turn_end", 2), timeout=TIMEOUT)
    (compacted,) = of_kind(events, "compacted")
    # Claude Code's own count of the context it compacted is the gauge's figure.
    assert compacted["trigger"] == "manual"
    assert compacted["before"] == usage["used"], (compacted, usage)
    assert 0 < compacted["after"] < compacted["before"]
    assert summary_requests(fake_model), "the CLI asked the model for no summary"
    await expect(folded.locator("summary")).to_contain_text("Compacted: ")
    # Until the next call the context is the CLI's summary; the gauge followed live.
    assert of_kind(events, "usage")[-1]["used"] == compacted["after"]
    await expect(gauge).to_have_attribute("data-used", str(compacted["after"]))
    await page.reload()
    await expect(folded).to_have_count(1)
    await expect(gauge).to_have_attribute("data-used", str(compacted["after"]))
    assert browsing.log.page_errors == [], browsing.log.page_errors
    assert await browsing.csp_violations() == []
