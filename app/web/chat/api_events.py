"""A session's events in the JSON API: listed, streamed as SSE, or one whole.

A payload of megabytes (a ``cat`` of a big file) is not sent down a live stream: turning
20 MB into one SSE frame is FastAPI's work on the event loop every session shares (four
copies of the text, ~100 ms measured), and no reader of a stream can show that much. The
stream sends a stand-in instead, the event's own fields and ``elided``: how long the
payload's JSON is and where to get the whole event, which ``GET …/events/{seq}`` reads
and sends in chunks off the loop.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator
from typing import Annotated, Any

from fastapi import APIRouter, Path, Query, Request
from fastapi.responses import StreamingResponse
from fastapi.sse import EventSourceResponse, ServerSentEvent

from app.errors import NotFoundError
from app.services.store import store
from app.services.store.eventlog import EventLog, StoredEvent
from app.web.chat.streaming import replay_then_follow
from app.web.deps import MAX_SEQ, LastEventIdDep, SessionIdDep, StateDep
from app.web.sse import STREAM_RESPONSES, batched_response

router = APIRouter(prefix="/api", tags=["events"])
EventSeq = Annotated[int, Path(ge=1, le=MAX_SEQ)]

# A payload whose JSON is longer than this goes down a stream as a stand-in.
STREAM_INLINE_CHARS = 1024 * 1024
# The whole event is sent in pieces this long, each one step of the event loop.
CHUNK_BYTES = 256 * 1024
ELIDED_FIELD = "elided"


@router.get("/sessions/{session_id}/events")
async def list_events(
    session_id: str,
    state: StateDep,
    after: Annotated[int, Query(ge=0, le=MAX_SEQ)] = 0,
    before: Annotated[int | None, Query(ge=1, le=MAX_SEQ)] = None,
    limit: Annotated[int | None, Query(ge=1, le=100_000)] = None,
    tail: Annotated[bool, Query(description="the last `limit` events of the range")] = False,
) -> dict[str, list[dict[str, Any]]]:
    """Stored events with ``after < seq < before``, oldest first."""
    store.get_session(state.engine, session_id)
    events = state.events.list(session_id, after=after, before=before, limit=limit, newest=tail)
    return {"events": events}


@router.get("/sessions/{session_id}/events/{seq}")
async def get_event(session_id: SessionIdDep, seq: EventSeq, state: StateDep) -> StreamingResponse:
    """One stored event, whole (as in the list). What a stream's stand-in for a big event
    (``elided.href``) points at."""
    body = await asyncio.to_thread(_event_bytes, state.events, session_id, seq)
    if body is None:
        raise NotFoundError(f"Session {session_id} has no event {seq}.")
    return StreamingResponse(_chunks(body), media_type="application/json")


def _event_bytes(events: EventLog, session_id: str, seq: int) -> bytes | None:
    """Read and encode off the event loop: for a big event both take tens of ms."""
    found = events.records(session_id, after=seq - 1, before=seq + 1)
    return found[0].json.encode() if found else None


def _chunks(body: bytes) -> Iterator[bytes]:
    view = memoryview(body)
    for start in range(0, len(body), CHUNK_BYTES):
        yield bytes(view[start : start + CHUNK_BYTES])


@router.get("/sessions/{session_id}/stream", responses=STREAM_RESPONSES)
async def stream(
    session_id: SessionIdDep,
    request: Request,
    state: StateDep,
    last_event_id: LastEventIdDep,
    after: Annotated[int | None, Query(ge=0, le=MAX_SEQ)] = None,
) -> EventSourceResponse:
    """Live events as SSE (``id`` = seq); honours ``Last-Event-ID`` (ASCII digits, else
    400) before ``?after=``. A client that falls behind gets each waiting run of one
    message's ``text_delta`` pieces as one, with ``joined``: how many stored events it
    stands for (the seqs up to its own). A replay is exact, but for an event whose payload
    is over a megabyte of JSON: that comes as its own fields and ``elided`` (``chars``: the
    payload's length, ``href``: the whole event)."""
    start = last_event_id if last_event_id is not None else after or 0
    follow = replay_then_follow(state.events, session_id, start, request)
    return batched_response(_as_sse(follow, session_id))


async def _as_sse(
    batches: AsyncIterator[list[StoredEvent]], session_id: str
) -> AsyncIterator[list[ServerSentEvent]]:
    async for batch in batches:
        yield [_as_sse_event(event, session_id) for event in batch]


def _as_sse_event(event: StoredEvent, session_id: str) -> ServerSentEvent:
    if len(event.payload_json) > STREAM_INLINE_CHARS:
        href = f"/api/sessions/{session_id}/events/{event.seq}"
        data = event.stand_in(**{ELIDED_FIELD: {"chars": len(event.payload_json), "href": href}})
    else:
        # The JSON text made once when the event was appended, for every client alike.
        data = event.json
    return ServerSentEvent(id=str(event.seq), event=event.kind, raw_data=data)
