"""A session page's live stream: its events rendered as the page renders them, as SSE.

What is ready goes out as one write (``app.web.sse``); a long replay is rendered a slice
at a time, with a turn of the loop for everyone else in between.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Annotated

from fastapi import APIRouter, Query, Request
from fastapi.sse import EventSourceResponse, ServerSentEvent

from app.brains import get_brain_class
from app.db.models import ChatSession
from app.errors import AppError
from app.services.store import store
from app.web.chat.lookups import subagent_of
from app.web.chat.streaming import replay_then_follow
from app.web.deps import MAX_SEQ, AppState, LastEventIdDep, SessionIdDep, StateDep
from app.web.sidebar import with_sidebar
from app.web.sse import STREAM_RESPONSES, batched_response
from app.web.stopping import ending_on_stop
from app.web.transcript import render_event, sse_event_name, with_thought_duration

router = APIRouter(include_in_schema=False)
# Rendering time after which a replay's events go out, and the loop gets a turn.
RENDER_SLICE_S = 0.005


@router.get("/sessions/{session_id}/live", responses=STREAM_RESPONSES)
async def live(
    session_id: SessionIdDep,
    request: Request,
    state: StateDep,
    last_event_id: LastEventIdDep,
    after: Annotated[int, Query(ge=0, le=MAX_SEQ)] = 0,
) -> EventSourceResponse:
    """The page's stream: the same events as the API, rendered as HTML fragments; it
    resumes like the API's (``Last-Event-ID`` first, then ``?after=``). The sidebar's
    events ride along (``app.web.sidebar``), without an id, so they never move where a
    reconnect resumes."""
    start = last_event_id if last_event_id is not None else after
    # Read before the stream starts, so an unknown session is a 404, not a broken stream.
    chat = store.get_session(state.engine, session_id)
    cwd = store.session_profile(state.engine, chat).cwd
    transcript = _transcript(chat, cwd, request, state, start)
    return batched_response(ending_on_stop(with_sidebar(transcript, state, request), state.events))


async def _transcript(
    chat: ChatSession, cwd: str, request: Request, state: AppState, start: int
) -> AsyncIterator[list[ServerSentEvent]]:
    session_id = chat.id
    hint = install_hint(chat.backend)
    label = agent_label(chat.backend)
    previous_at = None
    clock = asyncio.get_running_loop().time
    async for records in replay_then_follow(state.events, session_id, start, request):
        rendered: list[ServerSentEvent] = []
        # Rendering a long replay at once would hold the loop: a slice at a time.
        pause_at = clock() + RENDER_SLICE_S
        for record in records:
            event = record.as_dict()
            # A thought is timed from the event before it, as on the page (fold_events).
            shown = with_thought_duration(event, previous_at)
            previous_at = record.at
            parent = event.get("parent_tool_call_id")
            if record.kind == "permission_request" and isinstance(parent, str) and parent:
                # The card says which subagent asked; the page may not hold that call.
                shown = {**shown, "subagent": subagent_of(state.engine, session_id, parent)}
            html = render_event(
                state.templates, shown, install_hint=hint, cwd=cwd, agent_label=label
            )
            name = sse_event_name(record.kind)
            rendered.append(ServerSentEvent(id=str(record.seq), event=name, raw_data=html))
            if clock() > pause_at:
                yield rendered
                rendered = []
                pause_at = clock() + RENDER_SLICE_S
        if rendered or not records:  # an empty list is a keepalive: pass it on
            yield rendered


def install_hint(backend: str) -> str | None:
    try:
        return get_brain_class(backend).install_hint
    except AppError:
        return None


def agent_label(backend: str) -> str:
    """The name an agent's messages are heard under (a screen reader's heading)."""
    try:
        return get_brain_class(backend).label
    except AppError:
        return "Agent"
