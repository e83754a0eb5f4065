"""Pairing a phone and its device session, through the HTTPS proxy standing in for
``tailscale serve`` (tests/fakes/tls_proxy.py) in front of a real ``angelia serve``.

The desktop is a loopback client with the master token; the phone goes through the proxy
naming the remote host, with the pairing page's Origin as a browser's fetch sends it.
"""

from __future__ import annotations

import base64
import hashlib
import os
import re
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec

from app.services.access.pairing import FAILED
from app.services.access.remote import RemoteRecord, write_record
from tests.conftest import TOKEN
from tests.faults._support import ServerProcess
from tests.security._support import REPO
from tests.security.test_remote_origin import (
    HTML,
    ORIGIN,
    OWNER,
    assert_pair_json,
    assert_pair_page,
    direct,
    through,
)

PHONE = {"origin": ORIGIN}
BEARER = {"authorization": f"Bearer {TOKEN}"}
COOKIE = "__Host-angelia_device"


def _start(tmp: Path) -> ServerProcess:
    data = tmp / "data"
    data.mkdir(mode=0o700)
    write_record(data, RemoteRecord(origin=ORIGIN, owner=OWNER, serve=["--https=443"]))
    return ServerProcess(data, tmp).start(timeout=120)


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    """A server whose pairing failure budget the tests here never spend."""
    server = _start(tmp_path_factory.mktemp("pairing"))
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def own_server(tmp_path: Path) -> Iterator[ServerProcess]:
    """A server of its own, for a test that spends failures."""
    server = _start(tmp_path)
    try:
        yield server
    finally:
        server.stop()


def create(server: ServerProcess) -> dict[str, Any]:
    with direct(server, **BEARER) as desk:
        r = desk.post("/api/pairings")
        assert r.status_code == 201, r.text
        made: dict[str, Any] = r.json()
        return made


def secret_of(pairing: dict[str, Any]) -> str:
    return str(pairing["url"]).split("#s=", 1)[1]


def redeem(phone: httpx.Client, **body: str) -> httpx.Response:
    return phone.post("/api/pairings/redeem", json=body, headers=PHONE)


def status(phone: httpx.Client, waiting: str, **headers: str) -> httpx.Response:
    return phone.post(
        "/api/pairings/redeem/status", json={"waiting": waiting}, headers={**PHONE, **headers}
    )


def answer(server: ServerProcess, pairing_id: str, verb: str) -> int:
    with direct(server, **BEARER) as desk:
        return desk.post(f"/api/pairings/{pairing_id}/{verb}").status_code


def pair(server: ServerProcess, proxy: Any, name: str = "Test phone") -> str:
    """Pair a phone through the proxy; returns its device cookie's value."""
    pairing = create(server)
    with through(proxy) as phone:
        waiting = redeem(phone, secret=secret_of(pairing), name=name).json()["waiting"]
        assert answer(server, pairing["id"], "approve") == 204
        r = status(phone, waiting)
        assert r.json() == {"state": "allowed"}
        found = re.search(rf"{COOKIE}=([^;]+)", r.headers["set-cookie"])
        assert found
        return found.group(1)


def device_rows(server: ServerProcess) -> list[tuple[str, str, str]]:
    with sqlite3.connect(Path(server.data_dir, "angelia.db")) as db:
        return list(db.execute("SELECT id, secret_hash, name FROM device"))


