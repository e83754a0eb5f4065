"""Terminal sessions: listed with a badge on the history page, opened here, followed live
while the file grows (read-only), and continued here."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import sqlite3
import subprocess
import time
from pathlib import Path
from typing import Any

import httpx
from bs4 import BeautifulSoup

from app.settings import Settings
from tests.conftest import FAKE_CLAUDE
from tests.helpers import count, fake_cli, send, wait_for_events
from tests.security._support import make_session

FIXTURES = Path(__file__).parents[2] / "fixtures" / "claude_projects"
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

    # Listed still, now as the session that follows it.
    page = BeautifulSoup((await client.get("/sessions")).text, "html.parser")
    row = page.select_one(f"#terminal-sessions li[data-uuid='{SHOP}']")
    assert "followed here" in row.get_text()
    assert row.select_one("a.btn")["href"] == session_url
    assert row.select_one("form") is None


async def test_an_unknown_terminal_session_is_said(client: httpx.AsyncClient) -> None:
    terminal_transcript()
    r = await client.post("/sessions/import/claude/not-there", follow_redirects=False)
    assert r.status_code == 422
    assert "No Claude Code session not-there" in r.text


async def test_no_recent_terminal_session_no_section(client: httpx.AsyncClient) -> None:
    page = BeautifulSoup((await client.get("/sessions")).text, "html.parser")
    assert page.select_one("#terminal-sessions") is None


LEAF = "10000009-0000-4000-8000-000000000000"


def next_turn(path: Path) -> None:
    """What the terminal's CLI writes next: a prompt and its answer."""
    base = {"sessionId": SHOP, "cwd": "/srv/demo/shop", "isSidechain": False}
    prompt = base | {
        "type": "user",
        "uuid": "20000001-0000-4000-8000-000000000000",
        "parentUuid": LEAF,
        "timestamp": "2026-11-02T10:05:00Z",
        "message": {"role": "user", "content": "How many files are there?"},
    }
    answer = base | {
        "type": "assistant",
        "uuid": "20000002-0000-4000-8000-000000000000",
        "parentUuid": prompt["uuid"],
        "timestamp": "2026-11-02T10:05:03Z",
        "message": {
            "id": "msg_live",
            "role": "assistant",
            "model": "claude-fake-1",
            "stop_reason": "end_turn",
            "content": [{"type": "text", "text": "There are three files."}],
        },
    }
    unknown = {"type": "hologram-state", "sessionId": SHOP, "beams": "<b>3</b>"}
    with path.open("a") as f:
        f.write("\n".join(json.dumps(o) for o in (prompt, unknown, answer)) + "\n")


async def events_of(client: httpx.AsyncClient, session_id: str) -> list[dict[str, Any]]:
    r = await client.get(f"/api/sessions/{session_id}/events")
    assert r.status_code == 200, r.text
    events: list[dict[str, Any]] = r.json()["events"]
    return events


async def test_a_recent_terminal_session_is_followed_read_only(
    client: httpx.AsyncClient,
) -> None:
    path = terminal_transcript()
    r = await client.post(f"/sessions/import/claude/{SHOP}", follow_redirects=False)
    session_url = r.headers["location"]
    session_id = session_url.rsplit("/", 1)[1]
    page = BeautifulSoup((await client.get(session_url)).text, "html.parser")
    banner = page.select_one("#follow-banner")
    assert banner is not None
    assert "Following this session live from its terminal" in banner.get_text()
    assert page.select_one("#composer") is None
    # Sending from here would make two CLIs write one session.
    r = await client.post(f"/api/sessions/{session_id}/messages", json={"text": "hi"})
    assert r.status_code == 409 and "Continue here" in r.json()["detail"]
    r = await client.post(f"{session_url}/messages", data={"text": "hi"})
    assert r.status_code == 409 and "Quit claude there" in r.text

    before = len(await events_of(client, session_id))
    next_turn(path)
    deadline = time.monotonic() + 10
    while True:
        added = (await events_of(client, session_id))[before:]
        if any(e["kind"] == "turn_end" for e in added) or time.monotonic() > deadline:
            break
        await asyncio.sleep(0.05)
    assert [(e["kind"], e.get("text")) for e in added] == [
        ("user_message", "How many files are there?"),
        ("note", json.dumps({"type": "hologram-state", "sessionId": SHOP, "beams": "<b>3</b>"})),
        ("assistant_message", "There are three files."),
        ("turn_end", None),
    ]

    # No claude runs in that folder here: continuing is allowed, and it sticks.
    r = await client.post(f"{session_url}/continue-here", follow_redirects=False)
    assert r.status_code == 303
    page = BeautifulSoup((await client.get(session_url)).text, "html.parser")
    assert page.select_one("#follow-banner") is None
    assert page.select_one("#composer") is not None
    assert "Continued here" in page.select_one("#transcript").get_text()
    # The line of an unknown type: folded, as text (its markup is not markup).
    raw = page.select_one("#transcript details.raw-line")
    assert raw is not None and raw.select_one("summary code").get_text() == "hologram-state"
    assert '"beams": "<b>3</b>"' in raw.select_one("pre").get_text()
    assert raw.select_one("pre b") is None
    report = (await client.post("/api/import/claude", json={"path": str(path)})).json()
    assert report["files"][0]["status"] == "skipped"
    assert "continued in Angelia" in report["files"][0]["reason"]


async def test_an_old_terminal_session_is_not_followed(client: httpx.AsyncClient) -> None:
    path = terminal_transcript()
    week_ago = time.time() - 7 * 86400
    os.utime(path, (week_ago, week_ago))
    r = await client.post(f"/sessions/import/claude/{SHOP}", follow_redirects=False)
    assert r.status_code == 303
    page = BeautifulSoup((await client.get(r.headers["location"])).text, "html.parser")
    assert page.select_one("#follow-banner") is None
    assert page.select_one("#composer") is not None


