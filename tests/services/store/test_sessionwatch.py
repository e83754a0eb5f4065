"""The event log's channel of changed sessions: a mark per session whose row a commit
added, changed or deleted, from the event loop or a worker thread; none for a rollback,
and an end when the server stops."""

from __future__ import annotations

import asyncio
from pathlib import Path

from sqlalchemy.engine import Engine
from sqlmodel import Session

from app.db.models import ChatSession
from app.services.store import store
from app.services.store.eventlog import SESSIONS_CHANNEL, EventLog, Subscription
from tests.services.store.test_eventwriter import new_session


async def marks(sub: Subscription) -> list[str]:
    """The sessions marked so far, once the loop has run what other threads queued."""
    await asyncio.sleep(0.05)
    out = []
    while not sub.queue.empty():
        item = sub.queue.get_nowait()
        assert item is not None
        out.append(item.session_id)
    return out


async def test_each_commit_that_touches_a_session_marks_it(engine: Engine, tmp_path: Path) -> None:
    events = EventLog(engine)
    with events.subscribe(SESSIONS_CHANNEL) as sub:
        sid = new_session(engine, tmp_path)
        assert await marks(sub) == [sid]
        await asyncio.to_thread(store.update_session, engine, sid, status="working")
        assert await marks(sub) == [sid]
        # A rolled-back change says nothing.
        with Session(engine) as db:
            chat = db.get(ChatSession, sid)
            assert chat is not None
            chat.title = "never stored"
            db.add(chat)
            db.flush()
            db.rollback()
        assert await marks(sub) == []
        # An event appended to the session is no change of its row.
        events.append(sid, "user_message", {"text": "hi"})
        await events.flush()
        assert await marks(sub) == []
        store.delete_session(engine, sid)
        assert await marks(sub) == [sid]
        events.close_streams()
        assert await asyncio.wait_for(sub.queue.get(), timeout=5) is None
    await events.close()
