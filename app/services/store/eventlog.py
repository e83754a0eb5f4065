"""The event log: gapless per-session sequence numbers, storage, and live fan-out.

``append`` numbers an event, encodes it once (a payload of megabytes is left to a
thread of its own, ``bigpayload``) and hands it to the writer thread
(``eventwriter``), which stores it in a batch; only once it is committed is the event
put on the queue of each live subscriber. So the event loop never waits for the disk,
and no reader ever sees an event that a crash could still take away. Subscribers replay
from SQLite by sequence number and then read their queue, skipping what they already
sent, so a reconnect loses and repeats nothing.

Durability, precisely: an event is durable once its batch is committed (WAL with
``synchronous=NORMAL``: it survives the app being killed, only an OS crash can lose the
newest commits). That happens before it is streamed to anyone, and before the response
to any request that changed something (``await flush()``, see ``app.web.durability``).
Called with no event loop running, ``append`` itself waits for the commit.

Besides each session's channel, one channel (``SESSIONS_CHANNEL``) carries no stored
event but a mark per session whose row a commit changed (``sessionwatch``): how a page's
list of sessions follows them, on the same fan-out and ended by the same stop.
"""

from __future__ import annotations

import asyncio
import builtins
import logging
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from sqlalchemy import String, Table, func, select, type_coerce
from sqlalchemy.engine import Engine

from app.db.models import Event, utcnow
from app.services.store import sessionwatch
from app.services.store.backlog import Backlog
from app.services.store.bigpayload import is_big
from app.services.store.eventwriter import EventWriter
from app.services.store.records import EventDict, StoredEvent, encode_payload

log = logging.getLogger(__name__)

EVENT_TABLE: Table = Event.__table__  # type: ignore[attr-defined]
# A subscriber that falls this far behind is dropped; it reconnects and replays.
QUEUE_LIMIT = 10_000
# How long a stopping server keeps retrying a failing write of the last events.
CLOSE_TIMEOUT_S = 1.0
# Session ids are URL-safe base64, so a name with a colon is never one of them.
SESSIONS_CHANNEL = "sessions:changed"
# The kind of the mark on that channel; its ``session_id`` is the session that changed.
SESSION_CHANGED = "session_changed"

__all__ = ["SESSIONS_CHANNEL", "EventDict", "EventLog", "StoredEvent", "Subscription"]


