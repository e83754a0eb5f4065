"""WAL checkpoints on a thread of their own.

SQLite copies the write-ahead log back into the database file (a checkpoint) inside
whichever commit takes the log past 1,000 pages, by default. That commit then holds the
write lock for the whole copy and its two fsyncs: 190-230 ms after a 20 MB tool result
was stored, during which no session's events were committed and a status update on the
event loop waited too. Every connection of the app leaves that to a log ten times as
long (``configure_connection``: a safety net, should this thread fall behind), and this
thread checkpoints at most once per ``GAP_S`` while anything is written, in PASSIVE
mode: it takes no write lock, so the writer goes on committing while the log is copied.
"""

from __future__ import annotations

import logging
import sqlite3
import threading
from pathlib import Path

from app.db.engine import configure_connection

log = logging.getLogger(__name__)

GAP_S = 1.0


class Checkpointer:
    def __init__(self, db_path: Path) -> None:
        self._db_path = db_path
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.checkpoints = 0

    def nudge(self) -> None:
        """Something was committed: checkpoint within ``GAP_S``."""
        if self._thread is None:
            self._thread = threading.Thread(
                target=self._run, name="angelia-checkpoint", daemon=True
            )
            self._thread.start()
        self._wake.set()

    def close(self) -> None:
        self._stop.set()
        self._wake.set()
        if self._thread is not None:
            self._thread.join(5)

    def _run(self) -> None:
        conn = sqlite3.connect(self._db_path, isolation_level=None, check_same_thread=False)
        try:
            configure_connection(conn)
            while not self._stop.is_set():
                self._wake.wait()
                self._wake.clear()
                if self._stop.is_set():  # woken by close: the last connection's close copies
                    break
                try:
                    conn.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchall()
                    self.checkpoints += 1
                except sqlite3.Error as exc:  # busy or full disk: the next one catches up
                    log.warning("WAL checkpoint failed: %s", exc)
                self._stop.wait(GAP_S)
        finally:
            conn.close()
