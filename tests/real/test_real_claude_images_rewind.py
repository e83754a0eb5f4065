"""Images and rewinding files, end to end with the real Claude Code CLI.

Images: attached to a message through the API, checked, stored under the data dir and
sent on as image blocks the fake model receives unchanged. Rewind: files the agent wrote
after a message go back to how they were before it, through the CLI's own checkpoints.
"""

from __future__ import annotations

import base64
import struct
import zlib
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.conftest import LiveServer
from tests.fakes.fake_model_server import FakeModelServer, request_images
from tests.helpers import count, of_kind, send, wait_for_events
from tests.real.test_real_claude_permissions import the_pending_request

pytestmark = pytest.mark.real_cli


def png(width: int = 2, height: int = 1) -> bytes:
    """A valid PNG of grey pixels."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        body = kind + data
        return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body))

    raw = b"".join(b"\x00" + b"\x80" * width for _ in range(height))
    header = struct.pack(">IIBBBBB", width, height, 8, 0, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(raw))
        + chunk(b"IEND", b"")
    )


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


@pytest.mark.conformance("images", backend="claude")
async def test_an_image_reaches_the_model_and_is_served_back(
    client: httpx.AsyncClient, claude_session: str, fake_model: FakeModelServer
) -> None:
    sid = claude_session
    image = png()
    r = await client.post(
        f"/api/sessions/{sid}/messages",
        json={
            "text": "what is in this image",
            "images": [{"media_type": "image/png", "data": b64(image)}],
        },
    )
    assert r.status_code == 202, r.text
    events = await wait_for_events(client, sid, count("turn_end"))
    [message] = of_kind(events, "user_message")
    [ref] = message["images"]
    assert ref["media_type"] == "image/png" and "data" not in ref
    served = await client.get(ref["url"])
    assert served.status_code == 200 and served.content == image
    assert served.headers["content-type"] == "image/png"

    sent = [i for e in fake_model.message_requests() for i in request_images(e)]
    assert sent and sent[0]["source"] == {
        "type": "base64",
        "media_type": "image/png",
        "data": b64(image),
    }


@pytest.mark.parametrize(
    ("image", "reason"),
    [
        ({"media_type": "image/svg+xml", "data": b64(b"<svg/>")}, "not supported"),
        ({"media_type": "image/png", "data": "not base64!"}, "not valid base64"),
        ({"media_type": "image/jpeg", "data": b64(png())}, "the data is image/png"),
        (
            {
                "media_type": "image/png",
                "data": b64(b"\x89PNG\r\n\x1a\n" + b"x" * (5 * 1024 * 1024)),
            },
            "larger than 5 MB",
        ),
    ],
)
async def test_a_bad_image_is_refused_and_nothing_is_sent(
    client: httpx.AsyncClient, claude_session: str, image: dict[str, str], reason: str
) -> None:
    sid = claude_session
    r = await client.post(f"/api/sessions/{sid}/messages", json={"text": "look", "images": [image]})
    assert r.status_code == 422 and reason in r.text, r.text
    assert (await client.get(f"/api/sessions/{sid}/events")).json()["events"] == []


async def test_more_than_ten_images_are_refused(
    client: httpx.AsyncClient, claude_session: str
) -> None:
    one = {"media_type": "image/png", "data": b64(png())}
    r = await client.post(
        f"/api/sessions/{claude_session}/messages", json={"text": "x", "images": [one] * 11}
    )
    assert r.status_code == 422, r.text


@pytest.fixture
def fake_rules(project_dir: Path) -> dict[str, Any]:
    return write_and_edit_rules(project_dir)


def write_and_edit_rules(project_dir: Path) -> dict[str, Any]:
    """ "write new" writes new.txt; "edit existing" reads existing.txt, then edits its
    "original line" to "changed line"."""
    existing = project_dir / "existing.txt"
    return {
        "rules": [
            {
                "match": "write new",
                "tool": "Write",
                "input": {"file_path": str(project_dir / "new.txt"), "content": "brand new\n"},
            },
            {"match": "edit existing", "tool": "Read", "input": {"file_path": str(existing)}},
        ],
        "after_tool_rules": [
            {
                "match": "original line",
                "tool": "Edit",
                "input": {
                    "file_path": str(existing),
                    "old_string": "original line",
                    "new_string": "changed line",
                },
            }
        ],
    }


async def allow_all(client: httpx.AsyncClient, sid: str, turns: int) -> list[dict[str, Any]]:
    """Allow every request until ``turns`` turns have ended."""
    while True:
        events = (await client.get(f"/api/sessions/{sid}/events")).json()["events"]
        if len(of_kind(events, "turn_end")) >= turns:
            return events
        pending = (
            await client.get("/api/permissions", params={"status": "pending", "session_id": sid})
        ).json()
        for row in pending:
            await client.post(
                f"/api/permissions/{row['id']}/decision", json={"decision": "allow_once"}
            )
        await wait_for_events(
            client,
            sid,
            lambda ev: (
                len(of_kind(ev, "turn_end")) >= turns
                or len(of_kind(ev, "permission_request")) > len(of_kind(ev, "permission_decision"))
            ),
        )


async def test_rewind_restores_the_files_to_before_a_message(
    server: LiveServer, client: httpx.AsyncClient, claude_session: str, project_dir: Path
) -> None:
    sid = claude_session
    existing = project_dir / "existing.txt"
    existing.write_text("original line\n")
    await send(client, sid, "write new")
    await the_pending_request(client, sid)
    await allow_all(client, sid, 1)
    await send(client, sid, "edit existing")
    events = await allow_all(client, sid, 2)
    assert existing.read_text() == "changed line\n" and (project_dir / "new.txt").exists()
    first, second = (m["seq"] for m in of_kind(events, "user_message"))

    r = await client.post(
        f"/api/sessions/{sid}/rewind", json={"event_seq": second, "dry_run": True}
    )
    assert r.status_code == 200, r.text
    assert r.json()["files"] == [str(existing)] and r.json()["dry_run"] is True
    assert existing.read_text() == "changed line\n"  # a dry run changes nothing

    r = await client.post(f"/api/sessions/{sid}/rewind", json={"event_seq": second})
    assert r.status_code == 200, r.text
    assert existing.read_text() == "original line\n"
    assert (project_dir / "new.txt").exists()

    # After the CLI was started again (resumed), its checkpoints are still there.
    await server.app.state.angelia.manager.stop_brain(sid)
    r = await client.post(f"/api/sessions/{sid}/rewind", json={"event_seq": first})
    assert r.status_code == 200, r.text
    assert r.json()["files"] == [str(project_dir / "new.txt")]
    assert not (project_dir / "new.txt").exists()

    events = (await client.get(f"/api/sessions/{sid}/events")).json()["events"]
    assert [(e["event_seq"], e["files"]) for e in of_kind(events, "rewind")] == [
        (second, [str(existing)]),
        (first, [str(project_dir / "new.txt")]),
    ]
    r = await client.post(
        f"/api/sessions/{sid}/rewind", json={"event_seq": of_kind(events, "turn_end")[0]["seq"]}
    )
    assert r.status_code == 422 and "not a message you sent" in r.text
