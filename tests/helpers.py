"""Small helpers shared by the API, page, service, real-CLI and install tests."""

from __future__ import annotations

import asyncio
import json
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest

Event = dict[str, Any]


async def wait_for_events(
    client: httpx.AsyncClient,
    session_id: str,
    done: Callable[[list[Event]], bool],
    *,
    timeout: float = 30.0,
) -> list[Event]:
    """Poll the stored events until ``done(events)`` holds; fail with the events seen."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    events: list[Event] = []
    while loop.time() < deadline:
        r = await client.get(f"/api/sessions/{session_id}/events")
        r.raise_for_status()
        events = r.json()["events"]
        if done(events):
            return events
        await asyncio.sleep(0.05)
    kinds = [
        (e["seq"], e["kind"], {k: e[k] for k in e if k in ("text", "message")}) for e in events
    ]
    raise AssertionError(f"timed out waiting for events; saw {kinds}")


def count(kind: str, n: int = 1) -> Callable[[list[Event]], bool]:
    return lambda events: sum(e["kind"] == kind for e in events) >= n


def kinds(events: list[Event]) -> list[str]:
    return [e["kind"] for e in events]


async def read_sse(
    client: httpx.AsyncClient,
    url: str,
    *,
    until: Callable[[list[Event]], bool],
    headers: dict[str, str] | None = None,
    timeout: float = 30.0,
) -> list[Event]:
    """Read an SSE stream, parse ``id``/``event``/``data`` frames, stop when ``until`` holds."""
    frames: list[Event] = []

    async def run() -> None:
        async with client.stream("GET", url, headers=headers or {}) as resp:
            assert resp.status_code == 200, resp.status_code
            assert resp.headers["content-type"].startswith("text/event-stream")
            frame: dict[str, str] = {}
            async for line in resp.aiter_lines():
                if line == "":
                    if "data" in frame:
                        data = json.loads(frame["data"])
                        data["_sse_id"] = frame.get("id")
                        data["_sse_event"] = frame.get("event")
                        frames.append(data)
                        if until(frames):
                            return
                    frame = {}
                    continue
                if line.startswith(":"):
                    continue
                key, _, value = line.partition(":")
                value = value[1:] if value.startswith(" ") else value
                frame[key] = frame[key] + "\n" + value if key in frame else value

    await asyncio.wait_for(run(), timeout=timeout)
    return frames


async def send(client: httpx.AsyncClient, session_id: str, text: str) -> None:
    """Send a message that must be taken at once (not queued behind an approval)."""
    r = await client.post(f"/api/sessions/{session_id}/messages", json={"text": text})
    assert r.status_code == 202, r.text
    assert r.json()["queued"] is False, r.json()


def covered(frames: list[Event]) -> list[tuple[int, str]]:
    """(seq, kind) of every stored event the stream's frames stand for: a client that fell
    behind gets a run of text pieces as one event that says how many it ``joined``."""
    out: list[tuple[int, str]] = []
    for f in frames:
        n = int(f.get("joined", 1))
        out += [(seq, f["kind"]) for seq in range(f["seq"] - n + 1, f["seq"] + 1)]
    return out


def assert_frames_are_stored(frames: list[Event], stored: list[Event]) -> None:
    """Each frame is the stored event of its seq (with that seq as its SSE id and its kind
    as the SSE event), or a run of stored text pieces joined: their text in order and the
    last one's other fields (a client that fell behind gets those, see ``covered``)."""
    by_seq = {e["seq"]: e for e in stored}
    for f in frames:
        assert f["_sse_id"] == str(f["seq"]) and f["_sse_event"] == f["kind"], f
        n = int(f.get("joined", 1))
        pieces = [by_seq[seq] for seq in range(f["seq"] - n + 1, f["seq"] + 1)]
        shown = {k: v for k, v in f.items() if k not in ("_sse_id", "_sse_event")}
        if n == 1:
            assert shown == pieces[0]
            continue
        assert shown["text"] == "".join(p["text"] for p in pieces)
        rest = {k: v for k, v in shown.items() if k not in ("text", "joined")}
        assert rest == {k: v for k, v in pieces[-1].items() if k != "text"}


def seqs_of(frames: list[Event]) -> list[int]:
    """The seq of every stored event the frames stand for (see ``covered``)."""
    return [seq for seq, _ in covered(frames)]


def of_kind(events: list[Event], kind: str) -> list[Event]:
    return [e for e in events if e["kind"] == kind]


def fake_cli(bindir: Path, name: str, body: str) -> Path:
    """An executable Python script called ``name`` in ``bindir`` that runs ``body``
    (with ``sys`` and ``time`` imported) whatever its arguments."""
    path = bindir / name
    path.write_text(f"#!{sys.executable}\nimport sys, time\n{body}\n")
    path.chmod(0o755)
    return path


def setup_executable(variable: str, default: Path | None, what: str) -> Path:
    """An executable that .ci/setup provides, named by ``variable`` (else ``default``).

    Missing, the test is skipped, or fails when ANGELIA_REQUIRE_REAL_CLI=1 (as in CI), so a
    broken setup cannot pass as a run of skipped tests.
    """
    configured = os.environ.get(variable)
    path = Path(configured) if configured else default
    if path is None or not (path.is_file() and os.access(path, os.X_OK)):
        problem = f"{what} not found at {path}" if path else f"{what}: {variable} is unset"
        if os.environ.get("ANGELIA_REQUIRE_REAL_CLI") == "1":
            pytest.fail(f"{problem} (ANGELIA_REQUIRE_REAL_CLI=1; run .ci/setup)")
        pytest.skip(f"{problem}; run .ci/setup or set {variable}")
    return path
