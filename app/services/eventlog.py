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

from sqlalchemy import Table, func, insert, select
from sqlalchemy.engine import Connection, Engine

from app.db.models import Event, utcnow
from app.services.search import index_event

EventDict = dict[str, Any]
EVENT_TABLE: Table = Event.__table__  # type: ignore[attr-defined]
# A subscriber that falls this far behind is dropped; it reconnects and replays.
QUEUE_LIMIT = 10_000


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
    """One live reader's queue; ``None`` in it means the server is stopping."""

    def __init__(self) -> None:
        self.queue: asyncio.Queue[EventDict | None] = asyncio.Queue()
        self.overflowed = False

    def put(self, event: EventDict) -> None:
        if self.queue.qsize() >= QUEUE_LIMIT:
            self.overflowed = True
            return
        self.queue.put_nowait(event)

    def end(self) -> None:
        self.queue.put_nowait(None)


class EventLog:
    def __init__(self, engine: Engine) -> None:
        self._engine = engine
        self._next_seq: dict[str, int] = {}
        self._subs: dict[str, set[Subscription]] = {}
        self._streams_closed = False

    def _seq_for(self, conn: Connection, session_id: str) -> int:
        if session_id not in self._next_seq:
            last = conn.execute(
                select(func.max(EVENT_TABLE.c.seq)).where(EVENT_TABLE.c.session_id == session_id)
            ).scalar()
            self._next_seq[session_id] = (last or 0) + 1
        return self._next_seq[session_id]

    def append(self, session_id: str, kind: str, payload: dict[str, Any]) -> EventDict:
        """Store one event (and its search row) and broadcast it; returns the API shape."""
        created = utcnow()
        with self._engine.begin() as conn:
            seq = self._seq_for(conn, session_id)
            result = conn.execute(
                insert(EVENT_TABLE).values(
                    session_id=session_id,
                    seq=seq,
                    kind=kind,
                    payload=payload,
                    created_at=created,
                )
            )
            row_id = result.inserted_primary_key[0] if result.inserted_primary_key else None
            if row_id is not None:
                index_event(conn, int(row_id), session_id, seq, kind, payload)
        self._next_seq[session_id] = seq + 1
        out = _as_dict(session_id, seq, kind, payload, created)
        for sub in tuple(self._subs.get(session_id, ())):
            sub.put(out)
        return out

    def list(
        self,
        session_id: str,
        *,
        after: int = 0,
        before: int | None = None,
        limit: int | None = None,
        newest: bool = False,
    ) -> list[EventDict]:
        """Events in ``seq`` order: after ``after`` (and before ``before``).

        With ``newest`` the *last* ``limit`` events of that range are returned — the tail
        a long transcript opens with, or the page just above what is already shown.
        """
        t = EVENT_TABLE
        stmt = select(t.c.session_id, t.c.seq, t.c.kind, t.c.payload, t.c.created_at).where(
            t.c.session_id == session_id, t.c.seq > after
        )
        if before is not None:
            stmt = stmt.where(t.c.seq < before)
        stmt = stmt.order_by(t.c.seq.desc() if newest else t.c.seq)
        if limit is not None:
            stmt = stmt.limit(limit)
        with self._engine.connect() as conn:
            rows = list(conn.execute(stmt).all())
        if newest:
            rows.reverse()
        return [_as_dict(r.session_id, r.seq, r.kind, r.payload, r.created_at) for r in rows]

    def last_seq(self, session_id: str) -> int:
        with self._engine.connect() as conn:
            return self._seq_for(conn, session_id) - 1

    def forget(self, session_id: str) -> None:
        self._next_seq.pop(session_id, None)

    def close_streams(self) -> None:
        """End every live stream now and any opened later: the server is stopping, and
        an open stream would otherwise hold its connection (and the shutdown) forever."""
        self._streams_closed = True
        for subs in self._subs.values():
            for sub in subs:
                sub.end()

    @contextmanager
    def subscribe(self, session_id: str) -> Iterator[Subscription]:
        sub = Subscription()
        if self._streams_closed:
            sub.end()
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
