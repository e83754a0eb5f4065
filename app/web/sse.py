"""Server-sent events a batch at a time: whatever is ready goes out in one write.

FastAPI's streaming path operations (``response_class=EventSourceResponse`` on a
generator) hand each event through a producer task and two one-item memory streams
before the response writes it: three or four turns of the event loop per event. On a
loop busy with another session's flood every turn waits behind that flood, and a paced
session's delta spent ~30 ms at the median there (docs/performance.md, "Fewer turns per
event"). The streams that carry a transcript yield what is ready as a list instead, and
this module writes each list as one chunk, with FastAPI's own SSE encoding, response
class and headers. An empty list is a keepalive comment.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Sequence
from typing import Any

from fastapi.encoders import jsonable_encoder
from fastapi.sse import KEEPALIVE_COMMENT, EventSourceResponse, ServerSentEvent, format_sse_event

__all__ = ["STREAM_RESPONSES", "Batches", "batched_response", "encode", "frames", "one_each"]

Batches = AsyncIterator[Sequence[ServerSentEvent]]

# A batch is written in pieces of about this size: a replay of hundreds of events is not
# copied into one string.
CHUNK_BYTES = 256 * 1024
# What FastAPI sets on its own event streams: no cache, and no buffering in a proxy.
HEADERS = {"Cache-Control": "no-cache", "X-Accel-Buffering": "no"}

# For the OpenAPI description of a route that returns ``batched_response``.
STREAM_RESPONSES: dict[int | str, dict[str, Any]] = {
    200: {"description": "Server-sent events", "content": {"text/event-stream": {}}}
}


def encode(event: ServerSentEvent) -> bytes:
    """One event in the wire format, as FastAPI encodes it."""
    if event.raw_data is not None:
        data: str | None = event.raw_data
    elif event.data is not None:
        data = json.dumps(jsonable_encoder(event.data))
    else:
        data = None
    return format_sse_event(
        data_str=data, event=event.event, id=event.id, retry=event.retry, comment=event.comment
    )


async def frames(batches: Batches) -> AsyncIterator[bytes]:
    """Each batch as one chunk (or several, past ``CHUNK_BYTES``); an empty batch as a
    keepalive comment."""
    async for batch in batches:
        if not batch:
            yield KEEPALIVE_COMMENT
        parts: list[bytes] = []
        size = 0
        for event in batch:
            parts.append(part := encode(event))
            size += len(part)
            if size >= CHUNK_BYTES:
                yield b"".join(parts)
                parts, size = [], 0
                await asyncio.sleep(0)
        if parts:
            yield b"".join(parts)
        # Writing to the client seldom waits, so without this a stream that always has
        # something ready (a long replay) would keep the loop from everyone else.
        await asyncio.sleep(0)


def batched_response(batches: Batches) -> EventSourceResponse:
    return EventSourceResponse(frames(batches), headers=HEADERS)


async def one_each(events: AsyncIterator[ServerSentEvent]) -> AsyncIterator[list[ServerSentEvent]]:
    """A stream of single events as batches of one."""
    async for event in events:
        yield [event]
