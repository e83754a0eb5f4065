"""The event log: gapless per-session sequence numbers, storage, and live fan-out.

Every event goes through ``append``, which stores it and then hands it to each live
subscriber. Subscribers replay from SQLite by sequence number and then read their
queue, skipping what they already sent, so a reconnect loses and repeats nothing.
All calls happen on the event-loop thread, which is what keeps ``seq`` gapless.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import func, select
from sqlalchemy.engine import Engine
from sqlmodel import Session, col

from app.db.models import Event, utcnow

EventDict = dict[str, Any]
# A subscriber that falls this far behind is dropped; it reconnects and replays.
QUEUE_LIMIT = 10_000


def event_to_dict(ev: Event) -> EventDict:
    return _as_dict(ev.session_id, ev.seq, ev.kind, ev.payload, ev.created_at)


def _as_dict(
    session_id: str, seq: int, kind: str, payload: dict[str, Any], at: datetime
) -> EventDict:
    out: EventDict = dict(payload)
    out.update(seq=seq, session_id=session_id, kind=kind, at=_iso(at))
    return out


def _iso(at: datetime) -> str:
    if at.tzinfo is None:
        at = at.replace(tzinfo=UTC)
    return at.astimezone(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


class Subscription:
    def __init__(self) -> None:
        self.queue: asyncio.Queue[EventDict] = asyncio.Queue()
        self.overflowed = False

    def put(self, event: EventDict) -> None:
        if self.queue.qsize() >= QUEUE_LIMIT:
            self.overflowed = True
            return
        self.queue.put_nowait(event)


class EventLog:
    def __init__(self, engine: Engine) -> None:
        self._engine = engine
        self._next_seq: dict[str, int] = {}
        self._subs: dict[str, set[Subscription]] = {}

    def _seq_for(self, db: Session, session_id: str) -> int:
        if session_id not in self._next_seq:
            last = db.exec(  # type: ignore[call-overload]
                select(func.max(Event.seq)).where(col(Event.session_id) == session_id)
            ).one()[0]
            self._next_seq[session_id] = (last or 0) + 1
        return self._next_seq[session_id]

    def append(self, session_id: str, kind: str, payload: dict[str, Any]) -> EventDict:
        """Store one event and broadcast it; returns the event as the API shows it."""
        with Session(self._engine) as db:
            seq = self._seq_for(db, session_id)
            row = Event(session_id=session_id, seq=seq, kind=kind, payload=payload)
            row.created_at = utcnow()
            db.add(row)
            db.commit()
            self._next_seq[session_id] = seq + 1
            out = _as_dict(session_id, seq, kind, payload, row.created_at)
        for sub in tuple(self._subs.get(session_id, ())):
            sub.put(out)
        return out

    def list(self, session_id: str, *, after: int = 0, limit: int | None = None) -> list[EventDict]:
        with Session(self._engine) as db:
            stmt = (
                select(Event)
                .where(col(Event.session_id) == session_id, col(Event.seq) > after)
                .order_by(col(Event.seq))
            )
            if limit is not None:
                stmt = stmt.limit(limit)
            return [event_to_dict(r) for r in db.exec(stmt).scalars()]  # type: ignore[call-overload]

    def last_seq(self, session_id: str) -> int:
        with Session(self._engine) as db:
            return self._seq_for(db, session_id) - 1

    def forget(self, session_id: str) -> None:
        self._next_seq.pop(session_id, None)

    @contextmanager
    def subscribe(self, session_id: str) -> Iterator[Subscription]:
        sub = Subscription()
        self._subs.setdefault(session_id, set()).add(sub)
        try:
            yield sub
        finally:
            subs = self._subs.get(session_id)
            if subs is not None:
                subs.discard(sub)
                if not subs:
                    del self._subs[session_id]

    def subscriber_count(self, session_id: str) -> int:
        return len(self._subs.get(session_id, ()))
