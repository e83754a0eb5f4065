"""The remote origin: another device comes in through an HTTPS proxy (``tailscale serve``,
here tests/fakes/tls_proxy.py) while ``angelia serve`` stays on loopback.

A real ``angelia serve`` reads the origin and owner from the record ``angelia remote
enable`` keeps; requests go through the proxy, or straight to loopback as any other
local process could send them.
"""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import PlainTextResponse
from starlette.routing import Route, WebSocketRoute
from starlette.websockets import WebSocket

from app.db.engine import open_database
from app.services.access.remote import RemoteRecord, parse_origin, write_record
from app.services.access.signins import SignIns
from app.settings import Settings
from app.web.access.guard import SecurityMiddleware
from tests.conftest import TOKEN
from tests.fakes.tls_proxy import TEST_HOST
from tests.faults._support import ServerProcess
from tests.security._support import REPO, ws_handshake

ORIGIN = f"https://{TEST_HOST}"
OWNER = "owner@example.com"
REMOTE = {"host": TEST_HOST}
HTML = {"accept": "text/html,application/xhtml+xml"}


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    root = tmp_path_factory.mktemp("remote")
    data = root / "data"
    data.mkdir(mode=0o700)
    write_record(data, RemoteRecord(origin=ORIGIN, owner=OWNER, serve=["--https=443"]))
    server = ServerProcess(data, root).start(timeout=120)
    try:
        yield server
    finally:
        server.stop()


def through(proxy: Any, **headers: str) -> httpx.Client:
    """A client of the proxy that names the remote host, as a phone's browser would."""
    return httpx.Client(
        base_url=f"https://127.0.0.1:{proxy.port}",
        headers={**REMOTE, **headers},
        verify=False,
        timeout=30,
    )


def direct(server: ServerProcess, **headers: str) -> httpx.Client:
    """A client straight to loopback: any local process can send any header there."""
    return httpx.Client(base_url=server.url, headers=headers, timeout=30)


def desktop_cookie(server: ServerProcess) -> str:
    with direct(server) as c:
        r = c.get("/", params={"token": TOKEN})
        assert r.status_code == 303
        found = re.search(r"angelia_signin=([^;]+)", r.headers["set-cookie"])
        assert found
        return found.group(1)


def assert_pair_page(r: httpx.Response) -> None:
    assert r.status_code == 401, r.text
    assert r.headers["content-type"].startswith("text/html")
    page = r.text
    assert '<html lang="en">' in page and "<main" in page
    assert "<title>Pair this device" in page and "Devices" in page
    assert TOKEN not in page and "<script" not in page and "<form" not in page


def assert_pair_json(r: httpx.Response) -> None:
    assert r.status_code == 401, r.text
    body = r.json()
    assert body["reason"] == "pair_this_device" and "Devices" in body["detail"]


def test_a_remote_request_without_a_device_session_is_told_to_pair(
    served: ServerProcess, tls_proxy: Any
) -> None:
    proxy = tls_proxy(served.port)
    with through(proxy) as c:
        for path in ("/", "/sessions", "/signins", "/no-such-page"):
            assert_pair_page(c.get(path, headers=HTML))
        assert_pair_json(c.get("/api/sessions"))
        assert_pair_json(c.get("/api/sessions", headers=HTML))
        assert_pair_json(c.post("/api/sessions", json={}, headers={"origin": ORIGIN}))
        # What anyone may load stays public: the page's stylesheet, the health check.
        assert c.get("/static/app.css").status_code == 200
        assert c.get("/api/health").status_code == 200


def test_the_master_token_and_the_desktop_cookie_are_refused_remotely(
    served: ServerProcess, tls_proxy: Any
) -> None:
    proxy = tls_proxy(served.port)
    cookie = desktop_cookie(served)
    with through(proxy) as c:
        assert_pair_json(c.get("/api/sessions", headers={"authorization": f"Bearer {TOKEN}"}))
        r = c.get("/", params={"token": TOKEN}, headers=HTML)
        assert_pair_page(r)
        assert "set-cookie" not in r.headers
        assert_pair_json(c.get("/api/sessions", headers={"cookie": f"angelia_signin={cookie}"}))
        assert_pair_page(c.get("/", headers={**HTML, "cookie": f"angelia_signin={cookie}"}))
        code = served.printed_link.split("?", 1)[1]
        r = c.get(f"/signin?{code}", headers=HTML)
        assert_pair_page(r)
        assert "set-cookie" not in r.headers
    # The same credentials still work on loopback.
    with direct(served, cookie=f"angelia_signin={cookie}") as c:
        assert c.get("/api/sessions").status_code == 200


