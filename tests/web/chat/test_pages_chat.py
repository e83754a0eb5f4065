"""The chat page over HTTP: what its header and composer take from events it does not show."""

from __future__ import annotations

from pathlib import Path

import httpx

from app.web.chat.pages import PAGE_EVENTS
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