def test_a_phone_pairs_only_once_the_desktop_allows_it(
    served: ServerProcess, tls_proxy: Any
) -> None:
    proxy = tls_proxy(served.port)
    pairing = create(served)
    assert re.fullmatch(rf"{re.escape(ORIGIN)}/pair#s=[A-Za-z0-9_-]{{43}}", pairing["url"])
    assert re.fullmatch(r"[0-9A-HJKMNP-TV-Z]{8}", pairing["code"])
    with through(proxy) as phone:
        page = phone.get("/pair", headers=HTML)
        assert page.status_code == 200 and '<script src="/static/js/pair.js"' in page.text
        assert phone.get("/static/js/pair.js").status_code == 200
        r = redeem(phone, secret=secret_of(pairing), name="Pixel <b>")
        assert r.status_code == 200, r.text
        waiting = r.json()["waiting"]
        # Asked, not yet allowed: no session, and the app stays shut.
        r = status(phone, waiting)
        assert r.json() == {"state": "asked"} and "set-cookie" not in r.headers
        assert_pair_page(phone.get("/", headers=HTML))
        with direct(served, **BEARER) as desk:
            asked = desk.get("/api/pairings").json()
            assert [(p["id"], p["name"]) for p in asked] == [(pairing["id"], "Pixel <b>")]
            page = desk.get("/devices", headers=HTML).text
            assert "Pair 'Pixel &lt;b&gt;'?" in page and "Pixel <b>" not in page
        assert answer(served, pairing["id"], "approve") == 204
        r = status(phone, waiting)
        assert r.json() == {"state": "allowed"}
        cookie = r.headers["set-cookie"]
        value = re.search(rf"^{COOKIE}=([A-Za-z0-9_-]{{43}});", cookie)
        assert value, cookie
        attrs = {a.strip().lower() for a in cookie.split(";")[1:]}
        assert {"secure", "httponly", "path=/", "samesite=strict"} <= attrs
        assert f"max-age={30 * 24 * 3600}" in attrs and not any(
            a.startswith("domain") for a in attrs
        )
        # Single use: the waiting id and the secret are spent.
        assert status(phone, waiting).json() == {"state": "refused"}
        again = redeem(phone, secret=secret_of(pairing), name="again")
        assert again.status_code == 400 and again.json() == {"detail": FAILED}
    secret = value.group(1)
    # Only the hash is stored.
    rows = device_rows(served)
    mine = [r for r in rows if r[1] == hashlib.sha256(secret.encode()).hexdigest()]
    assert len(mine) == 1 and mine[0][2] == "Pixel <b>"
    assert secret not in Path(served.data_dir, "angelia.db").read_bytes().decode("latin-1")
    with through(proxy, cookie=f"{COOKIE}={secret}") as phone:
        page = phone.get("/sessions", headers=HTML)
        assert page.status_code == 200 and "Pair this device" not in page.text
        assert phone.get("/api/sessions").status_code == 200
        listed = {d["id"]: d for d in phone.get("/api/devices").json()}
        assert listed[mine[0][0]]["current"] is True


def test_a_refused_pairing_gives_no_session(served: ServerProcess, tls_proxy: Any) -> None:
    proxy = tls_proxy(served.port)
    pairing = create(served)
    with through(proxy) as phone:
        waiting = redeem(phone, code=pairing["code"].lower(), name="stranger").json()["waiting"]
        assert answer(served, pairing["id"], "refuse") == 204
        r = status(phone, waiting)
        assert r.json() == {"state": "refused"} and "set-cookie" not in r.headers
        # An answered pairing is not answered again.
        assert answer(served, pairing["id"], "approve") == 404


def test_no_fixation_a_cookie_the_client_sent_never_becomes_a_session(
    served: ServerProcess, tls_proxy: Any
) -> None:
    proxy = tls_proxy(served.port)
    chosen = "A" * 43
    pairing = create(served)
    with through(proxy, cookie=f"{COOKIE}={chosen}") as phone:
        waiting = redeem(phone, secret=secret_of(pairing), name="fixed").json()["waiting"]
        assert answer(served, pairing["id"], "approve") == 204
        r = status(phone, waiting)
        minted = re.search(rf"{COOKIE}=([^;]+)", r.headers["set-cookie"])
        assert minted and minted.group(1) != chosen
        assert_pair_json(phone.get("/api/sessions"))  # still the chosen value: refused
    digest = hashlib.sha256(chosen.encode()).hexdigest()
    assert all(row[1] != digest for row in device_rows(served))


def test_only_the_desktop_makes_or_answers_a_pairing(served: ServerProcess, tls_proxy: Any) -> None:
    proxy = tls_proxy(served.port)
    secret = pair(served, proxy)
    with through(proxy) as phone:
        # Without a device session: told to pair, whatever it carries.
        assert_pair_json(phone.post("/api/pairings", headers=PHONE))
        assert_pair_json(phone.post("/api/pairings", headers={**PHONE, **BEARER}))
    pending = create(served)
    with through(proxy, cookie=f"{COOKIE}={secret}") as phone:
        r = phone.post("/api/pairings", headers=PHONE)
        assert r.status_code == 403 and "computer where Angelia runs" in r.json()["detail"]
        assert phone.post("/devices/pair", headers=PHONE).status_code == 403
        assert phone.get("/api/pairings").status_code == 403
        assert (
            phone.post(f"/api/pairings/{pending['id']}/approve", headers=PHONE).status_code == 403
        )
    with direct(served) as anonymous:
        assert anonymous.post("/api/pairings", headers={"origin": served.url}).status_code == 401


