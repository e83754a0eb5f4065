"""A session's cost where none was reported: said, never shown as "$0.00"."""

from __future__ import annotations

import httpx
from bs4 import BeautifulSoup

from tests.web.history.test_pages_terminal import SHOP, terminal_transcript


async def test_a_terminal_session_says_its_cost_was_not_reported(
    client: httpx.AsyncClient,
) -> None:
    terminal_transcript()
    r = await client.post(f"/sessions/import/claude/{SHOP}", follow_redirects=False)
    assert r.status_code == 303, r.text
    # A Claude Code transcript records no cost.
    session = BeautifulSoup((await client.get(r.headers["location"])).text, "html.parser")
    header = session.select_one("#session-cost")
    assert header is not None and " ".join(header.get_text().split()) == "— cost not reported"
    listing = BeautifulSoup((await client.get("/sessions")).text, "html.parser")
    costs = [" ".join(c.get_text().split()) for c in listing.select(".history-cost")]
    assert costs == ["— cost not reported"]