def test_a_foreign_host_is_refused_through_the_proxy(served: ServerProcess, tls_proxy: Any) -> None:
    proxy = tls_proxy(served.port)
    auth = {"authorization": f"Bearer {TOKEN}"}
    for host in ("evil.example", f"{TEST_HOST}.evil.example", f"{TEST_HOST}:8443"):
        with through(proxy, host=host) as c:
            assert c.get("/api/sessions", headers=auth).status_code == 403, host


def test_an_origin_that_is_not_exactly_ours_is_refused(
    served: ServerProcess, tls_proxy: Any
) -> None:
    proxy = tls_proxy(served.port)
    local = served.url.removeprefix("http://")
    wrong_remote = ["https://evil.example", f"http://{TEST_HOST}", f"https://{TEST_HOST}:8443"]
    with through(proxy) as c:
        for origin in [*wrong_remote, served.url]:
            r = c.post("/api/sessions", json={}, headers={"origin": origin})
            assert r.status_code == 403, origin
    with direct(served, authorization=f"Bearer {TOKEN}") as c:
        for origin in (f"https://{local}", ORIGIN, "http://evil.example"):
            r = c.post("/api/sessions", json={}, headers={"origin": origin})
            assert r.status_code == 403, origin
        # The local origin itself still passes (422: the empty body is what is wrong).
        assert c.post("/api/sessions", json={}, headers={"origin": served.url}).status_code == 422


def test_a_funnel_request_is_refused_local_or_remote(served: ServerProcess) -> None:
    funnel = {"tailscale-funnel-request": "?1"}
    with direct(served, authorization=f"Bearer {TOKEN}", **funnel) as c:
        assert c.get("/api/sessions").status_code == 403
        assert c.get("/api/health").status_code == 403
        assert c.get("/api/sessions", headers=REMOTE).status_code == 403


def test_the_tailscale_login_header_only_ever_refuses(
    served: ServerProcess, tls_proxy: Any
) -> None:
    stranger = tls_proxy(served.port, user_login="someone-else@example.com")
    with through(stranger) as c:
        assert c.get("/api/sessions").status_code == 403
    owner = tls_proxy(served.port, user_login=OWNER)
    with through(owner) as c:
        assert_pair_json(c.get("/api/sessions"))
    # Sent straight to loopback by another local process: the owner's login lets no one
    # in (remote or local), another login is refused even with the token.
    with direct(served, **{"tailscale-user-login": OWNER}) as c:
        assert_pair_json(c.get("/api/sessions", headers=REMOTE))
        assert c.get("/api/sessions").status_code == 401
    with direct(served, **{"tailscale-user-login": "someone-else@example.com"}) as c:
        assert (
            c.get("/api/sessions", headers={"authorization": f"Bearer {TOKEN}"}).status_code == 403
        )


def test_the_proxy_strips_what_the_client_forged(served: ServerProcess, tls_proxy: Any) -> None:
    proxy = tls_proxy(served.port, user_login=OWNER)
    forged = {
        "x-forwarded-for": "203.0.113.9",
        "x-forwarded-host": "evil.example",
        "tailscale-user-login": "forged@example.com",
        "tailscale-funnel-request": "?1",
    }
    with through(proxy, **forged) as c:
        assert_pair_json(c.get("/api/sessions"))
    sent = {k.lower(): v for k, v in proxy.forwarded[-1]}
    assert sent["host"] == TEST_HOST
    assert sent["x-forwarded-for"] == "127.0.0.1"
    assert sent["x-forwarded-host"] == TEST_HOST and sent["x-forwarded-proto"] == "https"
    assert sent["tailscale-user-login"] == OWNER
    assert "tailscale-funnel-request" not in sent


def test_local_requests_work_as_before(served: ServerProcess) -> None:
    with direct(served, authorization=f"Bearer {TOKEN}") as c:
        assert c.get("/api/sessions").status_code == 200
    cookie = desktop_cookie(served)
    with direct(served, cookie=f"angelia_signin={cookie}", **HTML) as c:
        page = c.get("/sessions")
        assert page.status_code == 200 and "Pair this device" not in page.text
        assert c.post("/api/sessions", json={}).status_code == 403  # no CSRF proof
        proof = {"origin": served.url}
        assert c.post("/api/sessions", json={}, headers=proof).status_code == 422
    assert json.loads(Path(served.data_dir, "remote.json").read_text())["owner"] == OWNER


# -- the setting itself ------------------------------------------------------------------------


def _serve_exit(tmp_path: Path, *args: str, env: dict[str, str] | None = None) -> tuple[int, str]:
    run = subprocess.run(
        [sys.executable, "-m", "app.cli", "serve", "--data-dir", str(tmp_path / "d"), *args],
        cwd=REPO,
        env={**os.environ, "ANGELIA_TOKEN": TOKEN, **(env or {})},
        capture_output=True,
        text=True,
        timeout=60,
    )
    return run.returncode, run.stderr


