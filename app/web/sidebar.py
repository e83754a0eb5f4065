"""The sessions sidebar, live: what it lists, and the stream that keeps it current.

Every page draws the sidebar from ``sidebar_rows`` (``app.web.context``); ``follow``
sends the same rows as JSON, once at the start and again after each commit that changed
a session's row (the event log's ``SESSIONS_CHANNEL``: no polling), whenever what the
sidebar would show differs. static/js/sidebar.js applies them in place.

A page with a stream of its own (a session's transcript, the board) carries these events
on it (``with_sidebar``), so it holds one connection, not two: a browser allows only six
to one server across all its tabs. Any other page opens ``/sidebar/live``.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from typing import Any

from fastapi import APIRouter, Request
from fastapi.sse import EventSourceResponse, ServerSentEvent

from app.services.store.eventlog import SESSIONS_CHANNEL
from app.web.context import sidebar_rows
from app.web.deps import AppState, StateDep
from app.web.sse import Batches, one_each
from app.web.stopping import stopped_event

router = APIRouter(include_in_schema=False)

# The SSE event name; its data is ``{"sessions": [row, ...]}``, newest first.
SIDEBAR_EVENT = "sidebar"
# Commits come in bursts (a turn's end stores its totals, then its status): one read
# after a short pause answers them all.
SETTLE_S = 0.05
DISCONNECT_POLL_S = 5.0
# A keepalive comment after this long with nothing to send, as FastAPI's own streams do.
KEEPALIVE_S = 15.0


async def follow(state: AppState, request: Request) -> AsyncIterator[ServerSentEvent]:
    """The rows now, then each time they change; ends when the client leaves or the
    server stops."""
    with state.events.subscribe(SESSIONS_CHANNEL) as sub:
        shown: list[dict[str, str]] | None = None
        while True:
            rows = sidebar_rows(state)
            if rows != shown:
                shown = rows
                yield ServerSentEvent(event=SIDEBAR_EVENT, raw_data=json.dumps({"sessions": rows}))
            try:
                mark = await asyncio.wait_for(sub.queue.get(), timeout=DISCONNECT_POLL_S)
            except TimeoutError:
                if await request.is_disconnected():
                    return
                continue
            if mark is None:
                return
            await asyncio.sleep(SETTLE_S)
            # Every row is read again, so the marks queued meanwhile say nothing more (and
            # a queue that overflowed lost nothing that matters).
            while not sub.queue.empty():
                if sub.queue.get_nowait() is None:
                    return


async def with_sidebar(
    stream: Batches, state: AppState, request: Request
) -> AsyncIterator[list[ServerSentEvent]]:
    """``stream``'s batches with the sidebar's events woven in, in order; what is ready
    when the page's turn comes is one batch (``app.web.sse``), and an empty batch is a
    keepalive, sent after ``KEEPALIVE_S`` with nothing else. It ends when ``stream`` ends."""
    out: asyncio.Queue[tuple[str, Any]] = asyncio.Queue(maxsize=8)

    async def pump(name: str, source: Batches) -> None:
        try:
            async for items in source:
                await out.put(("items", items))
        except Exception as exc:
            await out.put(("failed", exc))
            return
        await out.put(("ended", name))

    tasks = [
        asyncio.create_task(pump("main", stream)),
        asyncio.create_task(pump("sidebar", one_each(follow(state, request)))),
    ]
    try:
        while True:
            if out.empty():
                try:
                    ready = [await asyncio.wait_for(out.get(), timeout=KEEPALIVE_S)]
                except TimeoutError:
                    yield []
                    continue
            else:
                ready = [out.get_nowait()]
            while not out.empty():
                ready.append(out.get_nowait())
            batch: list[ServerSentEvent] = []
            for what, value in ready:
                if what == "items":
                    batch.extend(value)
                elif what == "failed":
                    if batch:
                        yield batch
                    raise value
                elif value == "main":
                    if batch:
                        yield batch
                    return
            # Empty when the main stream's batches were keepalives: pass them on.
            yield batch
    finally:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)


@router.get("/sidebar/live", response_class=EventSourceResponse)
async def live(request: Request, state: StateDep) -> AsyncIterator[ServerSentEvent]:
    """The sidebar's stream, for a page without one of its own."""
    async for event in follow(state, request):
        yield event
    if (last := stopped_event(state.events)) is not None:
        yield last
