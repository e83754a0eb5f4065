"""``GET /api/claude/live``: terminal sessions written lately, not the app's own."""

from __future__ import annotations

import os
from pathlib import Path

import httpx

from app.services.store import store
from tests.conftest import LiveServer
from tests.services.transcripts.test_terminal import UUID_A, UUID_B, transcript


async def test_lists_recent_terminal_sessions_but_not_the_apps_own(
    server: LiveServer, client: httpx.AsyncClient, tmp_path: Path, project_dir: Path
) -> None:
    projects = Path(os.environ["CLAUDE_CONFIG_DIR"]) / "projects"
    transcript(projects, UUID_A, str(project_dir), "Fix the flaky test", age_s=30)
    transcript(projects, UUID_B, str(project_dir), "Refactor", age_s=90)
    r = await client.get("/api/claude/live", params={"minutes": 5})
    assert r.status_code == 200, r.text
    rows = r.json()
    assert [(x["backend_session_id"], x["title"]) for x in rows] == [
        (UUID_A, "Fix the flaky test"),
        (UUID_B, "Refactor"),
    ]
    assert all(x["session_id"] is None for x in rows)

    # A session the app runs itself writes a transcript too: it is not a terminal one.
    engine = server.app.state.angelia.engine
    body = {"name": "p", "backend": "claude", "cwd": str(project_dir)}
    profile_id = (await client.post("/api/profiles", json=body)).json()["id"]
    chat = store.create_session(engine, profile_id=profile_id, title="mine")
    store.update_session(engine, chat.id, backend_session_id=UUID_B)
    server.app.state.angelia.events.append(chat.id, "user_message", {"text": "hi"})
    server.app.state.angelia.events.flush_sync()
    rows = (await client.get("/api/claude/live", params={"minutes": 5})).json()
    assert [x["backend_session_id"] for x in rows] == [UUID_A]

    assert (await client.get("/api/claude/live", params={"minutes": 0})).status_code == 422
