"""Twenty sessions streaming at once: nothing lost, nothing doubled, no lock errors."""

from __future__ import annotations

import asyncio
import logging
from collections import Counter
from itertools import groupby
from pathlib import Path
from typing import Any

import httpx
import pytest

from app.settings import Settings
from tests.conftest import LiveServer, write_scenario
from tests.helpers import Event, covered, read_sse
from tests.security._support import make_session

SESSIONS = 20
CHUNKS = 200
TEXT = "".join(chr(ord("a") + i % 26) for i in range(CHUNKS))


@pytest.fixture
def settings(settings: Settings) -> Settings:
    # More agents than the default cap on running ones: this is a load test.
    return settings.model_copy(update={"max_agents": SESSIONS})


def turn_over(frames: list[Event]) -> bool:
    """The turn's last event: the status going back to live after its turn_end."""
    last = frames[-1]
    return (
        last["kind"] == "status"
        and last.get("status") == "live"
        and any(f["kind"] == "turn_end" for f in frames)
    )


async def test_twenty_sessions_stream_at_once(
    server: LiveServer,
    client: httpx.AsyncClient,
    project_dir: Path,
    fake_claude: dict[str, Any],
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.WARNING)
    write_scenario(fake_claude["scenario"], [[{"text": TEXT, "chunks": CHUNKS}]])
    sids = [await make_session(client, project_dir, fake_claude) for _ in range(SESSIONS)]
    responses: list[httpx.Response] = []

    async def one(sid: str) -> list[Event]:
        async with server.client() as own:
            reader = asyncio.create_task(
                read_sse(
                    own,
                    f"/api/sessions/{sid}/stream",
                    until=turn_over,
                    timeout=90,
                )
            )
            await asyncio.sleep(0.05)
            r = await own.post(f"/api/sessions/{sid}/messages", json={"text": f"go {sid}"})
            responses.append(r)
            return await reader

    received = await asyncio.gather(*(one(sid) for sid in sids))

    assert [r.status_code for r in responses] == [202] * SESSIONS, [r.text for r in responses]
    shapes = set()
    for sid, frames in zip(sids, received, strict=True):
        stored = (await client.get(f"/api/sessions/{sid}/events")).json()["events"]
        seqs = [e["seq"] for e in stored]
        assert seqs == list(range(1, len(stored) + 1)), sid
        # Everything stored reached the SSE client exactly once, in order (text pieces
        # waiting for a client behind may come joined).
        assert covered(frames) == [(e["seq"], e["kind"]) for e in stored], sid
        kinds = Counter(e["kind"] for e in stored)
        # Deltas that were ready together may be stored as one; none may be lost.
        assert 1 <= kinds["text_delta"] <= CHUNKS and kinds["turn_end"] == 1, kinds
        assert kinds["assistant_message"] == 1 and kinds["user_message"] == 1, kinds
        deltas = "".join(f["text"] for f in frames if f["kind"] == "text_delta")
        assert deltas == TEXT, sid
        assert frames[0]["text"] == f"go {sid}"
        assert all(e["session_id"] == sid for e in stored)
        shapes.add(tuple(k for k, _ in groupby(e["kind"] for e in stored)))
    assert len(shapes) == 1, f"every session stored the same sequence of kinds: {shapes}"

    problems = [
        r.getMessage()
        for r in caplog.records
        if r.levelno >= logging.WARNING or "locked" in r.getMessage().lower()
    ]
    assert not [p for p in problems if "locked" in p.lower()], problems
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR], problems