def test_the_device_cookie_works_only_remotely_and_keeps_csrf(
    served: ServerProcess, tls_proxy: Any
) -> None:
    proxy = tls_proxy(served.port)
    secret = pair(served, proxy)
    with direct(served, cookie=f"{COOKIE}={secret}") as local:
        assert local.get("/api/sessions").status_code == 401
        assert "Pair this device" not in local.get("/", headers=HTML).text
    with through(proxy, cookie=f"{COOKIE}={secret}") as phone:
        # No Origin, no Referer, no CSRF token: not same-origin.
        assert phone.post("/api/sessions", json={}).status_code == 403
        assert (
            phone.post(
                "/api/sessions", json={}, headers={"referer": "https://evil.example/"}
            ).status_code
            == 403
        )
        assert (
            phone.post("/api/sessions", json={}, headers={"x-csrf-token": "nope"}).status_code
            == 403
        )
        # Same-origin proof: the request reaches the route (422: the empty body is wrong).
        assert phone.post("/api/sessions", json={}, headers=PHONE).status_code == 422
        referer = {"referer": f"{ORIGIN}/sessions"}
        assert phone.post("/api/sessions", json={}, headers=referer).status_code == 422
        # The master token does not stand in for the device cookie, nor add to it.
        assert phone.get("/api/sessions", headers=BEARER).status_code == 200
    with through(proxy) as phone:
        assert_pair_json(phone.get("/api/sessions", headers=BEARER))
    # Redeeming without an Origin is refused too: the page's fetch always sends one.
    with through(proxy) as phone:
        r = phone.post("/api/pairings/redeem", json={"code": "00000000", "name": "x"})
        assert r.status_code == 403


def _push_keys() -> dict[str, str]:
    key = ec.generate_private_key(ec.SECP256R1()).public_key()
    point = key.public_bytes(
        serialization.Encoding.X962, serialization.PublicFormat.UncompressedPoint
    )

    def b64(raw: bytes) -> str:
        return base64.urlsafe_b64encode(raw).rstrip(b"=").decode()

    return {"p256dh": b64(point), "auth": b64(b"0123456789abcdef")}


def test_unpairing_refuses_the_next_request_ends_streams_and_drops_push(
    served: ServerProcess, tls_proxy: Any
) -> None:
    proxy = tls_proxy(served.port)
    secret = pair(served, proxy, name="to revoke")
    device_id = next(r[0] for r in device_rows(served) if r[2] == "to revoke")
    endpoint = f"https://fcm.googleapis.com/fcm/send/{device_id}"
    with through(proxy, cookie=f"{COOKIE}={secret}") as phone:
        sub = {"endpoint": endpoint, "keys": _push_keys()}
        assert phone.post("/api/push/subscriptions", json=sub, headers=PHONE).status_code == 201
    with sqlite3.connect(Path(served.data_dir, "angelia.db")) as db:
        rows = list(
            db.execute("SELECT device_id FROM push_subscription WHERE endpoint=?", (endpoint,))
        )
    assert rows == [(device_id,)]
    with through(proxy, cookie=f"{COOKIE}={secret}") as phone:
        with phone.stream(
            "GET", "/sidebar/live", headers={"accept": "text/event-stream"}
        ) as stream:
            assert stream.status_code == 200
            with direct(served, **BEARER) as desk:
                assert desk.delete(f"/api/devices/{device_id}").status_code == 204
            revoked = time.monotonic()
            for _ in stream.iter_bytes():
                pass
            ended = time.monotonic() - revoked
        assert ended < 5, ended
        assert_pair_json(phone.get("/api/sessions"))
        assert_pair_page(phone.get("/", headers=HTML))
    with sqlite3.connect(Path(served.data_dir, "angelia.db")) as db:
        assert (
            list(db.execute("SELECT 1 FROM push_subscription WHERE endpoint=?", (endpoint,))) == []
        )
    with direct(served, **BEARER) as desk:
        assert device_id not in {d["id"] for d in desk.get("/api/devices").json()}
        assert desk.delete(f"/api/devices/{device_id}").status_code == 404


