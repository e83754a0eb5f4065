"""A brain whose consumer falls behind stops reading: the agent writing flat out then
waits on a full pipe instead of this process holding its whole flood, and nothing it
wrote is lost once the consumer takes the events again. Through the real transport,
against the fake ``claude``, which says how many pieces it has written so far."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import TYPE_CHECKING

from app.brains.base import EVENTS_HIGH
from app.brains.claude.brain import ClaudeBrain
from app.brains.events import TextDelta, TurnEnded

if TYPE_CHECKING:
    from conftest import FakeClaudeFiles

PIECES = 100_000


async def written_when_still(progress: Path, still_s: float = 2.0, timeout: float = 60) -> str:
    """What the fake's progress file says once it has not changed for ``still_s``, and
    says at least a queue's worth: on a loaded machine a fake that has not filled the
    queue yet may just be waiting for a CPU."""
    deadline = time.monotonic() + timeout
    last, since = "", time.monotonic()
    while time.monotonic() < deadline:
        now = progress.read_text() if progress.exists() else ""
        if now != last:
            last, since = now, time.monotonic()
        elif (
            now
            and time.monotonic() - since >= still_s
            and (now == "all" or int(now) >= EVENTS_HIGH)
        ):
            return now
        await asyncio.sleep(0.1)
    raise AssertionError(f"the fake kept writing: {last}")


async def test_an_agent_flooding_a_consumer_that_does_not_read_waits_on_its_pipe(
    claude_files: FakeClaudeFiles, tmp_path: Path
) -> None:
    progress = tmp_path / "progress"
    claude_files.scenario([{"text": "x" * PIECES, "chunks": PIECES, "progress": str(progress)}])
    brain = ClaudeBrain(claude_files.config())
    await brain.start()
    try:
        await brain.send("flood")
        # Nobody takes the brain's events, so its reader stops once it holds a queue's worth.
        written = await written_when_still(progress)
        assert written != "all", "the brain read the whole flood into memory"
        # The queue, a slice of reading, and the pipe and the reader's buffer in between.
        assert int(written) < 10 * EVENTS_HIGH, written

        text: list[str] = []
        async for event in brain.events():
            if isinstance(event, TextDelta):
                text.append(event.text)
            elif isinstance(event, TurnEnded):
                break
        assert "".join(text) == "x" * PIECES
        assert progress.read_text() == "all"
    finally:
        await brain.stop()
