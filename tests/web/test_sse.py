"""Event streams a batch at a time (app/web/sse.py): FastAPI's encoding, one write per
batch, keepalives, and a long replay cut into pieces with a turn for the loop between."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Sequence

from fastapi.sse import KEEPALIVE_COMMENT, ServerSentEvent, format_sse_event

from app.web.sse import CHUNK_BYTES, batched_response, frames


async def _batches(*batches: Sequence[ServerSentEvent]) -> AsyncIterator[Sequence[ServerSentEvent]]:
    for batch in batches:
        yield batch


async def _all(chunks: AsyncIterator[bytes]) -> list[bytes]:
    return [chunk async for chunk in chunks]


def test_a_batch_is_one_chunk_encoded_as_fastapi_does_and_an_empty_one_a_keepalive() -> None:
    events = [
        ServerSentEvent(id="1", event="text_delta", raw_data='{"text":"a\\nb"}'),
        ServerSentEvent(id="2", event="turn_end", raw_data="line one\nline two"),
        ServerSentEvent(event="sidebar", data={"sessions": []}),
    ]
    chunks = asyncio.run(_all(frames(_batches(events, [], events[:1]))))
    assert chunks == [
        format_sse_event(data_str='{"text":"a\\nb"}', event="text_delta", id="1")
        + format_sse_event(data_str="line one\nline two", event="turn_end", id="2")
        + format_sse_event(data_str='{"sessions": []}', event="sidebar"),
        KEEPALIVE_COMMENT,
        format_sse_event(data_str='{"text":"a\\nb"}', event="text_delta", id="1"),
    ]
    # Two data lines for the text with a newline: the wire never carries a raw one.
    assert b"data: line one\ndata: line two\n" in chunks[0]


def test_a_long_batch_goes_out_in_pieces_with_turns_for_the_loop_between() -> None:
    text = "x" * 10_000
    events = [ServerSentEvent(id=str(n), event="e", raw_data=text) for n in range(1, 101)]

    async def run() -> tuple[list[bytes], int]:
        turns = 0
        done = False

        async def ticker() -> None:
            nonlocal turns
            while not done:
                turns += 1
                await asyncio.sleep(0)

        task = asyncio.create_task(ticker())
        chunks = await _all(frames(_batches(events)))
        done = True
        await task
        return chunks, turns

    chunks, turns = asyncio.run(run())
    assert b"".join(chunks) == b"".join(
        format_sse_event(data_str=text, event="e", id=str(n)) for n in range(1, 101)
    )
    assert len(chunks) >= 1_000_000 // CHUNK_BYTES
    assert all(len(c) < CHUNK_BYTES + 11_000 for c in chunks)
    # Each piece is followed by a turn of the loop, so another task ran in between.
    assert turns >= len(chunks)


def test_the_response_is_fastapis_event_stream_with_its_headers() -> None:
    response = batched_response(_batches([]))
    assert response.media_type == "text/event-stream"
    assert response.headers["cache-control"] == "no-cache"
    assert response.headers["x-accel-buffering"] == "no"
