"""A request that changed something is answered only once its events are stored.

Events are written by a background thread (``app.services.store.eventwriter``); this keeps
"the server said OK" meaning "it is on disk" for every POST, PATCH, PUT and DELETE, so a
client that reads right after its own write sees it, and a crash after the answer loses
nothing the client was told about.
"""

from __future__ import annotations

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from app.services.store.eventlog import EventLog
from app.web.security import SAFE_METHODS


class DurableWrites:
    def __init__(self, app: ASGIApp, *, events: EventLog) -> None:
        self.app = app
        self.events = events

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] in SAFE_METHODS:
            await self.app(scope, receive, send)
            return

        async def send_when_stored(message: Message) -> None:
            if message["type"] == "http.response.start":
                await self.events.flush()
            await send(message)

        await self.app(scope, receive, send_when_stored)
