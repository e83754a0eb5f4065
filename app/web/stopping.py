"""What a page's event stream sends last when the server stops.

Once Angelia has stopped, another local program may bind its address and port; an open
tab that reconnects would send it the sign-in cookie. So every page stream ends a stop
with this event, and static/js/link.js closes the page's streams and stops its polling
when it arrives (docs/security.md).
"""

from __future__ import annotations

from collections.abc import AsyncIterator

from fastapi.sse import ServerSentEvent

from app.services.store.eventlog import EventLog
from app.web.sse import Batches

STOPPED_EVENT = "angelia-stopped"


def stopped_event(events: EventLog) -> ServerSentEvent | None:
    """The last event of a page stream that ended, if it ended because the server stops."""
    if not events.streams_closed:
        return None
    return ServerSentEvent(event=STOPPED_EVENT, raw_data="")


async def ending_on_stop(stream: Batches, events: EventLog) -> AsyncIterator[list[ServerSentEvent]]:
    """``stream``, then ``stopped_event`` if it ended because the server stops."""
    async for batch in stream:
        yield list(batch)
    if (last := stopped_event(events)) is not None:
        yield [last]
