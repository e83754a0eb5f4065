"""The usage figures from real result messages: Claude Code's own cost and tokens."""

from __future__ import annotations

import httpx
import pytest

from tests.helpers import count, of_kind, send, wait_for_events
from tests.real.steps import TIMEOUT

pytestmark = pytest.mark.real_cli


async def test_usage_sums_what_the_real_cli_reported(
    client: httpx.AsyncClient, claude_session: str
) -> None:
    sid = claude_session
    for n, text in enumerate(["say hi", "say hi again"], start=1):
        await send(client, sid, text)
        events = await wait_for_events(client, sid, count("turn_end", n), timeout=TIMEOUT)
    ends = of_kind(events, "turn_end")
    model = of_kind(events, "session_info")[-1]["model"]
    assert model and all(e["model"] == model for e in ends), ends
    cost = sum(e["cost_usd"] for e in ends)
    tokens = sum(e["usage"]["input_tokens"] for e in ends)
    assert cost > 0 and tokens > 0, ends

    body = (await client.get("/api/usage", params={"group": "model"})).json()
    (row,) = body["groups"]
    assert row["key"] == model
    assert row["cost_usd"] == pytest.approx(cost)
    assert row["input_tokens"] == tokens
    assert row["output_tokens"] == sum(e["usage"]["output_tokens"] for e in ends)
    assert (row["turns"], row["sessions"]) == (2, 1)
    session = (await client.get(f"/api/sessions/{sid}")).json()
    # The page's total is the session's own running cost.
    assert body["total"]["cost_usd"] == pytest.approx(session["cost_usd"])
    page = await client.get("/usage")
    assert page.status_code == 200 and model in page.text
