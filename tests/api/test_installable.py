"""What a phone needs to install Angelia: the manifest's icons, fetched as a browser does
(without the sign-in cookie), are PNGs of the sizes the manifest claims."""

from __future__ import annotations

import re
import struct

import httpx

from tests.conftest import TOKEN, LiveServer


def png_size(body: bytes) -> tuple[int, int]:
    """Width and height from a PNG's IHDR chunk (the first, right after the signature)."""
    assert body[:8] == b"\x89PNG\r\n\x1a\n" and body[12:16] == b"IHDR", body[:16]
    width, height = struct.unpack(">II", body[16:24])
    return width, height


async def test_every_icon_is_public_and_the_size_it_claims(server: LiveServer) -> None:
    async with httpx.AsyncClient(base_url=server.url) as anonymous:
        manifest = (await anonymous.get("/manifest.webmanifest")).json()
        assert manifest["display"] == "standalone" and manifest["start_url"] == "/"
        sizes: dict[str, set[str]] = {}
        for icon in manifest["icons"]:
            r = await anonymous.get(icon["src"])
            assert r.status_code == 200, icon
            assert r.headers["content-type"] == icon["type"], icon
            if icon["type"] == "image/png":
                width, height = png_size(r.content)
                assert icon["sizes"] == f"{width}x{height}", icon
            for purpose in icon.get("purpose", "any").split():
                sizes.setdefault(purpose, set()).add(icon["sizes"])
    # Android's launcher and splash want 192 and 512; a maskable one fills adaptive shapes.
    assert {"192x192", "512x512"} <= sizes["any"]
    assert "512x512" in sizes["maskable"]


async def test_ios_finds_its_icon_on_every_page(server: LiveServer) -> None:
    # iOS ignores the manifest's icons for the Home Screen and reads this link instead,
    # both on the app's pages and on the signed-out ones a new phone sees first.
    async with httpx.AsyncClient(base_url=server.url) as anonymous:
        signed_out = await anonymous.get("/", headers={"Accept": "text/html"})
        assert signed_out.status_code == 401
        home = await anonymous.get(f"/?token={TOKEN}", follow_redirects=True)
        assert home.status_code == 200
        for page in (signed_out, home):
            found = re.search(r'<link rel="apple-touch-icon" href="([^"]+)"', page.text)
            assert found, page.url
            icon = await anonymous.get(found.group(1))
            assert png_size(icon.content) == (180, 180)
