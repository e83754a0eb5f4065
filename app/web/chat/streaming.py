"""Replay-then-follow: the one generator behind every SSE stream.

It subscribes before reading the stored events, so nothing appended in between is
missed, and skips anything at or below the last sequence number it sent, so nothing
is sent twice. A client that falls behind gets the text pieces waiting for it joined
(``catchup``). It ends when the client goes away or the server stops.

It yields what is ready as a list, for one write to the client (``app.web.sse``), and
an empty list each time it has waited ``DISCONNECT_POLL_S`` for nothing: a keepalive.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

from starlette.requests import Request

from app.services.store.catchup import join_text_runs
from app.services.store.eventlog import EventLog, StoredEvent

REPLAY_BATCH = 500
DISCONNECT_POLL_S = 5.0
# Queued events taken at once (and joined where they can be) for a client behind.
CATCH_UP_MAX = 2000


async def replay_then_follow(
    events: EventLog, session_id: str, after: int, request: Request
) -> AsyncIterator[list[StoredEvent]]:
    last = after
    with events.subscribe(session_id) as sub:
        while True:
            batch = events.records(session_id, after=last, limit=REPLAY_BATCH)
            if batch:
                last = batch[-1].seq
                yield batch
            if len(batch) < REPLAY_BATCH:
                break
        while not sub.overflowed:
            if sub.queue.empty():
                try:
                    first = await asyncio.wait_for(sub.queue.get(), timeout=DISCONNECT_POLL_S)
                except TimeoutError:
                    if await request.is_disconnected():
                        return
                    yield []
                    continue
            else:  # no timer and no task for what is there already
                first = sub.queue.get_nowait()
            ready = [first]
            while len(ready) < CATCH_UP_MAX and not sub.queue.empty():
                ready.append(sub.queue.get_nowait())
            stopping = None in ready
            taken = ready[: ready.index(None)] if stopping else ready
            # A client that fell behind gets each run of text pieces in one event.
            joined = join_text_runs([e for e in taken if e is not None and e.seq > last])
            if joined:
                last = joined[-1].seq
                yield joined
            if stopping:
                return
