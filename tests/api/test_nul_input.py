"""A NUL character in any text the app takes is refused with a 422 before anything is
stored or run: it could reach no command line, path or git without a crash."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.api.test_chat import make_profile
from tests.conftest import LiveServer
from tests.services.git.conftest import init_repo


@pytest.fixture
def repo(project_dir: Path) -> Path:
    return init_repo(project_dir, {"f.txt": "one\n"})


async def _stored(client: httpx.AsyncClient) -> tuple[int, int]:
    sessions = (await client.get("/api/sessions")).json()
    profiles = (await client.get("/api/profiles")).json()
    return len(sessions), len(profiles)


async def test_json_bodies_with_a_nul_are_refused_and_store_nothing(
    client: httpx.AsyncClient, repo: Path, fake_claude: dict[str, Any], tmp_path: Path
) -> None:
    pid = await make_profile(client, repo, fake_claude)
    before = await _stored(client)
    profile = {
        "name": "p",
        "backend": "claude",
        "cwd": str(repo),
        "command": fake_claude["command"],
    }
    refused = [
        ("POST", "/api/sessions", {"profile_id": pid, "worktree": True, "base": "a\x00b"}),
        ("POST", "/api/sessions", {"profile_id": pid, "title": "x\x00"}),
        ("POST", "/api/profiles", {**profile, "model": "opus\x00"}),
        ("POST", "/api/profiles", {**profile, "model": "\x00"}),
        ("POST", "/api/profiles", {**profile, "env": {"A": "b\x00"}}),
        ("POST", "/api/profiles", {**profile, "command": ["claude", "-x\x00"]}),
        ("PATCH", f"/api/profiles/{pid}", {"model": "opus\x00"}),
        ("PATCH", f"/api/profiles/{pid}", {"mcp_servers": {"s": {"command": "a\x00"}}}),
        (
            "POST",
            "/api/board/compare",
            {"prompt": "hi", "runs": [{"profile_id": pid, "model": "\x00"}]},
        ),
    ]
    for method, url, body in refused:
        r = await client.request(method, url, json=body)
        assert r.status_code == 422, (url, body, r.status_code, r.text)
        assert "NUL" in r.text, r.text
    assert await _stored(client) == before
    profile_now = (await client.get(f"/api/profiles/{pid}")).json()
    assert profile_now["model"] is None and profile_now["mcp_servers"] == {}
    # No worktree was begun for the refused base.
    assert not (tmp_path / "data" / "worktrees").exists() or not any(
        (tmp_path / "data" / "worktrees").rglob("*")
    )


async def test_query_path_and_form_values_with_a_nul_are_refused(
    server: LiveServer, client: httpx.AsyncClient, repo: Path, fake_claude: dict[str, Any]
) -> None:
    pid = await make_profile(client, repo, fake_claude)
    before = await _stored(client)
    r = await client.get("/api/search", params={"q": "a\x00b"})
    assert r.status_code == 422, r.text
    r = await client.get("/api/sessions/a%00b")
    assert r.status_code == 422, r.text
    origin = {"Origin": server.url}
    forms = [
        ("/sessions", {"profile_id": pid, "worktree": "yes", "base": "a\x00b"}),
        ("/profiles", {"name": "p", "backend": "claude", "cwd": str(repo), "model": "\x00"}),
    ]
    for url, data in forms:
        r = await client.post(url, data=data, headers=origin)
        assert r.status_code == 422, (url, r.status_code, r.text[:300])
        assert "NUL" in r.text
    assert await _stored(client) == before
