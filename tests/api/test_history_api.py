"""Export downloads, JSON and Claude transcript imports through the API."""

from __future__ import annotations

import json
import shutil
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from app.main import create_app
from app.settings import Settings
from app.web.history import api as api_history
from tests.api.test_chat import fake_log, make_session
from tests.conftest import LiveServer, write_scenario
from tests.helpers import count, send, wait_for_events

FIXTURES = Path(__file__).parents[1] / "fixtures" / "claude_projects"
SHOP = "11111111-1111-4111-8111-111111111111"
FIX = "44444444-4444-4444-8444-444444444444"


@pytest.fixture
async def server(settings: Settings) -> AsyncIterator[LiveServer]:
    """The app with the history routes, whether or not it already includes them."""
    app = create_app(settings)
    if not any(getattr(r, "path", "") == "/api/import/claude" for r in app.routes):
        app.include_router(api_history.router)
    srv = LiveServer(app)
    await srv.start()
    try:
        yield srv
    finally:
        await srv.stop()


@pytest.fixture
def claude_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A private ``CLAUDE_CONFIG_DIR`` whose projects/ holds a copy of the fixtures."""
    home = tmp_path / "claude-home"
    shutil.copytree(FIXTURES, home / "projects")
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(home))
    return home


async def session_with_events(server: LiveServer, client: httpx.AsyncClient, cwd: Path) -> str:
    r = await client.post("/api/profiles", json={"name": "p", "backend": "claude", "cwd": str(cwd)})
    assert r.status_code == 201
    r = await client.post(
        "/api/sessions", json={"profile_id": r.json()["id"], "title": "Fix: the löğin bug"}
    )
    sid: str = r.json()["id"]
    events = server.app.state.angelia.events
    events.append(sid, "user_message", {"text": "hello there"})
    events.append(sid, "assistant_message", {"text": "General Kenobi", "message_id": "m1"})
    events.append(sid, "turn_end", {"stop_reason": "success", "is_error": False})
    await events.flush()
    return sid


async def test_markdown_download(
    server: LiveServer, client: httpx.AsyncClient, project_dir: Path
) -> None:
    sid = await session_with_events(server, client, project_dir)
    r = await client.get(f"/api/sessions/{sid}/export", params={"format": "md"})
    assert r.status_code == 200
    assert r.headers["content-type"] == "text/markdown; charset=utf-8"
    disposition = r.headers["content-disposition"]
    assert disposition.startswith('attachment; filename="Fix-the-login-bug-')
    assert disposition.endswith(".md")
    assert "filename*=UTF-8''Fix-the-l%C3%B6%C4%9Fin-bug-" in disposition
    assert r.text.startswith("# Fix: the löğin bug\n")
    assert "### You\n\nhello there" in r.text and "General Kenobi" in r.text
    # Markdown is the default.
    r = await client.get(f"/api/sessions/{sid}/export")
    assert r.headers["content-type"].startswith("text/markdown")


async def test_json_download_and_reimport(
    server: LiveServer, client: httpx.AsyncClient, project_dir: Path
) -> None:
    sid = await session_with_events(server, client, project_dir)
    r = await client.get(f"/api/sessions/{sid}/export", params={"format": "json"})
    assert r.status_code == 200
    assert r.headers["content-type"] == "application/json"
    assert r.headers["content-disposition"].split(";")[1].strip().endswith('.json"')
    doc = r.json()
    assert set(doc) >= {"session", "profile", "events"}
    assert [e["kind"] for e in doc["events"]] == ["user_message", "assistant_message", "turn_end"]

    r = await client.post(
        "/api/import/json", content=r.content, headers={"content-type": "application/json"}
    )
    assert r.status_code == 201, r.text
    body = r.json()
    assert body["events_added"] == 3
    new_id = body["session"]["id"]
    assert new_id != sid and body["session"]["title"] == "Fix: the löğin bug"
    copied = (await client.get(f"/api/sessions/{new_id}/events")).json()["events"]

    def core(events: list[dict[str, Any]]) -> list[Any]:
        return [{k: v for k, v in e.items() if k not in ("session_id", "at")} for e in events]

    assert core(copied) == core(doc["events"])

    # The same file as a multipart upload (what a browser form sends).
    files = {"file": ("export.json", json.dumps(doc).encode(), "application/json")}
    r = await client.post("/api/import/json", files=files)
    assert r.status_code == 201, r.text


async def test_bad_requests(client: httpx.AsyncClient, tmp_path: Path) -> None:
    r = await client.get("/api/sessions/nope/export")
    assert r.status_code == 404
    r = await client.get("/api/sessions/nope/export", params={"format": "pdf"})
    assert r.status_code == 422
    r = await client.post("/api/import/json", content=b"")
    assert r.status_code == 422 and "no body" in r.json()["detail"][0]["message"]
    r = await client.post("/api/import/json", content=b"{not json")
    assert r.status_code == 422 and "not valid JSON" in r.json()["detail"][0]["message"]
    r = await client.post("/api/import/json", json={"hello": 1})
    assert (
        r.status_code == 422 and "not an Angelia session export" in r.json()["detail"][0]["message"]
    )
    r = await client.post("/api/import/json", files={"other": ("x", b"{}")})
    assert r.status_code == 422 and "'file'" in r.json()["detail"][0]["message"]
    r = await client.post("/api/import/claude", json={"path": str(tmp_path / "none")})
    assert r.status_code == 422 and "does not exist" in r.json()["detail"][0]["message"]
    r = await client.post("/api/import/claude", json={"path": "relative/dir"})
    assert r.status_code == 422 and "absolute" in r.json()["detail"][0]["message"]
    r = await client.post("/api/import/claude", json={"paths": "/x"})
    assert r.status_code == 422


async def test_history_routes_need_the_token(server: LiveServer) -> None:
    async with httpx.AsyncClient(base_url=server.url) as anonymous:
        assert (await anonymous.get("/api/sessions/x/export")).status_code == 401
        assert (await anonymous.post("/api/import/json", content=b"{}")).status_code == 401
        assert (await anonymous.post("/api/import/claude")).status_code == 401


async def test_claude_import_from_the_default_dir(
    client: httpx.AsyncClient, claude_home: Path
) -> None:
    r = await client.post("/api/import/claude")
    assert r.status_code == 200, r.text
    report = r.json()
    assert report["sessions_created"] == 4 and report["sessions_updated"] == 0
    assert report["events_added"] == 29 and report["malformed_lines"] == 2
    assert report["lines_skipped"] == 16
    assert {f["backend_session_id"] for f in report["files"]} >= {SHOP, FIX}
    assert all(f["path"].startswith(str(claude_home)) for f in report["files"])
    sessions = (await client.get("/api/sessions")).json()
    shop = next(s for s in sessions if s["backend_session_id"] == SHOP)
    assert (shop["backend"], shop["status"], shop["title"]) == (
        "claude",
        "idle",
        "List project files",
    )
    events = (await client.get(f"/api/sessions/{shop['id']}/events")).json()["events"]
    assert events[0]["kind"] == "user_message" and events[0]["imported"] is True

    r = await client.post("/api/import/claude", json={})
    assert r.json()["events_added"] == 0 and r.json()["sessions_created"] == 0
    one = claude_home / "projects" / "-srv-demo-notes" / f"{FIX}.jsonl"
    r = await client.post("/api/import/claude", json={"path": str(one)})
    assert [f["status"] for f in r.json()["files"]] == ["unchanged"]


async def test_imported_session_resumes_the_claude_session(
    client: httpx.AsyncClient,
    claude_home: Path,
    project_dir: Path,
    fake_claude: dict[str, Any],
) -> None:
    shop = claude_home / "projects" / "-srv-demo-shop" / f"{SHOP}.jsonl"
    report = (await client.post("/api/import/claude", json={"path": str(shop)})).json()
    sid = report["files"][0]["chat_session_id"]
    session = (await client.get(f"/api/sessions/{sid}")).json()
    # The transcript's folder does not exist here; point the profile at one that does.
    patch = {"cwd": str(project_dir), "command": fake_claude["command"], "env": fake_claude["env"]}
    r = await client.patch(f"/api/profiles/{session['profile_id']}", json=patch)
    assert r.status_code == 200, r.text
    write_scenario(fake_claude["scenario"], [[{"text": "resumed from the transcript"}]])
    await send(client, sid, "and now?")
    events = await wait_for_events(client, sid, count("turn_end", 2))
    assert events[-1]["kind"] in ("turn_end", "status")
    assert [e["text"] for e in events if e["kind"] == "assistant_message"][-1] == (
        "resumed from the transcript"
    )
    argv = [e["argv"] for e in fake_log(fake_claude) if "argv" in e][0]
    assert f"--resume={SHOP}" in argv
    assert not any(a.startswith("--session-id") for a in argv)
    # Angelia now holds the turns the CLI appends; importing again leaves it alone.
    r = await client.post("/api/import/claude", json={"path": str(shop)})
    assert r.json()["files"][0]["status"] == "skipped"


async def test_imported_session_whose_folder_is_gone_fails_clearly(
    client: httpx.AsyncClient, claude_home: Path, fake_claude: dict[str, Any]
) -> None:
    one = claude_home / "projects" / "-srv-demo-notes" / f"{FIX}.jsonl"
    report = (await client.post("/api/import/claude", json={"path": str(one)})).json()
    sid = report["files"][0]["chat_session_id"]
    session = (await client.get(f"/api/sessions/{sid}")).json()
    profile = (await client.get(f"/api/profiles/{session['profile_id']}")).json()
    assert profile["cwd"] == "/srv/demo/notes" and not Path(profile["cwd"]).exists()
    patch = {"command": fake_claude["command"], "env": fake_claude["env"]}
    await client.patch(f"/api/profiles/{profile['id']}", json=patch)
    r = await client.post(f"/api/sessions/{sid}/messages", json={"text": "hi"})
    assert r.status_code >= 400
    assert "/srv/demo/notes" in r.json()["detail"] and "exist" in r.json()["detail"]
    assert fake_log(fake_claude) == []
    # The imported history is still there.
    events = (await client.get(f"/api/sessions/{sid}/events")).json()["events"]
    assert sum(e.get("imported") is True for e in events) == 10


async def test_a_native_session_exports_with_deltas_folded(
    client: httpx.AsyncClient, project_dir: Path, fake_claude: dict[str, Any]
) -> None:
    # A native session is exported like any other, deltas folded into the message.
    write_scenario(fake_claude["scenario"], [[{"text": "streamed answer", "chunks": 3}]])
    sid = await make_session(client, project_dir, fake_claude)
    await send(client, sid, "stream please")
    await wait_for_events(client, sid, count("turn_end"))
    md = (await client.get(f"/api/sessions/{sid}/export")).text
    assert md.count("streamed answer") == 1
    assert "*Turn ended" in md
