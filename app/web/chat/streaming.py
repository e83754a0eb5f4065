"""Replay-then-follow: the one generator behind every SSE stream.

It subscribes before reading the stored events, so nothing appended in between is
missed, and skips anything at or below the last sequence number it sent, so nothing
is sent twice. It ends when the client goes away or the server stops.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

from starlette.requests import Request

from app.services.store.eventlog import EventLog, StoredEvent

REPLAY_BATCH = 500
DISCONNECT_POLL_S = 5.0


async def replay_then_follow(
    events: EventLog, session_id: str, after: int, request: Request
) -> AsyncIterator[StoredEvent]:
    last = after
    with events.subscribe(session_id) as sub:
        while True:
            batch = events.records(session_id, after=last, limit=REPLAY_BATCH)
            for event in batch:
                yield event
                last = event.seq
            if len(batch) < REPLAY_BATCH:
                break
        while not sub.overflowed:
            try:
                item = await asyncio.wait_for(sub.queue.get(), timeout=DISCONNECT_POLL_S)
            except TimeoutError:
                if await request.is_disconnected():
                    return
                continue
            if item is None:
                return
            if item.seq <= last:
                continue
            yield item
            last = item.seq