@pytest.mark.parametrize(
    ("origin", "why"),
    [
        (f"http://{TEST_HOST}", "https://"),
        (f"https://{TEST_HOST}/angelia", "no path"),
        (f"https://{TEST_HOST}/?x=1", "no path"),
        (f"https://me@{TEST_HOST}", "user name"),
        ("https://", "must name a host"),
        (f"https://{TEST_HOST}:99999", "not a URL"),
        ("https://localhost:8443", "loopback"),
        ("https://127.0.0.1", "loopback"),
    ],
)
def test_serve_refuses_a_remote_origin_that_is_not_just_https_host_port(
    tmp_path: Path, origin: str, why: str
) -> None:
    code, err = _serve_exit(tmp_path, "--no-browser", "--remote-origin", origin)
    assert code == 2, err
    assert why in err and "Traceback" not in err


def test_serve_refuses_a_bad_remote_origin_from_the_environment(tmp_path: Path) -> None:
    code, err = _serve_exit(tmp_path, "--no-browser", env={"ANGELIA_REMOTE_ORIGIN": "ftp://x"})
    assert code == 2 and "https://" in err and "Traceback" not in err


def test_remote_origins_parse_to_host_and_port() -> None:
    assert parse_origin(f"https://{TEST_HOST.upper()}").origin == ORIGIN
    assert parse_origin(f"https://{TEST_HOST}:443/").origin == ORIGIN
    with_port = parse_origin(f"https://{TEST_HOST}:8443")
    assert with_port.origin == f"{ORIGIN}:8443"
    assert with_port.names(f"{TEST_HOST}:8443") and not with_port.names(TEST_HOST)
    assert parse_origin(ORIGIN).names(f"{TEST_HOST}:443")


# -- in-process: the connection's peer and websocket upgrades -------------------------------


def _guarded(settings: Settings) -> SecurityMiddleware:
    async def echo(ws: WebSocket) -> None:
        await ws.accept()
        await ws.close()

    async def hello(request: Request) -> PlainTextResponse:
        return PlainTextResponse("hello")

    settings.remote_origin = ORIGIN
    return SecurityMiddleware(
        Starlette(routes=[Route("/api/hello", hello), WebSocketRoute("/ws", echo)]),
        settings=settings,
        token=TOKEN,
        signins=SignIns(open_database(settings.data_dir), TOKEN),
    )


async def test_from_another_machine_only_the_remote_origin_answers(settings: Settings) -> None:
    app = _guarded(settings)
    bearer = {"authorization": f"Bearer {TOKEN}"}
    for peer, host, status in [
        ("127.0.0.1", "127.0.0.1:8765", 200),
        ("192.0.2.5", "127.0.0.1:8765", 403),
        ("192.0.2.5", "localhost:8765", 403),
        ("192.0.2.5", TEST_HOST, 401),
    ]:
        transport = httpx.ASGITransport(app=app, client=(peer, 50000))
        async with httpx.AsyncClient(transport=transport, base_url="http://x") as c:
            r = await c.get("/api/hello", headers={**bearer, "host": host})
            assert r.status_code == status, (peer, host, r.text)


async def test_a_remote_websocket_upgrade_needs_a_device_session(settings: Settings) -> None:
    app = _guarded(settings)
    bearer = {"authorization": f"Bearer {TOKEN}"}
    assert await ws_handshake(app, "/ws", {**bearer, "host": "127.0.0.1:8765"}) == (
        "websocket.accept"
    )
    for headers in [
        {**bearer, "host": TEST_HOST},
        {**bearer, "host": TEST_HOST, "origin": ORIGIN},
        {**bearer, "host": "127.0.0.1:8765", "tailscale-funnel-request": "?1"},
    ]:
        assert await ws_handshake(app, "/ws", headers) == "websocket.close", headers


# -- the proxy streams -----------------------------------------------------------------------


def test_the_proxy_passes_an_event_stream_through_as_it_comes(tls_proxy: Any) -> None:
    release = threading.Event()
    with socket.create_server(("127.0.0.1", 0)) as upstream:

        def answer() -> None:
            conn, _ = upstream.accept()
            with conn:
                conn.recv(65536)
                conn.sendall(
                    b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n"
                    b"connection: close\r\n\r\ndata: first\n\n"
                )
                release.wait(30)
                conn.sendall(b"data: second\n\n")

        thread = threading.Thread(target=answer, daemon=True)
        thread.start()
        proxy = tls_proxy(upstream.getsockname()[1])
        with through(proxy) as c, c.stream("GET", "/events") as r:
            lines = r.iter_lines()
            assert next(lines) == "data: first"  # before the upstream sent the rest
            release.set()
            assert [line for line in lines if line] == ["data: second"]
        thread.join(10)
