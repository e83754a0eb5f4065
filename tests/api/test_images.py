"""Images through the API: refused whole for an agent that does not take them."""

from __future__ import annotations

import base64
from pathlib import Path

import httpx

from tests.fakes.fake_acp_agent import FakeAcpFiles
from tests.real.test_real_claude_images_rewind import png


async def test_an_acp_agent_without_image_support_gets_a_422_and_nothing_is_stored(
    client: httpx.AsyncClient, tmp_path: Path
) -> None:
    files = FakeAcpFiles(tmp_path)
    files.scenario([{"text": "never"}])
    pid = (await client.post("/api/profiles", json=files.profile())).json()["id"]
    sid = (await client.post("/api/sessions", json={"profile_id": pid})).json()["id"]
    image = {"media_type": "image/png", "data": base64.b64encode(png()).decode()}
    r = await client.post(f"/api/sessions/{sid}/messages", json={"text": "see", "images": [image]})
    assert r.status_code == 422 and "does not take images" in r.text, r.text
    events = (await client.get(f"/api/sessions/{sid}/events")).json()["events"]
    assert not [e for e in events if e["kind"] == "user_message"]
    assert not (tmp_path / "data" / "images").exists() or not any(
        (tmp_path / "data" / "images").rglob("*.png")
    )


async def test_an_image_for_an_unknown_session_is_404(client: httpx.AsyncClient) -> None:
    r = await client.get("/api/sessions/nope/images/" + "0" * 64)
    assert r.status_code == 404
