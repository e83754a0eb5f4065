"""Failures the schemathesis run found, pinned one by one (see test_openapi.py)."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest

from tests.conftest import LiveServer


async def test_search_with_a_nul_character(client: httpx.AsyncClient) -> None:
    # Refused like a NUL anywhere else, not a 500.
    r = await client.get("/api/search", params={"q": "a\x00b"})
    assert r.status_code == 422, r.text


@pytest.mark.parametrize("field", ["name", "cwd"])
async def test_patch_profile_with_null_required_field(
    client: httpx.AsyncClient, project_dir: Path, field: str
) -> None:
    r = await client.post(
        "/api/profiles", json={"name": "p", "backend": "claude", "cwd": str(project_dir)}
    )
    assert r.status_code == 201
    r = await client.patch(f"/api/profiles/{r.json()['id']}", json={field: None})
    assert r.status_code == 422, r.text


@pytest.mark.parametrize("path", ["/api/sessions/nope/stream", "/sessions/nope/live"])
async def test_stream_of_an_unknown_session_is_404(server: LiveServer, path: str) -> None:
    async with server.client() as c, c.stream("GET", path) as r:
        assert r.status_code == 404
