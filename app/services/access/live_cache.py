"""The memory behind every credential check: which secrets are live, and when their use
was last written.

Sign-ins (``signins``) and device sessions (``devices``) are checked on every request
and every event stream, so both answer from here and read the database once per
credential after a start. A credential deleted here first is refused at once, even by
a check that read its row just before the delete (``put`` keeps it out).
"""

from __future__ import annotations

import threading
from collections.abc import Iterable
from datetime import datetime
from typing import Generic, Protocol, TypeVar


class Live(Protocol):
    id: str


V = TypeVar("V", bound=Live)


class LiveCache(Generic[V]):
    """Secret hash -> view, and view id -> when its last use was written (thread-safe)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._views: dict[str, V] = {}
        self._written: dict[str, datetime] = {}
        self._gone: set[str] = set()

    def get(self, digest: str) -> V | None:
        with self._lock:
            return self._views.get(digest)

    def put(self, digest: str, view: V, written: datetime, *, fresh: bool = False) -> bool:
        """Remember a view read or just made; False (and nothing kept) if it was deleted
        since it was read. ``fresh`` (just made) records ``written`` as its last write."""
        with self._lock:
            if view.id in self._gone:
                return False
            self._views[digest] = view
            if fresh:
                self._written[view.id] = written
            else:
                self._written.setdefault(view.id, written)
            return True

    def alive(self, view_id: str) -> bool:
        with self._lock:
            return view_id in self._written

    def written_at(self, view_id: str, default: datetime) -> datetime:
        with self._lock:
            return self._written.get(view_id, default)

    def find(self, view_id: str) -> V | None:
        """The cached view with this id, None when it is not cached (or deleted)."""
        with self._lock:
            return next((v for v in self._views.values() if v.id == view_id), None)

    def mark_written(self, view_id: str, at: datetime) -> None:
        with self._lock:
            if view_id in self._written:
                self._written[view_id] = at

    def views(self) -> list[V]:
        with self._lock:
            return list(self._views.values())

    def forget(self, ids: Iterable[str]) -> None:
        ids = set(ids)
        with self._lock:
            self._gone.update(ids)
            for key in [k for k, v in self._views.items() if v.id in ids]:
                del self._views[key]
            for view_id in ids:
                self._written.pop(view_id, None)
