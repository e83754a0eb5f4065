"""The instructions file: right name per backend, never overwritten silently."""

from __future__ import annotations

from pathlib import Path

import httpx


async def test_instructions_file_write_conflict_and_overwrite(
    client: httpx.AsyncClient, project_dir: Path
) -> None:
    r = await client.post(
        "/api/profiles", json={"name": "p", "backend": "claude", "cwd": str(project_dir)}
    )
    pid = r.json()["id"]
    info = (await client.get(f"/api/profiles/{pid}/instructions")).json()
    assert info["file_name"] == "CLAUDE.md" and info["exists"] is False
    assert project_dir.name in info["template"]
    r = await client.post(f"/api/profiles/{pid}/instructions", json={"content": "# one\n"})
    assert r.status_code == 201 and r.json()["overwritten"] is False
    assert (project_dir / "CLAUDE.md").read_text() == "# one\n"
    r = await client.post(f"/api/profiles/{pid}/instructions", json={"content": "# two\n"})
    assert r.status_code == 409 and "already exists" in r.json()["detail"]
    assert (project_dir / "CLAUDE.md").read_text() == "# one\n"
    r = await client.post(
        f"/api/profiles/{pid}/instructions", json={"content": "# two\n", "overwrite": True}
    )
    assert r.status_code == 201 and r.json()["overwritten"] is True
    assert (project_dir / "CLAUDE.md").read_text() == "# two\n"


async def test_backends_api_lists_claude(client: httpx.AsyncClient) -> None:
    r = await client.get("/api/backends")
    assert r.status_code == 200
    names = {b["name"]: b for b in r.json()}
    assert names["claude"]["install_hint"] == "npm i -g @anthropic-ai/claude-code"
    assert "agy" not in names
