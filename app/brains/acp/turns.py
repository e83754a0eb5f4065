"""An ACP agent's turns, one at a time: each message sent is one ``session/prompt``.

Messages wait in a queue behind the prompt in flight; an interrupt drops them and sends
``session/cancel``, and a turn the agent never ends after a cancel is given up on after
``cancel_timeout``. Each turn ends with one ``TurnEnded``, however it ended.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

from acp import RequestError
from acp.schema import PromptResponse

from app.brains.acp.answers import turn_ended
from app.brains.acp.session import AcpSession
from app.brains.acp.updates import UpdateMapper
from app.brains.base import ImageData
from app.brains.events import BrainError, BrainEvent, TurnEnded

log = logging.getLogger(__name__)

__all__ = ["TurnRunner"]

_NOT_RUN = "Not run: the tool call was denied or cancelled."
_NO_END = "No result: the agent did not report how this tool call ended before the turn did."


@dataclass(frozen=True)
class AgentInfo:
    """What a turn's messages say about the agent."""

    label: str
    install_hint: str
    stderr_tail: Callable[[], str]


class TurnRunner:
    def __init__(
        self,
        agent: AgentInfo,
        session: AcpSession,
        mapper: UpdateMapper,
        emit: Callable[[BrainEvent], None],
        cancel_permissions: Callable[[], None],
        close_open_tools: bool = False,
    ) -> None:
        self._agent, self._session, self._mapper = agent, session, mapper
        self._emit, self._cancel_permissions = emit, cancel_permissions
        self._close_open_tools = close_open_tools
        self._cancel_timeout = 0.0
        self._queue: asyncio.Queue[tuple[str, Sequence[ImageData]]] = asyncio.Queue()
        self._prompt: asyncio.Task[PromptResponse] | None = None
        self._cancel_timer: asyncio.TimerHandle | None = None
        # Tool calls of this turn whose permission question was not allowed.
        self._refused: dict[str, None] = {}
        self.active = False
        self.cancel_requested = False
        # Set between turns: the exit watcher waits for a turn in flight to end first.
        self.idle = asyncio.Event()
        self.idle.set()

    @property
    def pending(self) -> bool:
        """A turn is running or a message waits for one."""
        return self.active or not self._queue.empty()

    def queue(self, text: str, images: Sequence[ImageData]) -> None:
        self._queue.put_nowait((text, tuple(images)))

    def refused(self, tool_call_id: str) -> None:
        """The user did not allow this call: it is closed as not run when the turn ends."""
        self._refused[tool_call_id] = None

    async def interrupt(self, cancel_timeout: float) -> None:
        """Cancel the current turn (``session/cancel``); queued messages are dropped, and
        the turn is given up on if the agent has not ended it within ``cancel_timeout``."""
        while not self._queue.empty():
            self._queue.get_nowait()
        if not self.active or self.cancel_requested:
            return
        self.cancel_requested = True
        self._cancel_permissions()
        try:
            await self._session.cancel()
        except ConnectionError:
            return
        # Some agents never answer the prompt after a cancel; do not wait for ever.
        self._cancel_timeout = cancel_timeout
        loop = asyncio.get_running_loop()
        self._cancel_timer = loop.call_later(cancel_timeout, self._abandon)

    async def run(self) -> None:
        while True:
            text, images = await self._queue.get()
            self.active = True
            self.idle.clear()
            self.cancel_requested = False
            try:
                await self._run_turn(text, images)
            finally:
                self.idle.set()

    async def _run_turn(self, text: str, images: Sequence[ImageData]) -> None:
        for event in self._mapper.new_turn():
            self._emit(event)
        started = time.monotonic()
        prompt = self._prompt = asyncio.create_task(self._session.prompt(text, images))
        try:
            await asyncio.wait({prompt})
        finally:
            prompt.cancel()
            self._prompt = None
            if self._cancel_timer is not None:
                self._cancel_timer.cancel()
                self._cancel_timer = None
        exc = None if prompt.cancelled() else prompt.exception()
        if isinstance(exc, ConnectionError):
            return  # The process is gone; the brain's exit watcher reports the failed turn.
        end = self._end(prompt, exc, int((time.monotonic() - started) * 1000))
        refused, self._refused = self._refused, {}
        if end.stop_reason == "cancelled" and refused and not self.cancel_requested:
            # Grok Build ends the whole turn when one of its questions is refused.
            why = (
                f"{self._agent.label} ended the turn when a tool call was refused; "
                "send a message to go on."
            )
            end = replace(end, errors=(*end.errors, why))
        closing = [*self._mapper.close_tools(refused, _NOT_RUN)]
        if self._close_open_tools:
            closing += self._mapper.close_tools(self._mapper.open_tools(), _NO_END)
        for event in (*closing, *self._mapper.flush()):
            self._emit(event)
        self.active = False
        self._emit(replace(end, result=self._mapper.last_text))

    def _end(
        self, prompt: asyncio.Task[PromptResponse], exc: BaseException | None, duration_ms: int
    ) -> TurnEnded:
        label = self._agent.label
        if prompt.cancelled():
            waited = f"{label} did not confirm the cancel within {self._cancel_timeout:g} s."
            return TurnEnded(stop_reason="cancelled", duration_ms=duration_ms, errors=(waited,))
        if exc is not None:
            if not isinstance(exc, RequestError):
                log.error("%s: session/prompt failed", label, exc_info=exc)
                exc = RequestError(-32603, str(exc))
            message = self._session.request_failed("finish the turn", exc, self._agent.install_hint)
            self._emit(BrainError(message=message, detail=self._agent.stderr_tail()[-2000:]))
            return TurnEnded(
                stop_reason="error", is_error=True, duration_ms=duration_ms, errors=(message,)
            )
        return turn_ended(
            prompt.result(),
            label=label,
            cancel_requested=self.cancel_requested,
            cost_usd=self._mapper.cost_usd,
            duration_ms=duration_ms,
            result="",
        )

    def _abandon(self) -> None:
        self._cancel_timer = None
        if self._prompt is not None:
            self._prompt.cancel()
