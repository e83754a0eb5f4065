"""Steering: a message sent while the agent works goes into the running turn.

The backend takes it at its next step (Claude Code: the next tool boundary) instead of
after the turn, as a queued message would. It is stored at once as a ``user_message``
marked ``steering``; the brain's ``steer_landed`` event later marks where in the turn
it reached the model, so the transcript shows both, live and after a reload.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from sqlalchemy.engine import Engine

from app.brains import get_brain_class
from app.brains.base import steer_refusal
from app.errors import AppError, ConflictError
from app.services.permissions.permissions import PermissionService
from app.services.sessions.brain_start import LiveBrain
from app.services.sessions.outbox import Message
from app.services.store import store
from app.services.store.eventlog import EventLog

NOT_WORKING = "The agent is not working on a turn; send the message as a new one."
ANSWER_FIRST = (
    "The agent waits for your answer to a request; answer it first, or queue the message."
)


@dataclass(frozen=True)
class SteerState:
    """Whether the session's backend takes a message into a running turn, and why not."""

    can_steer: bool
    reason: str = ""


class Steering:
    def __init__(
        self,
        engine: Engine,
        events: EventLog,
        permissions: PermissionService,
        live_of: Callable[[str], LiveBrain | None],
    ) -> None:
        self._engine = engine
        self._events = events
        self._permissions = permissions
        self._live_of = live_of

    def state(self, session_id: str) -> SteerState:
        """What the composer offers: the running backend knows best, else its kind does."""
        chat = store.get_session(self._engine, session_id)
        live = self._live_of(session_id)
        if live is not None:
            reason = live.brain.steer_limit()
        else:
            cls = get_brain_class(chat.backend)
            reason = "" if cls.steering else steer_refusal(cls.label)
        return SteerState(can_steer=not reason, reason=reason)

    async def steer(self, session_id: str, text: str) -> int:
        """Send ``text`` into the running turn; the seq of its stored ``user_message``.

        ``ConflictError`` (nothing stored, nothing sent) when no turn runs, a request
        waits for the user's answer, or the backend cannot take it.
        """
        store.get_session(self._engine, session_id)
        live = self._live_of(session_id)
        if live is None or not live.turn_active:
            raise ConflictError(NOT_WORKING)
        if self._permissions.pending_count(session_id):
            raise ConflictError(ANSWER_FIRST)
        if reason := live.brain.steer_limit():
            raise ConflictError(reason)
        message = Message(text)
        # Stored before it is written, so where it was sent precedes where it landed.
        payload = {**message.payload(), "steering": True}
        stored = self._events.append(session_id, "user_message", payload)
        try:
            await live.brain.steer(text, message_id=message.message_id)
        except AppError as exc:
            note = f"The steering message did not reach the agent: {exc.message}"
            self._events.append(session_id, "error", {"message": note, "detail": ""})
            raise ConflictError(note) from None
        return stored.seq
