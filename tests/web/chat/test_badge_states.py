"""The badge poll over HTTP: besides the count it names the sessions a page shows, with
their titles and statuses as stored now, so the page can follow them (static/js/page.js)."""

from __future__ import annotations

from pathlib import Path

import httpx
from bs4 import BeautifulSoup

from app.web.context import SIDEBAR_SESSIONS


def states(r: httpx.Response) -> dict[str, tuple[str, str, str]]:
    assert r.status_code == 200, r.text
    soup = BeautifulSoup(r.text, "html.parser")
    return {
        str(s["data-sid"]): (str(s["data-title"]), str(s["data-status"]), str(s["data-label"]))
        for s in soup.select("[data-session-state]")
    }


async def new_session(client: httpx.AsyncClient, profile_id: str, title: str = "") -> str:
    r = await client.post("/api/sessions", json={"profile_id": profile_id, "title": title})
    assert r.status_code == 201, r.text
    return str(r.json()["id"])


async def test_badge_carries_titles_and_statuses_of_the_pages_sessions(
    client: httpx.AsyncClient, project_dir: Path
) -> None:
    body = {"name": "p", "backend": "claude", "cwd": str(project_dir)}
    profile_id = (await client.post("/api/profiles", json=body)).json()["id"]
    oldest = await new_session(client, profile_id)
    for n in range(SIDEBAR_SESSIONS):
        await new_session(client, profile_id, f"newer {n}")

    # The sidebar's sessions always; an older one only when the page shows it.
    plain = states(await client.get("/badge"))
    assert len(plain) == SIDEBAR_SESSIONS and oldest not in plain
    assert states(await client.get("/badge", params={"session": oldest}))[oldest] == (
        "Untitled session",
        "idle",
        "idle",
    )
    page = BeautifulSoup((await client.get(f"/sessions/{oldest}")).text, "html.parser")
    slot = page.select_one("#pending-badge")
    assert slot is not None and slot["hx-get"] == f"/badge?session={oldest}"
    assert page.select_one(f"h1[data-title-of='{oldest}']") is not None
    assert page.select_one(f"#session-status[data-status-of='{oldest}'] .status") is not None

    # A rename shows up on the next poll.
    r = await client.patch(f"/api/sessions/{oldest}", json={"title": "Named <later>"})
    assert r.status_code == 200
    got = states(await client.get("/badge", params={"session": oldest}))
    assert got[oldest][0] == "Named <later>"


async def test_badge_ignores_an_unknown_session_and_refuses_a_huge_one(
    client: httpx.AsyncClient,
) -> None:
    assert states(await client.get("/badge", params={"session": "no-such-session"})) == {}
    r = await client.get("/badge", params={"session": "x" * 500})
    assert r.status_code == 422
    assert "session" in r.text
