"""A sign-out racing a cookie's first request after a start: through a real ``angelia
serve``, a revoked sign-in never works afterwards, and one that still works is listed."""

from __future__ import annotations

import asyncio
from pathlib import Path

import httpx

from app.web.access.guard import COOKIE_NAME
from tests.conftest import TOKEN
from tests.faults._support import ServerProcess

SIGNINS = 150


async def sign_in(client: httpx.AsyncClient, label: str) -> str:
    r = await client.get("/", params={"token": TOKEN}, headers={"User-Agent": label})
    assert r.status_code == 303, r.text
    secret = r.cookies.get(COOKIE_NAME)
    assert secret
    # Each sign-in is another browser: this client must not send the cookie back.
    client.cookies.clear()
    return secret


async def test_a_revoke_racing_a_first_request_after_a_start_always_wins(
    tmp_path: Path,
) -> None:
    data_dir = tmp_path / "data"
    first = ServerProcess(data_dir, tmp_path).start()
    try:
        async with first.client() as bearer:
            cookies = {f"probe-{i}": await sign_in(bearer, f"probe-{i}") for i in range(SIGNINS)}
    finally:
        first.stop()

    # After a start no sign-in is in memory yet: each cookie's first request reads it.
    again = ServerProcess(data_dir, tmp_path, port=first.port).start()
    try:
        async with (
            again.client() as bearer,
            httpx.AsyncClient(base_url=again.url, timeout=30) as plain,
        ):
            ids = {s["label"]: s["id"] for s in (await bearer.get("/api/signins")).json()}
            assert set(ids) == set(cookies)

            async def use(secret: str) -> int:
                r = await plain.get("/api/sessions", headers={"Cookie": f"{COOKIE_NAME}={secret}"})
                return r.status_code

            async def revoke(signin_id: str) -> int:
                return (await bearer.delete(f"/api/signins/{signin_id}")).status_code

            for label, secret in cookies.items():
                plain.cookies.clear()
                revoked, first_use = await asyncio.gather(revoke(ids[label]), use(secret))
                assert first_use in (200, 401) and revoked == 204, (first_use, revoked)

            still_working = [label for label, secret in cookies.items() if await use(secret) != 401]
            plain.cookies.clear()
            listed = [s["label"] for s in (await bearer.get("/api/signins")).json()]
        assert still_working == [], f"{len(still_working)} revoked cookies still work"
        assert listed == []
    finally:
        again.stop()
