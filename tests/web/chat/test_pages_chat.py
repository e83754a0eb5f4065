"""The chat page over HTTP: what its header and composer take from events it does not show."""

from __future__ import annotations

from pathlib import Path

import httpx

from app.web.chat.pages import EARLIER_EVENTS, PAGE_EVENTS
from tests.conftest import LiveServer
from tests.web.history.test_pages_history import new_profile, new_session
from tests.web.history.test_pages_permissions import soup_of


async def test_header_and_commands_come_from_the_newest_reports(
    server: LiveServer, client: httpx.AsyncClient, project_dir: Path
) -> None:
    sid = await new_session(client, await new_profile(client, project_dir), "long")
    events = server.app.state.angelia.events
    events.append(
        sid,
        "session_info",
        {"model": "m-old", "api_key_source": "none", "slash_commands": ["old"]},
    )
    events.append(
        sid,
        "session_info",
        {"model": "m-new", "api_key_source": "ANTHROPIC_API_KEY", "slash_commands": ["/compact"]},
    )
    # Far more events than the page shows: the reports are older than its tail.
    for i in range(PAGE_EVENTS + 20):
        events.append(sid, "user_message", {"text": f"filler {i}"})
    await events.flush()

    page = soup_of(await client.get(f"/sessions/{sid}"))
    assert page.select_one('[data-kind="session_info"]') is None
    auth = page.select_one("#session-auth .auth-source")
    assert auth is not None and auth.get_text() == "API key from ANTHROPIC_API_KEY"
    model = page.select_one("#session-model")
    assert model is not None and model.get_text() == "m-new"
    assert [li["data-cmd"] for li in page.select("#slash-list li")] == ["compact"]

    # An ACP agent's newer list replaces what session_info said.
    events.append(sid, "commands", {"commands": ["review", "plan"]})
    await events.flush()
    page = soup_of(await client.get(f"/sessions/{sid}"))
    assert [li["data-cmd"] for li in page.select("#slash-list li")] == ["review", "plan"]
    empty = page.select_one("#slash-empty")
    assert empty is not None and empty.has_attr("hidden")


async def test_a_session_without_reports_says_so(
    server: LiveServer, client: httpx.AsyncClient, project_dir: Path
) -> None:
    sid = await new_session(client, await new_profile(client, project_dir), "new")
    page = soup_of(await client.get(f"/sessions/{sid}"))
    auth = page.select_one("#session-auth")
    assert auth is not None and auth.has_attr("hidden")
    assert page.select("#slash-list li") == []
    empty = page.select_one("#slash-empty")
    assert empty is not None and not empty.has_attr("hidden")


async def test_a_message_whose_pieces_cross_a_page_shows_once(
    server: LiveServer, client: httpx.AsyncClient, project_dir: Path
) -> None:
    """The pieces of an answer that finished on a later page are not shown again, as if
    still streaming, on the page loaded above it; an answer that never finished still is."""
    sid = await new_session(client, await new_profile(client, project_dir), "long")
    events = server.app.state.angelia.events
    events.append(sid, "user_message", {"text": "cut short"})
    for i in range(3):
        events.append(sid, "text_delta", {"text": f"lost{i} ", "message_id": "m-cut"})
    events.append(sid, "turn_end", {"stop_reason": "interrupted"})
    events.append(sid, "user_message", {"text": "the question"})
    pieces = PAGE_EVENTS + EARLIER_EVENTS // 2
    for i in range(pieces):
        events.append(sid, "text_delta", {"text": f"p{i} ", "message_id": "m-long"})
    whole = "".join(f"p{i} " for i in range(pieces)).strip()
    events.append(sid, "assistant_message", {"text": whole, "message_id": "m-long"})
    events.append(sid, "turn_end", {"stop_reason": "end_turn"})
    await events.flush()

    page = soup_of(await client.get(f"/sessions/{sid}"))
    assert [m.get_text(" ", strip=True) for m in page.select("#transcript .msg.assistant .md")] == [
        whole
    ]
    loader = page.select_one("#transcript .earlier")
    assert loader is not None
    above = soup_of(await client.get(str(loader["hx-get"])))
    # Only the question and the interrupted answer: no second copy of the long one.
    assert "p0 " not in above.get_text()
    assert "the question" in above.get_text()
    assert "lost0 lost1 lost2" in above.get_text(" ", strip=True)
