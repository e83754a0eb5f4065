"""The HTTP server: uvicorn, with a stop that never waits for open event streams.

On SIGINT or SIGTERM uvicorn stops accepting connections and then waits for the open
ones to finish, but a browser tab's event stream never finishes by itself. So the first
signal also starts the app's own stop, which ends every stream and stops the backends;
uvicorn's wait is bounded as well, for any other request that hangs. A second signal
kills the backends' process groups and exits at once.
"""

from __future__ import annotations

import asyncio
import os
import socket
from types import FrameType

import uvicorn
from fastapi import FastAPI

from app.services.sessions.lifecycle import Stopper

# How long uvicorn waits for requests other than event streams once a stop began.
GRACEFUL_TIMEOUT_S = 1


class AngeliaServer(uvicorn.Server):
    def __init__(self, app: FastAPI, host: str, port: int, log_level: str = "warning") -> None:
        super().__init__(
            uvicorn.Config(
                app,
                host=host,
                port=port,
                log_level=log_level,
                lifespan="on",
                timeout_graceful_shutdown=GRACEFUL_TIMEOUT_S,
            )
        )
        self._stopper: Stopper = app.state.angelia.stopper
        self._loop: asyncio.AbstractEventLoop | None = None

    async def serve(self, sockets: list[socket.socket] | None = None) -> None:
        self._loop = asyncio.get_running_loop()
        await super().serve(sockets)

    def request_stop(self) -> None:
        """Stop the server (from any thread, or a signal handler)."""
        self.should_exit = True
        if self._loop is not None and not self._loop.is_closed():
            self._loop.call_soon_threadsafe(self._stopper.begin)

    def handle_exit(self, sig: int, frame: FrameType | None) -> None:
        if self.should_exit:
            # Asked twice: the user wants out now, whatever is still stopping.
            self._stopper.force()
            os._exit(128 + sig)
        super().handle_exit(sig, frame)
        self.request_stop()
