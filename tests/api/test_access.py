"""Safe defaults: token on every route but health/static, Host allowlist, cookies, CSRF."""

from __future__ import annotations

import httpx

from tests.conftest import TOKEN, LiveServer


async def test_health_needs_no_token(server: LiveServer) -> None:
    async with httpx.AsyncClient(base_url=server.url) as c:
        r = await c.get("/api/health")
    assert r.status_code == 200
    body = r.json()
    assert body["ok"] is True and isinstance(body["version"], str)


async def test_api_and_pages_need_the_token(server: LiveServer) -> None:
    async with httpx.AsyncClient(base_url=server.url) as c:
        for path in ("/api/profiles", "/api/sessions", "/", "/api/sessions/x/stream", "/docs"):
            r = await c.get(path)
            assert r.status_code == 401, path
        r = await c.get("/api/profiles", headers={"Authorization": "Bearer wrong"})
        assert r.status_code == 401


async def test_foreign_host_is_refused_even_with_token(server: LiveServer) -> None:
    async with server.client() as c:
        r = await c.get("/api/profiles", headers={"Host": "evil.example:8765"})
        assert r.status_code == 403
        r = await c.get("/api/profiles", headers={"Host": f"localhost:{server.port}"})
        assert r.status_code == 200


async def test_foreign_origin_is_refused(server: LiveServer) -> None:
    async with server.client() as c:
        r = await c.get("/api/profiles", headers={"Origin": "http://evil.example"})
        assert r.status_code == 403
        assert "access-control-allow-origin" not in r.headers


async def test_token_url_sets_strict_httponly_cookie_and_redirects(server: LiveServer) -> None:
    async with httpx.AsyncClient(base_url=server.url) as c:
        r = await c.get(f"/?token={TOKEN}")
        assert r.status_code == 303
        assert r.headers["location"] == "/"
        cookie = r.headers["set-cookie"]
        assert "HttpOnly" in cookie and "SameSite=Strict" in cookie
        # A fresh data dir's "/" sends the cookie holder on to the first-run wizard.
        page = await c.get("/", follow_redirects=True)
        assert page.status_code == 200 and page.url.path == "/welcome"
        assert "text/html" in page.headers["content-type"]
        assert "script-src 'self'" in page.headers["content-security-policy"]
        bad = await httpx.AsyncClient(base_url=server.url).get("/?token=nope")
        assert bad.status_code == 401


async def test_cookie_posts_need_same_origin_proof(server: LiveServer, project_dir: object) -> None:
    async with httpx.AsyncClient(base_url=server.url) as c:
        await c.get(f"/?token={TOKEN}")
        body = {"name": "p", "backend": "claude", "cwd": str(project_dir)}
        r = await c.post("/api/profiles", json=body)
        assert r.status_code == 403
        r = await c.post("/api/profiles", json=body, headers={"Origin": server.url})
        assert r.status_code == 201
