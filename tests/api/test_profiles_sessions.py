"""The fixed JSON contract for profiles and sessions."""

from __future__ import annotations

from pathlib import Path

import httpx


async def test_profile_crud(client: httpx.AsyncClient, project_dir: Path) -> None:
    r = await client.post(
        "/api/profiles",
        json={
            "name": "demo",
            "backend": "claude",
            "cwd": str(project_dir),
            "model": "sonnet",
            "allowed_tools": ["Bash(git add:*)", "Read", "mcp__srv__tool"],
            "disallowed_tools": ["Edit(src/**)"],
            "mcp_servers": {
                "srv": {"command": "srv", "args": ["--x"]},
                "web": {"type": "http", "url": "http://127.0.0.1:9/mcp"},
            },
            "command": ["claude"],
            "env": {"FOO": "bar"},
        },
    )
    assert r.status_code == 201, r.text
    profile = r.json()
    assert profile["id"] and profile["permission_mode"] == "default"
    pid = profile["id"]
    assert (await client.get(f"/api/profiles/{pid}")).json()["name"] == "demo"
    assert [p["id"] for p in (await client.get("/api/profiles")).json()] == [pid]
    r = await client.patch(f"/api/profiles/{pid}", json={"permission_mode": "plan"})
    assert r.status_code == 200 and r.json()["permission_mode"] == "plan"
    r = await client.delete(f"/api/profiles/{pid}")
    assert r.status_code == 204
    assert (await client.get(f"/api/profiles/{pid}")).status_code == 404


async def test_profile_validation_names_the_field(
    client: httpx.AsyncClient, project_dir: Path
) -> None:
    base = {"name": "x", "backend": "claude", "cwd": str(project_dir)}
    cases = {
        "backend": {**base, "backend": "nope"},
        "cwd": {**base, "cwd": str(project_dir / "missing")},
        "allowed_tools": {**base, "allowed_tools": ["Bash(git add:*"]},
        "disallowed_tools": {**base, "disallowed_tools": ["not a rule"]},
        "mcp_servers": {**base, "mcp_servers": {"s": {"args": []}}},
        "command": {**base, "command": []},
        "permission_mode": {**base, "permission_mode": "yolo"},
        "env": {**base, "env": {"1BAD": "x"}},
    }
    for field, body in cases.items():
        r = await client.post("/api/profiles", json=body)
        assert r.status_code == 422, (field, r.text)
        fields = [e["field"] for e in r.json()["detail"]]
        assert any(f.startswith(field) for f in fields), (field, fields)


async def test_agy_is_refused_with_the_reason(client: httpx.AsyncClient, project_dir: Path) -> None:
    r = await client.post(
        "/api/profiles", json={"name": "a", "backend": "agy", "cwd": str(project_dir)}
    )
    assert r.status_code == 422
    assert "cannot deny a single tool" in r.text


async def test_session_create_get_list(client: httpx.AsyncClient, project_dir: Path) -> None:
    pid = (
        await client.post(
            "/api/profiles", json={"name": "p", "backend": "claude", "cwd": str(project_dir)}
        )
    ).json()["id"]
    r = await client.post("/api/sessions", json={"profile_id": pid, "title": "first"})
    assert r.status_code == 201
    s = r.json()
    for key in (
        "id",
        "profile_id",
        "backend",
        "backend_session_id",
        "title",
        "status",
        "created_at",
    ):
        assert key in s
    assert s["backend"] == "claude" and s["backend_session_id"] is None and s["title"] == "first"
    assert (await client.get(f"/api/sessions/{s['id']}")).json()["id"] == s["id"]
    assert [x["id"] for x in (await client.get("/api/sessions")).json()] == [s["id"]]
    assert (await client.get("/api/sessions/nope")).status_code == 404
    r = await client.post("/api/sessions", json={"profile_id": "nope"})
    assert r.status_code == 404


async def test_profile_asking_what_its_backend_cannot_enforce_is_refused(
    client: httpx.AsyncClient, project_dir: Path
) -> None:
    mcp = {"srv": {"command": "srv"}}
    grok = {"name": "p", "backend": "grok", "cwd": str(project_dir)}
    # Grok Build reads files without asking: a deny for Read could never be applied.
    r = await client.post("/api/profiles", json={**grok, "disallowed_tools": ["Read(./x)"]})
    assert r.status_code == 422
    detail = r.json()["detail"][0]
    assert detail["field"] == "disallowed_tools" and "runs Read without asking" in detail["message"]
    # Its --permission-mode flag is ignored, and plan is not a mode the app can keep.
    r = await client.post("/api/profiles", json={**grok, "permission_mode": "plan"})
    assert r.status_code == 422
    detail = r.json()["detail"][0]
    assert detail["field"] == "permission_mode" and "no 'plan' mode" in detail["message"]
    r = await client.post(
        "/api/profiles",
        json={**grok, "mcp_servers": mcp, "disallowed_tools": ["Bash(rm:*)"]},
    )
    assert r.status_code == 201, r.text
    profile_id = r.json()["id"]
    r = await client.post(
        f"/api/profiles/{profile_id}/rules", json={"rule": "Grep", "decision": "deny"}
    )
    assert r.status_code == 422 and "runs Grep without asking" in r.text
    r = await client.post(
        f"/api/profiles/{profile_id}/rules", json={"rule": "Grep", "decision": "allow"}
    )
    assert r.status_code == 201
    r = await client.post(
        "/api/profiles", json={"name": "p", "backend": "acp", "cwd": str(project_dir)}
    )
    assert r.status_code == 422 and r.json()["detail"][0]["field"] == "command"
    r = await client.post(
        "/api/profiles",
        json={"name": "p", "backend": "claude", "cwd": str(project_dir), "mcp_servers": mcp},
    )
    assert r.status_code == 201
