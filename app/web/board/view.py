"""What the board's page and its JSON share: a card as plain data, and the live stream.

The stream polls the board once a second and sends only what changed. The event log
fans events out per session, and the board also needs sessions that do not exist yet
and git's state, which no event announces (a commit made in a terminal), so one cheap
poll (a few queries; git only when a worktree's refs, index or events moved) covers
every case. It listens on a channel of the event log that no session uses, only to end
when the server stops: the app's stop closes every stream the event log knows.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Callable
from dataclasses import asdict, dataclass, field
from typing import Any

from fastapi.sse import ServerSentEvent
from starlette.requests import Request

from app.services.sessions.board import BoardCard, board
from app.web.deps import AppState
from app.web.history.review import asked_summary

POLL_S = 1.0
# Session ids are URL-safe base64, so a name with a colon is never one of them.
STOP_CHANNEL = "board:stop"


def card_dict(card: BoardCard) -> dict[str, Any]:
    """The card as the API and the templates see it: the request's input reduced to one line."""
    out = asdict(card)
    pending = out.pop("pending")
    if pending is not None:
        pending["summary"] = asked_summary(pending["tool"], pending.pop("input"), pending["title"])
    out["pending"] = pending
    return out


async def cards(state: AppState) -> list[dict[str, Any]]:
    return [card_dict(c) for c in await board(state.engine, state.events)]


@dataclass
class Change:
    ids: list[str]  # every card now, in order (a client drops any other it shows)
    changed: list[dict[str, Any]] = field(default_factory=list)
    gone: list[str] = field(default_factory=list)
    first: bool = False


async def follow(state: AppState, request: Request) -> AsyncIterator[Change]:
    """Everything at once, then each change; ends when the client leaves or the server stops."""
    seen: dict[str, dict[str, Any]] = {}
    first = True
    with state.events.subscribe(STOP_CHANNEL) as stop:
        while True:
            now = {c["id"]: c for c in await cards(state)}
            changed = [c for sid, c in now.items() if seen.get(sid) != c]
            gone = [sid for sid in seen if sid not in now]
            seen = now
            if first or changed or gone:
                yield Change(list(now), changed, gone, first)
            first = False
            try:
                ended = await asyncio.wait_for(stop.queue.get(), timeout=POLL_S)
            except TimeoutError:
                if await request.is_disconnected():
                    return
                continue
            if ended is None or stop.overflowed:
                return


async def events(
    state: AppState, request: Request, render: Callable[[dict[str, Any]], str]
) -> AsyncIterator[ServerSentEvent]:
    """``follow`` as SSE: ``ids`` (``{"ids": [...]}``, every card now, in order) first,
    then ``card`` (drawn by ``render``) for each card that appears or changes and
    ``gone`` (``{"id": ...}``) for each that leaves."""
    async for change in follow(state, request):
        if change.first:
            yield ServerSentEvent(event="ids", raw_data=json.dumps({"ids": change.ids}))
        for card in change.changed:
            yield ServerSentEvent(event="card", raw_data=render(card))
        for sid in change.gone:
            yield ServerSentEvent(event="gone", raw_data=json.dumps({"id": sid}))
