"""The event writer: one thread that stores events in batches, off the event loop.

Whatever has queued up while the previous batch was being written becomes the next
batch, stored in one transaction together with its search rows: a quiet stream is
written event by event with no added delay, a burst in a few large transactions. Only
after the commit does anyone hear of an event (``on_commit``), so nothing is shown that
a crash could still take away.

A batch is stored with a handful of statements (rows inserted many per statement), not
two per event: every statement lets go of the interpreter lock while SQLite works, and
while the event loop is busy, getting it back can take a switch interval (5 ms) each
time, so a writer that asked for it per event fell seconds behind a busy loop.

A payload of megabytes (a ``cat`` of a big file) is encoded on neither the event loop
nor this thread but by the preparer's (``bigpayload``), so no other session's events
wait for it; its session's later events follow it through there, in order.

A failing write (a full disk, a locked or read-only file) is retried with a growing
pause, and everything queued behind it waits, in order, rather than being lost or
stored with a gap. A row the database refuses outright (its session was deleted) is
dropped and logged, so it cannot hold up the rest.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import queue
import sqlite3
import sys
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from app.db.engine import configure_connection
from app.services.store.bigpayload import Preparer
from app.services.store.checkpoint import Checkpointer
from app.services.store.records import StoredEvent
from app.services.store.search import indexed_text

log = logging.getLogger(__name__)

# Bounds how long one commit holds SQLite's write lock (other writers wait for it).
MAX_BATCH = 500
RETRY_FIRST_S = 0.05
SWITCH_INTERVAL_S = 0.0005
RETRY_MAX_S = 1.0
INSERT_EVENT = (
    "INSERT INTO event (session_id, seq, kind, payload, created_at) VALUES (?, ?, ?, ?, ?)"
)
INSERT_FTS = "INSERT INTO event_fts (rowid, body, session_id, seq, kind) VALUES (?, ?, ?, ?, ?)"
# Rows per multi-row statement: 750 parameters, below the 999 older SQLite builds allow.
ROWS_PER_STATEMENT = 150


def _insert_events_sql(rows: int) -> str:
    return INSERT_EVENT.split(" VALUES ")[0] + " VALUES " + ",".join(["(?,?,?,?,?)"] * rows)


def _insert_fts_sql(rows: int) -> str:
    # The search row takes the event's rowid, found by (session_id, seq): one statement
    # for many events, without asking SQLite for each new rowid.
    values = ",".join(["(?,?,?)"] * rows)
    return (
        "INSERT INTO event_fts (rowid, body, session_id, seq, kind) "
        "SELECT e.id, v.column1, e.session_id, e.seq, e.kind "
        f"FROM (VALUES {values}) AS v JOIN event AS e "
        "ON e.session_id = v.column2 AND e.seq = v.column3"
    )


class Barrier:
    """Marks a point in the queue; done once everything submitted before it is stored."""

    def __init__(self, loop: asyncio.AbstractEventLoop | None = None) -> None:
        self.done = threading.Event()
        self.future: asyncio.Future[None] | None = loop.create_future() if loop else None

    def release(self) -> None:
        self.done.set()
        if self.future is not None:
            with contextlib.suppress(RuntimeError):  # the loop is already closed
                self.future.get_loop().call_soon_threadsafe(_resolve, self.future)


def _resolve(future: asyncio.Future[None]) -> None:
    if not future.done():
        future.set_result(None)


_STOP = object()
Item = StoredEvent | Barrier | object


class EventWriter:
    def __init__(
        self,
        db_path: Path,
        on_commit: Callable[[Sequence[StoredEvent]], None],
        busy_timeout_s: float = 30.0,
        on_done: Callable[[Sequence[StoredEvent]], None] | None = None,
    ) -> None:
        self._db_path = db_path
        self._busy_timeout_s = busy_timeout_s
        self._on_commit = on_commit
        # Called after every batch, stored or not: what waits on the queue's length.
        self._on_done = on_done
        self._queue: queue.SimpleQueue[Item] = queue.SimpleQueue()
        self._preparer = Preparer(self._queue.put)
        self._thread: threading.Thread | None = None
        self._checkpointer = Checkpointer(db_path)
        self._start_lock = threading.Lock()
        # After this monotonic time a stopping writer gives up on a failing write.
        self._give_up_at: float | None = None
        self.submitted = 0
        self.stored = 0
        self.dropped = 0
        self.commits = 0

    def submit(self, record: StoredEvent) -> None:
        self._ensure_thread()
        self.submitted += 1
        if not self._preparer.take(record):
            self._queue.put(record)

    @property
    def checkpoints(self) -> int:
        """WAL checkpoints run by the writer's checkpoint thread so far."""
        return self._checkpointer.checkpoints

    def barrier(self, loop: asyncio.AbstractEventLoop | None = None) -> Barrier:
        self._ensure_thread()
        barrier = Barrier(loop)
        if not self._preparer.take_barrier(barrier):
            self._queue.put(barrier)
        return barrier

    def close(self, timeout: float) -> None:
        """Store what is queued (giving up on a failing write after ``timeout`` s), then
        end the thread. Blocks the caller; run it in a worker thread from async code."""
        thread = self._thread
        if thread is None:
            return
        self._give_up_at = time.monotonic() + timeout
        self._preparer.close(timeout)
        self._queue.put(_STOP)
        thread.join(timeout + 1)
        self._checkpointer.close()

    def _ensure_thread(self) -> None:
        if self._thread is None:
            with self._start_lock:
                if self._thread is None:
                    # Each statement lets go of the interpreter lock; with the event loop
                    # busy, getting it back waits out a switch interval (5 ms by default)
                    # every time, and every session's events wait for the writer.
                    sys.setswitchinterval(min(sys.getswitchinterval(), SWITCH_INTERVAL_S))
                    self._thread = threading.Thread(
                        target=self._run, name="angelia-event-writer", daemon=True
                    )
                    self._thread.start()

    # -- the thread ------------------------------------------------------------------
    def _run(self) -> None:
        conn = sqlite3.connect(self._db_path, isolation_level=None, check_same_thread=False)
        try:
            configure_connection(conn, self._busy_timeout_s)
            while True:
                items = [self._queue.get()]
                while len(items) < MAX_BATCH:
                    try:
                        items.append(self._queue.get_nowait())
                    except queue.Empty:
                        break
                records = [i for i in items if isinstance(i, StoredEvent)]
                if records:
                    try:
                        self._store(conn, records)
                    except Exception:  # never let one bad batch end the writer
                        log.exception("storing %d events failed; they are lost", len(records))
                        self.dropped += len(records)
                    if self._on_done is not None:
                        self._on_done(records)
                for item in items:
                    if isinstance(item, Barrier):
                        item.release()
                if any(item is _STOP for item in items):
                    return
        finally:
            conn.close()

    def _store(self, conn: sqlite3.Connection, records: list[StoredEvent]) -> None:
        pause = RETRY_FIRST_S
        while True:
            try:
                stored = self._write(conn, records)
            except sqlite3.OperationalError as exc:
                if self._give_up_at is not None and time.monotonic() > self._give_up_at:
                    log.error("gave up storing %d events at shutdown: %s", len(records), exc)
                    self.dropped += len(records)
                    return
                log.error("storing %d events failed (%s); retrying", len(records), exc)
                time.sleep(pause)
                pause = min(pause * 2, RETRY_MAX_S)
                continue
            self.stored += len(stored)
            self.dropped += len(records) - len(stored)
            if stored:
                try:
                    self._on_commit(stored)
                except Exception:
                    log.exception("handing out %d stored events failed", len(stored))
            return

    def _write(self, conn: sqlite3.Connection, records: list[StoredEvent]) -> list[StoredEvent]:
        """Insert the batch in one transaction; returns the records stored."""
        conn.execute("BEGIN IMMEDIATE")
        try:
            stored: list[StoredEvent] = []
            for start in range(0, len(records), ROWS_PER_STATEMENT):
                part = records[start : start + ROWS_PER_STATEMENT]
                if self._insert_many(conn, part):
                    stored += part
                else:  # one row is refused: find it, store the others
                    stored += [r for r in part if self._insert(conn, r)]
            conn.execute("COMMIT")
            self.commits += 1
            self._checkpointer.nudge()
        except BaseException:
            with contextlib.suppress(sqlite3.Error):
                conn.execute("ROLLBACK")
            raise
        return stored

    def _insert_many(self, conn: sqlite3.Connection, records: list[StoredEvent]) -> bool:
        """Insert ``records`` and their search rows in two statements; False (and nothing
        inserted) if the database refuses any of them."""
        rows = [(r.session_id, r.seq, r.kind, r.payload_json, _created(r)) for r in records]
        try:
            conn.execute(_insert_events_sql(len(rows)), [x for row in rows for x in row])
        except (sqlite3.IntegrityError, ValueError):  # a failed statement inserts nothing
            return False
        bodies = [(body, r.session_id, r.seq) for r in records if (body := _body(r))]
        if bodies:
            conn.execute(_insert_fts_sql(len(bodies)), [x for row in bodies for x in row])
        return True

    def _insert(self, conn: sqlite3.Connection, r: StoredEvent) -> bool:
        created = _created(r)
        try:
            cur = conn.execute(INSERT_EVENT, (r.session_id, r.seq, r.kind, r.payload_json, created))
        except (sqlite3.IntegrityError, ValueError) as exc:  # ValueError: unencodable text
            log.error("dropped event %s #%d (%s): %s", r.session_id, r.seq, r.kind, exc)
            return False
        body = _body(r)
        if body:
            conn.execute(INSERT_FTS, (cur.lastrowid, body, r.session_id, r.seq, r.kind))
        return True


def _created(r: StoredEvent) -> str:
    return f"{r.created:%Y-%m-%d %H:%M:%S.%f}"


def _body(r: StoredEvent) -> str | None:
    return indexed_text(r.kind, r.payload)
