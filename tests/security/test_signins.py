"""Browser sign-ins through real HTTP: each browser has its own cookie, never the master
token, and each can be signed out on its own (the page, the JSON API, expiry)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import timedelta
from pathlib import Path
from typing import Any

import httpx
from bs4 import BeautifulSoup

from app.db.models import utcnow
from app.main import create_app
from app.services.access.signins import IDLE, LIFETIME, SignIns
from app.settings import Settings
from app.web.access.guard import COOKIE_NAME
from tests.api.test_chat import make_profile
from tests.conftest import TOKEN, LiveServer


@asynccontextmanager
async def browser(server: LiveServer, label: str) -> AsyncIterator[httpx.AsyncClient]:
    """A client that signed in with the printed URL and keeps its cookie, like a browser."""
    headers = {"User-Agent": label, "Origin": server.url}
    async with httpx.AsyncClient(base_url=server.url, headers=headers, timeout=30) as c:
        r = await c.get("/", params={"token": TOKEN})
        assert r.status_code == 303, r.text
        assert c.cookies.get(COOKIE_NAME)
        yield c


def signins_of(server: LiveServer) -> SignIns:
    signins: SignIns = server.app.state.signins
    return signins


async def listed(client: httpx.AsyncClient) -> dict[str, dict[str, object]]:
    r = await client.get("/api/signins")
    assert r.status_code == 200, r.text
    return {str(s["label"]): s for s in r.json()}


async def test_the_page_lists_this_browser_and_the_others(server: LiveServer) -> None:
    async with browser(server, "Browser A") as a, browser(server, "Browser B"):
        r = await a.get("/signins")
        assert r.status_code == 200
        page = BeautifulSoup(r.text, "html.parser")
        # Keyed by the User-Agent each card keeps under its name.
        cards = {
            li.select_one(".signin-ua code").get_text(): li for li in page.select("#signins li")
        }
        assert set(cards) == {"Browser A", "Browser B"}
        mine = cards["Browser A"]
        assert "this-browser" in (mine.get("class") or [])
        assert mine.select_one(".this-browser-badge") is not None
        assert cards["Browser B"].select_one(".this-browser-badge") is None
        assert len(mine.select("time")) == 3  # signed in, last seen, expires
        assert page.select_one("#sign-out") is not None
        assert "(1)" in page.select_one("#sign-out-others").get_text()
        nav = page.select_one("nav a[href='/signins']")
        assert nav is not None and nav.get("aria-current") == "page"


async def test_a_signed_out_browser_is_shown_how_to_sign_in_and_programs_get_json(
    server: LiveServer, client: httpx.AsyncClient, project_dir: Path, fake_claude: dict[str, Any]
) -> None:
    title = "Secret project plans"
    profile_id = await make_profile(client, project_dir, fake_claude)
    r = await client.post("/api/sessions", json={"profile_id": profile_id, "title": title})
    assert r.status_code == 201, r.text
    async with browser(server, "Browser A") as a, browser(server, "Browser B") as b:
        b_id = (await listed(a))["Browser B"]["id"]
        assert (await a.post(f"/signins/{b_id}/revoke")).status_code == 303
        for path in ("/", "/sessions", "/signins", "/no-such-page"):
            page = await b.get(path, headers={"Accept": "text/html,application/xhtml+xml,*/*"})
            assert page.status_code == 401, path
            assert page.headers["content-type"].startswith("text/html")
            assert "default-src 'self'" in page.headers["content-security-policy"]
            soup = BeautifulSoup(page.text, "html.parser")
            assert soup.select_one("h1").get_text() == "This browser is not signed in"
            assert "angelia open" in page.text and "angelia serve" in page.text
            # Nothing of the app, and nothing that would need the sign-in it lacks.
            assert title not in page.text and "Browser A" not in page.text
            assert soup.select("a[href], form, script") == []
            loads = [el.get("href") for el in soup.select("link[href]")]
            assert loads and all(href.startswith("/static/") for href in loads)
            for href in loads:
                assert (await b.get(href)).status_code == 200, href
        # A program keeps a JSON answer: the API, or any path asked for as JSON.
        for path, accept in (("/api/sessions", "text/html"), ("/sessions", "application/json")):
            answer = await b.get(path, headers={"Accept": accept})
            assert answer.status_code == 401
            assert "angelia open" in answer.json()["detail"]


async def test_the_cookie_is_a_signin_not_the_master_token(server: LiveServer) -> None:
    async with browser(server, "Browser A") as a:
        value = a.cookies[COOKIE_NAME]
        assert value != TOKEN and TOKEN not in value and len(value) >= 43
        # The database keeps only a hash of it.
        with server.app.state.angelia.engine.connect() as conn:
            stored = conn.exec_driver_sql("SELECT * FROM sign_in").all()
        assert stored and not any(value in str(row) or TOKEN in str(row) for row in stored)


async def test_revoking_a_signin_refuses_its_cookie_at_once(
    server: LiveServer, client: httpx.AsyncClient
) -> None:
    async with browser(server, "Browser A") as a, browser(server, "Browser B") as b:
        assert (await b.get("/api/sessions")).status_code == 200
        b_id = (await listed(a))["Browser B"]["id"]
        r = await a.post(f"/signins/{b_id}/revoke")
        assert r.status_code == 303 and r.headers["location"] == "/signins?done=revoked"
        assert (await b.get("/api/sessions")).status_code == 401
        assert (await b.get("/")).status_code == 401
        assert (await a.get("/api/sessions")).status_code == 200
        assert "Browser B" not in await listed(a)

    # The JSON API does the same for a bearer client.
    async with browser(server, "Browser C") as c:
        c_id = (await listed(client))["Browser C"]["id"]
        assert (await client.delete(f"/api/signins/{c_id}")).status_code == 204
        assert (await c.get("/api/sessions")).status_code == 401
        r = await client.delete(f"/api/signins/{c_id}")
        assert r.status_code == 404 and "No signed-in browser" in r.json()["detail"]


async def test_sign_out_all_others_leaves_this_one_working(server: LiveServer) -> None:
    async with (
        browser(server, "Browser A") as a,
        browser(server, "Browser B") as b,
        browser(server, "Browser C") as c,
    ):
        r = await a.post("/signins/revoke-others")
        assert r.status_code == 303
        assert (await b.get("/api/sessions")).status_code == 401
        assert (await c.get("/api/sessions")).status_code == 401
        assert (await a.get("/api/sessions")).status_code == 200
        mine = await listed(a)
        assert list(mine) == ["Browser A"] and mine["Browser A"]["current"] is True


async def test_sign_out_this_browser(server: LiveServer) -> None:
    async with browser(server, "Browser A") as a, browser(server, "Browser B") as b:
        kept = a.cookies[COOKIE_NAME]
        r = await a.post("/signout")
        assert r.status_code == 200 and "signed out" in r.text
        cleared = r.headers["set-cookie"].lower()
        assert cleared.startswith(f"{COOKIE_NAME}=") and "max-age=0" in cleared
        # The old cookie is refused even by a client that kept it.
        gone = {"Cookie": f"{COOKIE_NAME}={kept}"}
        async with httpx.AsyncClient(base_url=server.url, headers=gone) as replay:
            assert (await replay.get("/api/sessions")).status_code == 401
        assert (await b.get("/api/sessions")).status_code == 200


async def test_an_expired_signin_is_refused(server: LiveServer, client: httpx.AsyncClient) -> None:
    signins = signins_of(server)
    now = utcnow()
    # Unused for longer than IDLE.
    _, idle = signins.create("Idle browser", now=now - IDLE - timedelta(minutes=1))
    # Made longer than LIFETIME ago, and used every 29 days since.
    made = now - LIFETIME - timedelta(minutes=1)
    _, old = signins.create("Old browser", now=made)
    for days in (29, 58, 87):
        checked = signins.check(old, now=made + timedelta(days=days))
        assert checked is not None
        signins.touch(checked.id)
    for secret in (idle, old):
        headers = {"Cookie": f"{COOKIE_NAME}={secret}"}
        async with httpx.AsyncClient(base_url=server.url, headers=headers) as c:
            assert (await c.get("/api/sessions")).status_code == 401
    assert not {"Idle browser", "Old browser"} & set(await listed(client))


async def test_the_master_token_as_a_cookie_is_refused_and_bearer_works(
    server: LiveServer,
) -> None:
    for name in (COOKIE_NAME, "angelia_token"):
        async with httpx.AsyncClient(
            base_url=server.url, headers={"Cookie": f"{name}={TOKEN}"}
        ) as c:
            assert (await c.get("/api/sessions")).status_code == 401
            assert (await c.get("/")).status_code == 401
    async with httpx.AsyncClient(
        base_url=server.url, headers={"Authorization": f"Bearer {TOKEN}"}
    ) as c:
        assert (await c.get("/api/sessions")).status_code == 200
        # A bearer client is no browser: nothing to sign out, and it says so.
        r = await c.post("/signout")
        assert r.status_code == 400 and "not a signed-in browser" in r.text


async def test_a_wrong_token_in_the_url_signs_nothing_in(server: LiveServer) -> None:
    async with httpx.AsyncClient(base_url=server.url) as c:
        r = await c.get("/", params={"token": TOKEN + "x"})
        assert r.status_code == 401 and "set-cookie" not in r.headers
        assert not c.cookies


async def test_opening_the_url_again_keeps_the_signin(
    server: LiveServer, client: httpx.AsyncClient
) -> None:
    async with browser(server, "Browser A") as a:
        first = a.cookies[COOKIE_NAME]
        r = await a.get("/sessions", params={"token": TOKEN})
        assert r.status_code == 303 and "set-cookie" not in r.headers
        assert a.cookies[COOKIE_NAME] == first
        assert list(await listed(client)) == ["Browser A"]


async def test_an_open_event_stream_ends_when_its_browser_is_signed_out(
    server: LiveServer, client: httpx.AsyncClient, project_dir: Path
) -> None:
    body = {"name": "p", "backend": "claude", "cwd": str(project_dir)}
    profile = (await client.post("/api/profiles", json=body)).json()["id"]
    sid = (await client.post("/api/sessions", json={"profile_id": profile})).json()["id"]
    async with browser(server, "Browser A") as a:
        a_id = (await listed(client))["Browser A"]["id"]
        async with a.stream("GET", f"/api/sessions/{sid}/stream") as stream:
            assert stream.status_code == 200
            assert (await client.delete(f"/api/signins/{a_id}")).status_code == 204
            # The stream ends by itself (the client's 30 s timeout would fail the test).
            async for _ in stream.aiter_bytes():
                pass
        assert (await a.get(f"/api/sessions/{sid}")).status_code == 401


async def test_a_new_master_token_signs_every_browser_out(settings: Settings) -> None:
    first = LiveServer(create_app(settings))
    await first.start()
    try:
        async with browser(first, "Browser A") as a:
            kept = a.cookies[COOKIE_NAME]
    finally:
        await first.stop()
    renewed = LiveServer(create_app(settings.model_copy(update={"token": TOKEN + "-new"})))
    await renewed.start()
    try:
        headers = {"Cookie": f"{COOKIE_NAME}={kept}"}
        async with httpx.AsyncClient(base_url=renewed.url, headers=headers) as c:
            assert (await c.get("/api/sessions")).status_code == 401
    finally:
        await renewed.stop()
