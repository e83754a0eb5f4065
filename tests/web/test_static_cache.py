"""The browser keeps /static files but checks them on every use; nothing else is kept."""

from __future__ import annotations

import httpx

from app.resources import static_dir


async def test_static_files_are_revalidated_and_pages_are_not_kept(
    client: httpx.AsyncClient,
) -> None:
    r = await client.get("/static/js/core.js")
    assert r.status_code == 200
    assert r.content == (static_dir() / "js" / "core.js").read_bytes()
    assert r.headers["cache-control"] == "no-cache"
    # The other security headers still come with it.
    assert r.headers["x-content-type-options"] == "nosniff"
    etag = r.headers["etag"]

    again = await client.get("/static/js/core.js", headers={"If-None-Match": etag})
    assert again.status_code == 304 and again.content == b""
    # Another file's tag does not match: the file comes whole.
    other = await client.get("/static/app.css", headers={"If-None-Match": etag})
    assert other.status_code == 200 and other.headers["cache-control"] == "no-cache"

    missing = await client.get("/static/js/nothing-here.js")
    assert missing.status_code == 404 and missing.headers["cache-control"] == "no-store"
    page = await client.get("/sessions")
    assert page.status_code == 200 and page.headers["cache-control"] == "no-store"