class Subscription:
    """One live reader's queue; ``None`` in it means the server is stopping."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
        self.queue: asyncio.Queue[StoredEvent | None] = asyncio.Queue()
        self.overflowed = False

    def put_many(self, events: Sequence[StoredEvent]) -> None:
        for event in events:
            if self.queue.qsize() >= QUEUE_LIMIT:
                self.overflowed = True
                return
            self.queue.put_nowait(event)

    def end(self) -> None:
        self.queue.put_nowait(None)


def _hand_out(targets: Sequence[tuple[Subscription, Sequence[StoredEvent]]]) -> None:
    for sub, batch in targets:
        sub.put_many(batch)


class EventLog:
    def __init__(self, engine: Engine, *, busy_timeout_s: float = 30.0) -> None:
        self._engine = engine
        self._lock = threading.Lock()
        self._next_seq: dict[str, int] = {}
        self._subs: dict[str, set[Subscription]] = {}
        self._streams_closed = False
        # Called on the writer thread with each committed batch (see ``listen``).
        self._listeners: list[Callable[[Sequence[StoredEvent]], None]] = []
        db_path = engine.url.database
        assert db_path, "the event log needs an SQLite file"
        self._backlog = Backlog()
        self._writer = EventWriter(
            Path(db_path),
            self._committed,
            busy_timeout_s,
            on_done=lambda records: self._backlog.done(r.session_id for r in records),
        )
        sessionwatch.watch(engine, self._sessions_changed)

    def _seq_for(self, session_id: str) -> int:
        if session_id not in self._next_seq:
            # Once per session and process: the counter lives in memory from then on.
            self._next_seq[session_id] = self.last_seq(session_id) + 1
        return self._next_seq[session_id]

    def append(self, session_id: str, kind: str, payload: dict[str, Any]) -> StoredEvent:
        """Number, encode and queue one event for storage; returns it."""
        created = utcnow()
        # A payload of megabytes (a long tool result) is encoded by the preparer thread, a
        # slice at a time; "" marks it as not encoded yet.
        body = "" if is_big(payload) else encode_payload(payload)
        with self._lock:
            seq = self._seq_for(session_id)
            self._next_seq[session_id] = seq + 1
            record = StoredEvent(session_id, seq, kind, created, body, payload)
            # Under the lock, so the writer's queue holds every session's events in order.
            self._backlog.added(session_id)
            self._writer.submit(record)
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            self.flush_sync()
        return record

    async def flush(self) -> None:
        """Wait until every event appended so far is stored (and handed to subscribers)."""
        if self._writer.stored + self._writer.dropped >= self._writer.submitted:
            return
        barrier = self._writer.barrier(asyncio.get_running_loop())
        assert barrier.future is not None
        await barrier.future

    async def caught_up(self, session_id: str, lag: int) -> None:
        """Wait until at most ``lag`` of the session's events are still to be stored: a
        session's reader keeps its agent to the pace of the disk with this (``backlog``)."""
        await self._backlog.below(session_id, lag)

    def flush_sync(self) -> None:
        """``flush`` for code that runs outside the event loop (blocks the caller)."""
        self._writer.barrier().done.wait()

    @property
    def writer(self) -> EventWriter:
        """The writer thread's counters (submitted, stored, dropped, commits)."""
        return self._writer

    async def close(self) -> None:
        """Store what is still queued and stop the writer thread."""
        await asyncio.to_thread(self._writer.close, CLOSE_TIMEOUT_S)
        self._backlog.close()

    def listen(self, listener: Callable[[Sequence[StoredEvent]], None]) -> None:
        """Call ``listener`` with every batch of events once it is committed, on the
        writer thread: it must only hand them on (to its own event loop)."""
        self._listeners.append(listener)

    def _committed(self, events: Sequence[StoredEvent]) -> None:
        """On the writer thread, after a commit: queue the events for their subscribers
        on each subscriber's own event loop."""
        for listener in self._listeners:
            try:
                listener(events)
            except Exception:
                log.exception("An event-log listener failed")
        by_session: dict[str, list[StoredEvent]] = {}
        for event in events:
            by_session.setdefault(event.session_id, []).append(event)
        by_loop: dict[asyncio.AbstractEventLoop, list[tuple[Subscription, list[StoredEvent]]]] = {}
        with self._lock:
            for sid, batch in by_session.items():
                for sub in self._subs.get(sid, ()):
                    by_loop.setdefault(sub.loop, []).append((sub, batch))
        # One wake-up per loop, not per subscriber: each costs the writer a system call
        # and the interpreter lock back after it.
        for loop, targets in by_loop.items():
            try:
                loop.call_soon_threadsafe(_hand_out, targets)
            except RuntimeError:  # that loop has closed: nobody is listening there
                continue

    def _sessions_changed(self, ids: set[str]) -> None:
        """On the committing thread: a mark per changed session for every subscriber of
        ``SESSIONS_CHANNEL``, on its own event loop."""
        with self._lock:
            subs = list(self._subs.get(SESSIONS_CHANNEL, ()))
        if not subs:
            return
        at = utcnow()
        marks = [StoredEvent(sid, 0, SESSION_CHANGED, at, "") for sid in sorted(ids)]
        for sub in subs:
            try:
                sub.loop.call_soon_threadsafe(sub.put_many, marks)
            except RuntimeError:  # that loop has closed: nobody is listening there
                continue

    def list(
        self,
        session_id: str,
        *,
        after: int = 0,
        before: int | None = None,
        limit: int | None = None,
        newest: bool = False,
        kind: str | None = None,
    ) -> list[EventDict]:
        """Stored events in ``seq`` order: after ``after`` (and before ``before``).

        With ``newest`` the *last* ``limit`` events of that range are returned — the tail
        a long transcript opens with, or the page just above what is already shown.
        ``kind`` keeps only events of that kind.
        """
        return [
            e.as_dict()
            for e in self.records(
                session_id, after=after, before=before, limit=limit, newest=newest, kind=kind
            )
        ]

    def records(
        self,
        session_id: str,
        *,
        after: int = 0,
        before: int | None = None,
        limit: int | None = None,
        newest: bool = False,
        kind: str | None = None,
    ) -> builtins.list[StoredEvent]:
        """``list`` as ``StoredEvent``s, with each payload's stored JSON text kept as is."""
        t = EVENT_TABLE
        stmt = select(
            t.c.seq, t.c.kind, type_coerce(t.c.payload, String).label("body"), t.c.created_at
        ).where(t.c.session_id == session_id, t.c.seq > after)
        if before is not None:
            stmt = stmt.where(t.c.seq < before)
        if kind is not None:
            stmt = stmt.where(t.c.kind == kind)
        stmt = stmt.order_by(t.c.seq.desc() if newest else t.c.seq)
        if limit is not None:
            stmt = stmt.limit(limit)
        with self._engine.connect() as conn:
            rows = list(conn.execute(stmt).all())
        if newest:
            rows.reverse()
        return [StoredEvent(session_id, r.seq, r.kind, r.created_at, r.body) for r in rows]

    def last_seq(self, session_id: str) -> int:
        """The newest *stored* event's seq (0 if none): a stream started after it misses
        nothing, even of events still on their way to the disk."""
        with self._engine.connect() as conn:
            last = conn.execute(
                select(func.max(EVENT_TABLE.c.seq)).where(EVENT_TABLE.c.session_id == session_id)
            ).scalar()
        return int(last or 0)

    def forget(self, session_id: str) -> None:
        with self._lock:
            self._next_seq.pop(session_id, None)

    @property
    def streams_closed(self) -> bool:
        """True once the server is stopping (close_streams was called)."""
        return self._streams_closed

    def close_streams(self) -> None:
        """End every live stream now and any opened later: the server is stopping, and
        an open stream would otherwise hold its connection (and the shutdown) forever."""
        with self._lock:
            self._streams_closed = True
            subs = [sub for group in self._subs.values() for sub in group]
        for sub in subs:
            sub.end()

    @contextmanager
    def subscribe(self, session_id: str) -> Iterator[Subscription]:
        sub = Subscription(asyncio.get_running_loop())
        with self._lock:
            self._subs.setdefault(session_id, set()).add(sub)
            closed = self._streams_closed
        if closed:
            sub.end()
        try:
            yield sub
        finally:
            with self._lock:
                subs = self._subs.get(session_id)
                if subs is not None:
                    subs.discard(sub)
                    if not subs:
                        del self._subs[session_id]

    def subscriber_count(self, session_id: str) -> int:
        return len(self._subs.get(session_id, ()))
