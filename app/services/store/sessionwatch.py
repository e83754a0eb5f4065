"""Which sessions' rows changed, told once their commit lands.

A session's row changes in many places (its start, a status the manager sets, a rename,
a title the agent picks, a delete, an import), most of which append no event, so the
event log alone cannot tell a page that its list of sessions is stale. This listens to
every ORM flush instead: the ids of the sessions a transaction added, changed or deleted
are noted, and handed to the engine's watchers after the commit (never for a rolled-back
one), so a watcher that reads the row then sees it as stored.

A watcher runs on whatever thread committed (the event loop or a worker thread): it must
only hand the ids on (``EventLog`` queues them onto each subscriber's own loop).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable
from itertools import chain
from typing import Any
from weakref import WeakKeyDictionary, WeakMethod

from sqlalchemy import event
from sqlalchemy.engine import Engine
from sqlalchemy.orm import Session

from app.db.models import ChatSession

Watcher = Callable[[set[str]], None]
# Held weakly: the watcher (an event log) holds its engine, and a strong reference here
# would keep both alive for good once the app that made them is gone.

# Where a transaction keeps the ids it touched, in its Session's own ``info``.
_NOTED = "angelia.sessions_changed"
_lock = threading.Lock()
_watchers: WeakKeyDictionary[Engine, list[WeakMethod[Watcher]]] = WeakKeyDictionary()


def watch(engine: Engine, watcher: Watcher) -> None:
    """Call ``watcher`` (a bound method, held weakly) with the ids of the sessions each
    commit on ``engine`` touched."""
    with _lock:
        _watchers.setdefault(engine, []).append(WeakMethod(watcher))


def _session_ids(objects: Iterable[Any]) -> set[str]:
    return {o.id for o in objects if isinstance(o, ChatSession)}


@event.listens_for(Session, "after_flush")
def _note(db: Session, _context: Any) -> None:
    # Still the state before the flush here: what it added, changed and deleted.
    ids = _session_ids(chain(db.new, db.dirty, db.deleted))
    if ids:
        db.info.setdefault(_NOTED, set()).update(ids)


@event.listens_for(Session, "after_commit")
def _tell(db: Session) -> None:
    ids: set[str] | None = db.info.pop(_NOTED, None)
    if not ids:
        return
    bind = db.get_bind()
    engine = bind if isinstance(bind, Engine) else bind.engine
    with _lock:
        refs = _watchers.get(engine, [])
        watchers = [w for w in (ref() for ref in refs) if w is not None]
        if len(watchers) < len(refs):
            refs[:] = [ref for ref in refs if ref() is not None]
    for watcher in watchers:
        watcher(ids)


@event.listens_for(Session, "after_rollback")
def _forget(db: Session) -> None:
    db.info.pop(_NOTED, None)