def test_every_failure_is_the_same_and_five_wrong_codes_void_it(
    own_server: ServerProcess, tls_proxy: Any
) -> None:
    proxy = tls_proxy(own_server.port)
    pairing = create(own_server)
    code = pairing["code"]
    wrong = ("0" if code[0] != "0" else "1") + code[1:]
    with through(proxy) as phone:
        answers = [
            redeem(phone, code=wrong, name="x"),
            redeem(phone, secret="A" * 43, name="x"),
            redeem(phone, name="x"),
            redeem(phone, code=wrong, secret=secret_of(pairing), name="x"),
            redeem(phone, code=wrong, name="x"),
            redeem(phone, code=wrong, name="x"),
            redeem(phone, code=wrong, name="x"),
        ]
        assert {(r.status_code, r.text) for r in answers} == {(400, f'{{"detail":"{FAILED}"}}')}
        # Five wrong codes so far: the right one no longer works, nor does the secret.
        r = redeem(phone, code=code, name="x")
        assert (r.status_code, r.json()) == (400, {"detail": FAILED})
        r = redeem(phone, secret=secret_of(pairing), name="x")
        assert (r.status_code, r.json()) == (400, {"detail": FAILED})


def test_one_global_failure_budget_whatever_x_forwarded_for_says(
    own_server: ServerProcess, tls_proxy: Any
) -> None:
    proxy = tls_proxy(own_server.port)
    pairing = create(own_server)
    with through(proxy) as phone:
        for n in range(10):
            spoofed = {"x-forwarded-for": f"203.0.113.{n}"}
            r = phone.post(
                "/api/pairings/redeem",
                json={"secret": "B" * 43, "name": "x"},
                headers={**PHONE, **spoofed},
            )
            assert r.status_code == 400
        # The budget is spent for everyone: even the right secret is refused, the same way.
        r = redeem(phone, secret=secret_of(pairing), name="x")
        assert (r.status_code, r.json()) == (400, {"detail": FAILED})


async def test_without_a_remote_origin_there_is_nothing_to_pair_with(
    client: httpx.AsyncClient,
) -> None:
    r = await client.post("/api/pairings")
    assert r.status_code == 409 and "angelia remote enable" in r.json()["detail"]
    page = (await client.get("/devices", headers=HTML)).text
    assert 'id="pair-a-phone" disabled' in page and "angelia remote enable" in page


def _angelia_pair(server: ServerProcess) -> subprocess.Popen[str]:
    argv = [sys.executable, "-m", "app.cli", "pair", "--data-dir", str(server.data_dir)]
    env = {**{k: v for k, v in os.environ.items() if not k.startswith("ANGELIA_")}}
    env["ANGELIA_TOKEN"] = TOKEN
    return subprocess.Popen(
        argv, cwd=REPO, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )


def _code_printed(proc: subprocess.Popen[str]) -> str:
    assert proc.stdout is not None
    for line in proc.stdout:
        found = re.search(r"type the code ([0-9A-Z]{4}-[0-9A-Z]{4})\.", line)
        if found:
            return found.group(1)
    raise AssertionError("angelia pair printed no code")


@pytest.mark.parametrize(("typed", "allowed"), [("y\n", True), ("", False)])
def test_angelia_pair_asks_in_the_terminal(
    served: ServerProcess, tls_proxy: Any, typed: str, allowed: bool
) -> None:
    proxy = tls_proxy(served.port)
    proc = _angelia_pair(served)
    try:
        code = _code_printed(proc)
        with through(proxy) as phone:
            waiting = redeem(phone, code=code, name=f"terminal {allowed}").json()["waiting"]
            out, _ = proc.communicate(typed, timeout=60)
            assert f"Pair 'terminal {allowed}'? [y/N]" in out
            r = status(phone, waiting)
        assert r.json() == {"state": "allowed" if allowed else "refused"}
        assert ("set-cookie" in r.headers) is allowed
        assert proc.returncode == (0 if allowed else 1)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
