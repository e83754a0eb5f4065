"""A JSON import is checked like the API: bypass comes in as default, a new profile takes
no command, environment or MCP servers, every number and date is bounded, a backend
session id must have the backend's shape, and a refused file stores nothing."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import httpx
import pytest
from bs4 import BeautifulSoup

from tests.api.test_chat import fake_log, make_session
from tests.conftest import LiveServer, write_scenario
from tests.helpers import count, send, wait_for_events

UUID = "5f0c6a1e-2b3d-4c4e-8f50-617283940a1b"
Doc = dict[str, Any]


async def exported(
    server: LiveServer, client: httpx.AsyncClient, session_id: str
) -> tuple[Doc, bytes]:
    events = server.app.state.angelia.events
    events.append(session_id, "user_message", {"text": "hello there"})
    events.append(session_id, "assistant_message", {"text": "General Kenobi", "message_id": "m"})
    events.append(
        session_id,
        "turn_end",
        {"stop_reason": "success", "cost_usd": 0.01, "usage": {"input_tokens": 12}},
    )
    await events.flush()
    r = await client.get(f"/api/sessions/{session_id}/export", params={"format": "json"})
    assert r.status_code == 200
    return r.json(), r.content


async def post(client: httpx.AsyncClient, doc: Doc | bytes) -> httpx.Response:
    body = doc if isinstance(doc, bytes) else json.dumps(doc).encode()
    return await client.post(
        "/api/import/json", content=body, headers={"content-type": "application/json"}
    )


async def argv_of_next_turn(client: httpx.AsyncClient, sid: str, fake: dict[str, Any]) -> list[str]:
    write_scenario(fake["scenario"], [[{"text": "done"}]])
    await send(client, sid, "go on")
    await wait_for_events(client, sid, count("turn_end", 2))
    return [e["argv"] for e in fake_log(fake) if "argv" in e][-1]


def mode_in(argv: list[str]) -> str:
    return argv[argv.index("--permission-mode") + 1]


async def test_a_bypass_session_comes_in_as_default_and_runs_so(
    server: LiveServer, client: httpx.AsyncClient, project_dir: Path, fake_claude: dict[str, Any]
) -> None:
    sid = await make_session(client, project_dir, fake_claude)
    doc, _ = await exported(server, client, sid)
    doc["session"]["permission_mode"] = "bypassPermissions"

    r = await post(client, doc)
    assert r.status_code == 201, r.text
    body = r.json()
    assert body["session"]["permission_mode"] == "default"
    # It joined the profile that already works in that folder, so only the session changed.
    assert body["session"]["profile_id"] == doc["profile"]["id"]
    (change,) = body["changes"]
    assert change["field"] == "session.permission_mode"
    assert "bypassPermissions" in change["message"] and "default" in change["message"]

    argv = await argv_of_next_turn(client, body["session"]["id"], fake_claude)
    assert mode_in(argv) == "default" and "bypassPermissions" not in argv


async def test_a_new_profile_takes_no_command_env_mcp_servers_or_bypass(
    server: LiveServer,
    client: httpx.AsyncClient,
    project_dir: Path,
    tmp_path: Path,
    fake_claude: dict[str, Any],
) -> None:
    mcp = {"files": {"command": "mcp-files", "args": ["--root", "/"]}}
    sid = await make_session(
        client, project_dir, fake_claude, mcp_servers=mcp, permission_mode="bypassPermissions"
    )
    doc, _ = await exported(server, client, sid)
    assert doc["profile"]["command"] == fake_claude["command"]
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    doc["profile"]["cwd"] = str(elsewhere)

    r = await post(client, doc)
    assert r.status_code == 201, r.text
    body = r.json()
    fields = [c["field"] for c in body["changes"]]
    assert fields == [
        "profile.permission_mode",
        "profile.command",
        "profile.env",
        "profile.mcp_servers",
    ]
    messages = " ".join(c["message"] for c in body["changes"])
    assert "FAKE_CLAUDE_LOG" in messages and "files" in messages
    profile = (await client.get(f"/api/profiles/{body['session']['profile_id']}")).json()
    assert profile["id"] != doc["profile"]["id"] and profile["cwd"] == str(elsewhere)
    assert profile["name"] == "Imported · fake"
    assert (profile["command"], profile["env"], profile["mcp_servers"]) == (None, {}, {})
    assert profile["permission_mode"] == "default"

    # Once the user sets a command of their own, the agent starts asking as in default.
    patch = {"command": fake_claude["command"], "env": fake_claude["env"]}
    assert (await client.patch(f"/api/profiles/{profile['id']}", json=patch)).status_code == 200
    argv = await argv_of_next_turn(client, body["session"]["id"], fake_claude)
    assert mode_in(argv) == "default" and "--mcp-config" not in argv


def refusals(project_dir: Path) -> list[tuple[str, Any, str, str]]:
    """(where in the document, the value put there, the field refused, its reason)."""
    long_ago, far_ahead = "1900-01-01T00:00:00Z", "9999-12-31T23:59:59-14:00"
    return [
        ("profile.cwd", "relative/dir", "profile.cwd", "must be an absolute path"),
        ("profile.cwd", str(project_dir / "gone"), "profile.cwd", "does not exist"),
        ("profile.cwd", "/etc", "profile.cwd", "system folder"),
        ("profile.cwd", None, "profile.cwd", "Field required"),
        ("profile.backend", "nope", "profile.backend", "unknown backend 'nope'"),
        ("profile.backend", "agy", "profile.backend", "agy cannot be a backend"),
        ("profile.allowed_tools", ["Bash("], "profile.allowed_tools", "not a valid rule"),
        ("profile.disallowed_tools", ["Bash()"], "profile.disallowed_tools", "empty specifier"),
        ("profile.permission_timeout_s", -5, "profile.permission_timeout_s", "greater than"),
        ("profile.permission_timeout_s", 10**9, "profile.permission_timeout_s", "less than"),
        ("profile.idle_timeout_s", 5, "profile.idle_timeout_s", "greater than or equal to 60"),
        ("profile.name", "n" * 201, "profile.name", "at most 200"),
        ("session.input_tokens", 2**62, "session.input_tokens", "less than or equal to"),
        ("session.output_tokens", -1, "session.output_tokens", "greater than or equal to 0"),
        ("session.turns", 10**13, "session.turns", "less than or equal to"),
        ("session.cost_usd", 1e300, "session.cost_usd", "less than or equal to"),
        ("session.cost_usd", -0.5, "session.cost_usd", "greater than or equal to 0"),
        ("session.title", "t" * 301, "session.title", "at most 300"),
        ("session.created_at", long_ago, "session.created_at", "must lie between 2000-01-01"),
        ("session.created_at", far_ahead, "session.created_at", "must lie between"),
        ("session.updated_at", "2020-01-01T00:00:00Z", "session", "updated_at is before"),
        ("session.backend", "gemini", "session.backend", "not the profile's backend"),
        ("events.0.seq", 0, "events.0.seq", "greater than or equal to 1"),
        ("events.0.seq", 10**10, "events.0.seq", "less than or equal to"),
        ("events.0.kind", "<script>", "events.0.kind", "should match pattern"),
        ("events.2.usage", {"input_tokens": 10**13}, "events.2", "input_tokens must lie"),
        ("events.2.cost_usd", 1e300, "events.2", "cost_usd: Input should be less than"),
    ]


def put(doc: Doc, where: str, value: Any) -> Doc:
    out = copy.deepcopy(doc)
    *path, last = where.split(".")
    node: Any = out
    for key in path:
        node = node[int(key)] if isinstance(node, list) else node[key]
    if value is None:
        del node[last]
    else:
        node[last] = value
    return out


async def test_a_refused_document_says_why_and_stores_nothing(
    server: LiveServer, client: httpx.AsyncClient, project_dir: Path, tmp_path: Path
) -> None:
    r = await client.post(
        "/api/profiles", json={"name": "p", "backend": "claude", "cwd": str(project_dir)}
    )
    profile = r.json()
    r = await client.post("/api/sessions", json={"profile_id": profile["id"], "title": "t"})
    doc, raw = await exported(server, client, r.json()["id"])
    # A folder with no profile yet, so each import would create one.
    fresh = tmp_path / "fresh"
    fresh.mkdir()
    doc["profile"]["cwd"] = str(fresh)
    doc["session"]["created_at"] = "2026-01-01T00:00:00Z"
    before = (await client.get("/api/sessions")).json()

    for where, value, field, reason in refusals(project_dir):
        r = await post(client, put(doc, where, value))
        assert r.status_code == 422, (where, value, r.status_code, r.text[:300])
        (error,) = r.json()["detail"]
        assert (error["field"], reason in error["message"]) == (field, True), (where, error)

    # A generic ACP agent needs a command, which an import never brings.
    acp = put(put(doc, "profile.backend", "acp"), "session.backend", "acp")
    r = await post(client, acp)
    assert r.status_code == 422
    assert r.json()["detail"][0]["field"] == "profile.command"
    assert "An import never brings a command" in r.json()["detail"][0]["message"]

    # Numbers no JSON, SQLite or browser can hold are refused as the file is read.
    text = raw.decode()
    for bad, reason in (
        (text.replace('"cost_usd": 0.0', '"cost_usd": NaN', 1), "NaN is not a number"),
        (text.replace('"cost_usd": 0.0', '"cost_usd": 1e400', 1), "too large a number"),
        (text.replace('"turns": 0', f'"turns": {10**30}', 1), "does not fit in 64 bits"),
    ):
        r = await post(client, bad.encode())
        assert r.status_code == 422, (reason, r.text[:200])
        assert reason in r.json()["detail"][0]["message"]
    # Nesting is refused before any route reads the body.
    r = await post(client, b"[" * 100_000 + b"]" * 100_000)
    assert r.status_code == 400 and "nests deeper than 64 levels" in r.json()["detail"]

    assert (await client.get("/api/sessions")).json() == before
    assert [p["id"] for p in (await client.get("/api/profiles")).json()] == [profile["id"]]


@pytest.mark.parametrize(
    ("given", "kept"),
    [("**", False), ("../../../etc/passwd", False), ("x" * 37, False), (UUID, True)],
)
async def test_a_backend_session_id_must_look_like_one(
    server: LiveServer, client: httpx.AsyncClient, project_dir: Path, given: str, kept: bool
) -> None:
    r = await client.post(
        "/api/profiles", json={"name": "p", "backend": "claude", "cwd": str(project_dir)}
    )
    r = await client.post("/api/sessions", json={"profile_id": r.json()["id"], "title": "t"})
    doc, _ = await exported(server, client, r.json()["id"])
    doc["session"]["backend_session_id"] = given

    r = await post(client, doc)
    assert r.status_code == 201, r.text
    body = r.json()
    assert body["session"]["backend_session_id"] == (given if kept else None)
    fields = [c["field"] for c in body["changes"]]
    assert fields == ([] if kept else ["session.backend_session_id"])
    # The session's page opens (a glob in the id used to break it for good).
    page = await client.get(f"/sessions/{body['session']['id']}")
    assert page.status_code == 200


async def test_the_import_page_shows_what_was_changed(
    server: LiveServer, client: httpx.AsyncClient, project_dir: Path
) -> None:
    r = await client.post(
        "/api/profiles", json={"name": "p", "backend": "claude", "cwd": str(project_dir)}
    )
    r = await client.post("/api/sessions", json={"profile_id": r.json()["id"], "title": "<b>t</b>"})
    doc, _ = await exported(server, client, r.json()["id"])
    doc["session"]["permission_mode"] = "bypassPermissions"
    before = len((await client.get("/api/sessions")).json())

    files = {"file": ("export.json", json.dumps(doc).encode(), "application/json")}
    r = await client.post("/sessions/import/json", files=files)
    assert r.status_code == 200, r.text[:300]
    page = BeautifulSoup(r.text, "html.parser")
    report = page.select_one("#import-report")
    assert report is not None and "<b>t</b>" in report.get_text()
    (item,) = report.select("li")
    assert item["data-field"] == "session.permission_mode"
    assert "comes in as default" in item.get_text()
    link = page.select_one("#open-imported")
    assert link is not None
    new_id = str(link["href"]).rsplit("/", 1)[1]
    assert (await client.get(f"/api/sessions/{new_id}")).json()["permission_mode"] == "default"

    # A refused file says why on the page, and stores nothing.
    files = {"file": ("x.json", json.dumps(put(doc, "session.turns", -3)).encode(), "x/y")}
    r = await client.post("/sessions/import/json", files=files)
    assert r.status_code == 422
    error = BeautifulSoup(r.text, "html.parser").select_one("#import-error")
    assert error is not None and "session.turns" in error.get_text()
    assert len((await client.get("/api/sessions")).json()) == before + 1
