"""The host's control requests to Claude Code, each waiting for the reply that names it.

A request (``initialize``, ``interrupt``, ``set_model`` …) is written with a fresh id;
the CLI answers with a ``control_response`` carrying that id, which the reader hands
over here. A request fails rather than wait forever: when no reply comes in time, or
when the process exits first.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from app.brains.claude.protocol import ControlReply
from app.brains.claude.wire import new_request_id
from app.brains.events import JsonDict
from app.errors import ProtocolError
from app.transport import AgentProcess, ProcessNotRunningError

__all__ = ["ControlRequests"]


class ControlRequests:
    """The control requests written to one process that still wait for their replies."""

    def __init__(self, process: AgentProcess) -> None:
        self._process = process
        self._waiting: dict[str, asyncio.Future[ControlReply]] = {}

    async def ask(self, build: Callable[[str], JsonDict], timeout: float) -> ControlReply:
        """Write the request ``build`` makes for a fresh id and wait for its reply.

        Raises:
            ProcessNotRunningError: The process is gone, or exited before it replied.
            ProtocolError: No reply came within ``timeout`` seconds.
        """
        request_id = new_request_id()
        frame = build(request_id)
        future: asyncio.Future[ControlReply] = asyncio.get_running_loop().create_future()
        self._waiting[request_id] = future
        try:
            await self._process.write_json(frame)
            return await asyncio.wait_for(future, timeout)
        except TimeoutError:
            subtype = frame["request"]["subtype"]
            raise ProtocolError(
                f"Claude Code did not answer the {subtype} request within {timeout:g} s."
            ) from None
        finally:
            self._waiting.pop(request_id, None)

    def replied(self, reply: ControlReply) -> None:
        """The CLI's reply; one that names no waiting request is dropped."""
        future = self._waiting.get(reply.request_id)
        if future is not None and not future.done():
            future.set_result(reply)

    def exited(self) -> None:
        """The process is gone: every request still waiting fails."""
        for future in self._waiting.values():
            if not future.done():
                future.set_exception(ProcessNotRunningError("Claude Code exited."))
