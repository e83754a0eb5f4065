"""Messages the user sent while the agent was busy: they wait here, editable, until they go.

A message waits while a turn runs or an approval is pending (sending it then would
end the turn that waits for the answer). Each waiting message is known by the seq of
its ``user_message`` event; editing or dropping it is recorded as an event, so the
transcript shows what was finally sent, live and after a reload.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field, replace
from typing import Any

from app.brains.base import ImageData
from app.errors import ConflictError
from app.services.store.eventlog import EventLog


@dataclass(frozen=True)
class Message:
    """One user message on its way to the backend."""

    text: str
    images: tuple[ImageData, ...] = ()
    # What the event log keeps of the images: {id, media_type, url}.
    image_refs: tuple[dict[str, str], ...] = ()
    # Names the message for the backend, so its files can be rewound to before it.
    message_id: str = field(default_factory=lambda: str(uuid.uuid4()))
    # Sent by the app for the user at a time they chose (a continue at a limit's reset),
    # so the transcript can say nobody typed it just then.
    scheduled: bool = False

    def payload(self) -> dict[str, Any]:
        out: dict[str, Any] = {"text": self.text, "message_id": self.message_id}
        if self.image_refs:
            out["images"] = list(self.image_refs)
        if self.scheduled:
            out["scheduled"] = True
        return out


@dataclass(frozen=True)
class Queued:
    seq: int
    message: Message
    # Why it waits: "turn" (a turn is running) or "approval" (a prompt is pending).
    reason: str = "turn"

    @property
    def text(self) -> str:
        return self.message.text


class Outbox:
    def __init__(self, events: EventLog) -> None:
        self._events = events
        self._waiting: dict[str, list[Queued]] = {}

    def add(self, session_id: str, message: Message, *, reason: str) -> Queued:
        payload = {**message.payload(), "queued": True, "queue_reason": reason}
        stored = self._events.append(session_id, "user_message", payload)
        item = Queued(stored.seq, message, reason)
        self._waiting.setdefault(session_id, []).append(item)
        return item

    def items(self, session_id: str) -> list[Queued]:
        return list(self._waiting.get(session_id, ()))

    def edit(self, session_id: str, seq: int, text: str) -> Queued:
        """Change a waiting message's text; ``ConflictError`` if it has gone already."""
        waiting = self._waiting.get(session_id, [])
        for i, item in enumerate(waiting):
            if item.seq == seq:
                waiting[i] = replace(item, message=replace(item.message, text=text))
                self._events.append(session_id, "queued_edited", {"queued_seq": seq, "text": text})
                return waiting[i]
        raise self._gone(seq)

    def drop(self, session_id: str, seq: int) -> None:
        """Drop one waiting message; ``ConflictError`` if it has gone already."""
        waiting = self._waiting.get(session_id, [])
        for item in waiting:
            if item.seq == seq:
                waiting.remove(item)
                self._record(session_id, "queued_dropped", item)
                return
        raise self._gone(seq)

    def drop_all(self, session_id: str) -> None:
        for item in self._waiting.pop(session_id, []):
            self._record(session_id, "queued_dropped", item)

    def take(self, session_id: str) -> Queued | None:
        """The next message to send, recorded as sent (None if nothing waits)."""
        waiting = self._waiting.get(session_id)
        if not waiting:
            return None
        item = waiting.pop(0)
        if not waiting:
            del self._waiting[session_id]
        self._record(session_id, "queued_sent", item)
        return item

    def _record(self, session_id: str, kind: str, item: Queued) -> None:
        self._events.append(session_id, kind, {"queued_seq": item.seq, "text": item.text})

    def _gone(self, seq: int) -> ConflictError:
        return ConflictError(f"Message {seq} is no longer waiting: it was sent or dropped already.")
