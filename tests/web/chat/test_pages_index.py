"""The index's forms start on the user's latest profile and on an agent this machine has."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest
from bs4 import BeautifulSoup

from tests.web.profiles.test_pages_welcome import only_cli_on_path


async def selected_profile(client: httpx.AsyncClient) -> str:
    page = BeautifulSoup((await client.get("/")).text, "html.parser")
    options = page.select("select[name=profile_id] option")
    chosen = [o for o in options if o.has_attr("selected")]
    # A browser picks the first option when none is selected.
    return str((chosen or options)[0]["value"])


async def make_profile(client: httpx.AsyncClient, name: str, cwd: Path) -> str:
    cwd.mkdir(exist_ok=True)
    r = await client.post(
        "/api/profiles", json={"name": name, "backend": "claude", "cwd": str(cwd)}
    )
    assert r.status_code == 201, r.text
    return str(r.json()["id"])


async def test_new_session_starts_with_the_latest_profile(
    client: httpx.AsyncClient, tmp_path: Path
) -> None:
    first = await make_profile(client, "first", tmp_path / "one")
    assert await selected_profile(client) == first
    second = await make_profile(client, "second", tmp_path / "two")
    # No session yet: the profile made last.
    assert await selected_profile(client) == second
    r = await client.post("/api/sessions", json={"profile_id": first})
    assert r.status_code == 201, r.text
    # Then the profile of the session used last.
    assert await selected_profile(client) == first
    r = await client.post("/api/sessions", json={"profile_id": second})
    assert r.status_code == 201, r.text
    assert await selected_profile(client) == second


async def test_new_profile_starts_on_an_agent_that_was_found(
    client: httpx.AsyncClient, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    only_cli_on_path(tmp_path, monkeypatch, "opencode", "1.2.3")
    await make_profile(client, "first", tmp_path / "one")
    page = BeautifulSoup((await client.get("/")).text, "html.parser")
    options = page.select("#new-profile-heading ~ form select[name=backend] option")
    chosen = [o for o in options if o.has_attr("selected")]
    # Not the generic ACP backend (first in the list), which needs a command to run.
    assert [str(o["value"]) for o in chosen] == ["opencode"]
