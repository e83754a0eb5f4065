"""Stopping the app once, however it is asked: a signal, or the end of the lifespan.

A stop ends every live event stream first (an open stream would otherwise hold its
connection, and with it the whole shutdown, forever), then stops every backend with a
short, bounded grace, expires every waiting prompt and stores the last events. A forced
stop only kills the backends' process groups, for a user who pressed Ctrl-C twice.
"""

from __future__ import annotations

import asyncio

from app.services.sessions.manager import SessionManager
from app.services.store.eventlog import EventLog
from app.services.transcripts.follow import Follower


class Stopper:
    def __init__(
        self, events: EventLog, manager: SessionManager, grace: float, follower: Follower
    ) -> None:
        self._events = events
        self._manager = manager
        self._grace = grace
        self._follower = follower
        self._task: asyncio.Task[None] | None = None

    def begin(self) -> None:
        """Start stopping (on the event loop's thread); later calls change nothing."""
        if self._task is None:
            self._events.close_streams()
            self._follower.begin_close()
            self._task = asyncio.get_running_loop().create_task(self._shutdown())

    async def _shutdown(self) -> None:
        # Both bounded: watchers end within STOP_TIMEOUT_S, backends within the grace.
        await asyncio.gather(self._follower.close(), self._manager.shutdown(self._grace))

    async def _stop(self) -> None:
        try:
            await self._manager.shutdown(self._grace)
        finally:
            # The shutdown's own notices included: store everything before exiting.
            await self._events.close()

    async def wait(self) -> None:
        """Stop (if nobody started to yet) and wait until everything has stopped."""
        self.begin()
        assert self._task is not None
        await asyncio.shield(self._task)

    def force(self) -> None:
        """Kill every backend now; safe to call from a signal handler."""
        self._manager.kill_backends_now()
