"""The history page's terminal sessions: listed with a badge, opened here by importing."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import httpx
from bs4 import BeautifulSoup

FIXTURES = Path(__file__).parents[1] / "fixtures" / "claude_projects"
SHOP = "11111111-1111-4111-8111-111111111111"


def terminal_transcript() -> Path:
    """The shop fixture, as if a terminal session had just written it."""
    projects = Path(os.environ["CLAUDE_CONFIG_DIR"]) / "projects"
    folder = projects / "-srv-demo-shop"
    folder.mkdir(parents=True, exist_ok=True)
    path = Path(shutil.copy(FIXTURES / "-srv-demo-shop" / f"{SHOP}.jsonl", folder))
    os.utime(path)  # written now
    return path


async def test_a_terminal_session_is_listed_and_opens_here(client: httpx.AsyncClient) -> None:
    terminal_transcript()
    page = BeautifulSoup((await client.get("/sessions")).text, "html.parser")
    row = page.select_one(f"#terminal-sessions li[data-uuid='{SHOP}']")
    assert row is not None
    text = " ".join(row.get_text().split())
    assert text.startswith("terminal List the files in this project")
    assert "/srv/demo/shop" in text
    button = row.select_one("form button")
    assert button is not None and button.get_text() == "Open here"

    r = await client.post(f"/sessions/import/claude/{SHOP}", follow_redirects=False)
    assert r.status_code == 303, r.text
    session_url = r.headers["location"]
    session = BeautifulSoup((await client.get(session_url)).text, "html.parser")
    assert "List the files in this project" in session.select_one("#transcript").get_text()

    # Listed still, now as the session it was imported into.
    page = BeautifulSoup((await client.get("/sessions")).text, "html.parser")
    button = page.select_one(f"#terminal-sessions li[data-uuid='{SHOP}'] form button")
    assert button is not None and button.get_text() == "Bring up to date and open"


async def test_an_unknown_terminal_session_is_said(client: httpx.AsyncClient) -> None:
    terminal_transcript()
    r = await client.post("/sessions/import/claude/not-there", follow_redirects=False)
    assert r.status_code == 422
    assert "No Claude Code session not-there" in r.text


async def test_no_recent_terminal_session_no_section(client: httpx.AsyncClient) -> None:
    page = BeautifulSoup((await client.get("/sessions")).text, "html.parser")
    assert page.select_one("#terminal-sessions") is None