async def test_continue_here_waits_for_the_terminal_cli_to_exit(
    client: httpx.AsyncClient, tmp_path: Path
) -> None:
    # The transcript names a real folder, in which a process called claude runs.
    folder = tmp_path / "shop"
    folder.mkdir()
    path = terminal_transcript()
    path.write_text(path.read_text().replace('"/srv/demo/shop"', json.dumps(str(folder))))
    (tmp_path / "bin").mkdir()
    claude = fake_cli(tmp_path / "bin", "claude", "time.sleep(60)")
    cli = subprocess.Popen([str(claude)], cwd=folder)
    try:
        r = await client.post(f"/sessions/import/claude/{SHOP}", follow_redirects=False)
        session_url = r.headers["location"]
        session_id = session_url.rsplit("/", 1)[1]
        page = BeautifulSoup((await client.get(session_url)).text, "html.parser")
        assert "claude still runs in" in page.select_one("#follow-running").get_text()

        r = await client.post(f"/api/sessions/{session_id}/continue-here")
        assert r.status_code == 409 and "quit it in its terminal first" in r.json()["detail"]
        r = await client.post(f"{session_url}/continue-here", follow_redirects=True)
        error = BeautifulSoup(r.text, "html.parser").select_one("#continue-error")
        assert error is not None and str(folder) in error.get_text()
        assert BeautifulSoup(r.text, "html.parser").select_one("#composer") is None
    finally:
        cli.kill()
        cli.wait()
    r = await client.post(f"/api/sessions/{session_id}/continue-here")
    assert r.status_code == 200 and r.json() == {"session_id": session_id, "was_following": True}
    r = await client.post(f"/api/sessions/{session_id}/continue-here")
    assert r.json()["was_following"] is False
    r = await client.post(f"/api/sessions/{session_id}/messages", json={"text": "hi"})
    assert r.status_code != 409


async def test_the_apps_own_claude_in_the_folder_does_not_hold_continue_here(
    client: httpx.AsyncClient, tmp_path: Path, fake_claude: dict[str, Any]
) -> None:
    # A session of the app runs its agent, an executable named claude, in the folder a
    # terminal session (whose CLI has exited) names.
    folder = tmp_path / "shop"
    folder.mkdir()
    (tmp_path / "bin").mkdir()
    run_fake = f"import runpy; runpy.run_path({str(FAKE_CLAUDE)!r}, run_name='__main__')"
    agent = fake_cli(tmp_path / "bin", "claude", run_fake)
    own = await make_session(client, folder, {**fake_claude, "command": [str(agent)]})
    await send(client, own, "hi")
    await wait_for_events(client, own, count("turn_end"))
    path = terminal_transcript()
    path.write_text(path.read_text().replace('"/srv/demo/shop"', json.dumps(str(folder))))
    r = await client.post(f"/sessions/import/claude/{SHOP}", follow_redirects=False)
    session_url = r.headers["location"]
    session_id = session_url.rsplit("/", 1)[1]

    async def flags() -> tuple[bool, str, bool | None]:
        page = BeautifulSoup((await client.get(session_url)).text, "html.parser")
        history = BeautifulSoup((await client.get("/sessions")).text, "html.parser")
        row = history.select_one(f"#terminal-sessions li[data-uuid='{SHOP}']")
        (live,) = [s for s in (await client.get("/api/claude/live")).json() if s["cwd"]]
        return page.select_one("#follow-running") is not None, row.get_text(), live["running"]

    running_here, row, listed = await flags()
    assert not running_here and listed is False
    assert "still running in a terminal" not in row and "ended" in row

    # A terminal's claude in that folder still holds it.
    cli = subprocess.Popen([str(agent)], cwd=folder, stdin=subprocess.PIPE)
    try:
        running_here, row, listed = await flags()
        assert running_here and listed is True and "still running in a terminal" in row
        r = await client.post(f"/api/sessions/{session_id}/continue-here")
        assert r.status_code == 409 and str(folder) in r.json()["detail"]
    finally:
        cli.kill()
        cli.wait()

    r = await client.post(f"{session_url}/continue-here", follow_redirects=False)
    assert r.status_code == 303 and r.headers["location"] == session_url
    page = BeautifulSoup((await client.get(session_url)).text, "html.parser")
    assert page.select_one("#follow-banner") is None
    assert page.select_one("#composer") is not None
    r = await client.post(f"/api/sessions/{session_id}/continue-here")
    assert r.status_code == 200 and r.json() == {"session_id": session_id, "was_following": False}
    # The app's own session ran on all along.
    assert (await client.get(f"/api/sessions/{own}")).json()["status"] == "live"


async def test_deleting_a_followed_session_ends_the_following(
    client: httpx.AsyncClient, settings: Settings
) -> None:
    path = terminal_transcript()
    r = await client.post(f"/sessions/import/claude/{SHOP}", follow_redirects=False)
    session_id = r.headers["location"].rsplit("/", 1)[1]
    assert (await client.get(f"/sessions/{session_id}")).status_code == 200
    assert (await client.delete(f"/api/sessions/{session_id}")).status_code == 204

    next_turn(path)
    await asyncio.sleep(1.0)  # the follower would have stored the turn by now
    with sqlite3.connect(settings.db_path) as db:
        (left,) = db.execute("SELECT count(*) FROM event WHERE session_id = ?", (session_id,))
    assert left == (0,)
    # Opening it again imports the whole file into a new session.
    r = await client.post(f"/sessions/import/claude/{SHOP}", follow_redirects=False)
    assert r.headers["location"] != f"/sessions/{session_id}"
