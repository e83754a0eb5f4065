"""How many of each session's events are still on their way to the disk.

Every session's events go through the one writer thread, in the order they were
appended. A session whose agent writes flat out would otherwise queue events faster than
they are stored, and every other session's next event would wait behind that whole queue
(measured: a paced session's delta waited a second behind a flooding neighbour). So a
session's reader may wait, with ``below``, until few of its own events are left in the
queue: the flood then goes at the pace of the disk, its agent waits on a full pipe, and
what another session appends waits behind at most that many of its events.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections import Counter
from collections.abc import Iterable


class Backlog:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._pending: Counter[str] = Counter()
        self._waiters: dict[str, list[tuple[int, asyncio.Future[None]]]] = {}
        self._closed = False

    def added(self, session_id: str) -> None:
        """One more event of ``session_id`` queued for the writer."""
        with self._lock:
            self._pending[session_id] += 1

    def done(self, session_ids: Iterable[str]) -> None:
        """On the writer thread: it is finished with these events (stored or dropped)."""
        woken: list[asyncio.Future[None]] = []
        with self._lock:
            for sid, count in Counter(session_ids).items():
                left = self._pending[sid] - count
                if left > 0:
                    self._pending[sid] = left
                else:
                    del self._pending[sid]
                waiting = self._waiters.get(sid)
                if not waiting:
                    continue
                still = [(limit, f) for limit, f in waiting if left > limit and not f.done()]
                woken += [f for limit, f in waiting if left <= limit]
                if still:
                    self._waiters[sid] = still
                else:
                    del self._waiters[sid]
        for future in woken:
            with contextlib.suppress(RuntimeError):  # its loop has closed
                future.get_loop().call_soon_threadsafe(_resolve, future)

    async def below(self, session_id: str, limit: int) -> None:
        """Return once at most ``limit`` of the session's events are still queued."""
        with self._lock:
            if self._closed or self._pending[session_id] <= limit:
                return
            future = asyncio.get_running_loop().create_future()
            self._waiters.setdefault(session_id, []).append((limit, future))
        await future

    def close(self) -> None:
        """The writer has stopped: nobody waits for it from now on."""
        with self._lock:
            self._closed = True
            futures = [f for waiting in self._waiters.values() for _, f in waiting]
            self._waiters.clear()
        for future in futures:
            with contextlib.suppress(RuntimeError):
                future.get_loop().call_soon_threadsafe(_resolve, future)


def _resolve(future: asyncio.Future[None]) -> None:
    if not future.done():
        future.set_result(None)
