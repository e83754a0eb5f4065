"""When a push goes out: what needs the user while they are away from the page.

* An approval or a question starts waiting: the session's status becomes ``waiting``
  (only requests no rule or mode answered do that). One push per session while its
  requests wait: a second request in the same session adds none, until every one is
  answered and the session leaves ``waiting``.
* A turn ends while no page (no event stream) of that session is open.
* A scheduled continue could not be sent.

It follows the event log's commits (``EventLog.listen``) from the app's start on, so
nothing that was already waiting before a restart is pushed again; each candidate is
checked against the database (a request still pending, a session still live) so an
imported transcript's old events push nothing.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Coroutine, Sequence
from typing import Any

from sqlalchemy.engine import Engine
from sqlmodel import Session, col, select

from app.db.models import ChatSession, PermissionRequest, Profile
from app.services.access.push_send import Notice, PushSender, shown_name
from app.services.access.push_settings import PushSettings
from app.services.store.eventlog import EventLog, StoredEvent

log = logging.getLogger(__name__)

_WATCHED = frozenset({"status", "turn_end"})
_TITLES = {
    "approval": "Approval waiting",
    "question": "Question waiting",
    "turn": "Turn finished",
    "continue_failed": "Scheduled continue failed",
}


def session_url(session_id: str) -> str:
    return f"/sessions/{session_id}"


class PushNotifier:
    def __init__(
        self,
        engine: Engine,
        events: EventLog,
        sender: PushSender,
        settings: PushSettings,
        is_live: Callable[[str], bool],
    ) -> None:
        self._engine = engine
        self._events = events
        self._sender = sender
        self._settings = settings
        self._is_live = is_live
        self._loop: asyncio.AbstractEventLoop | None = None
        # Sessions whose waiting requests were pushed already (until they leave "waiting").
        self._notified: set[str] = set()
        self._tasks: set[asyncio.Task[None]] = set()
        events.listen(self._committed)

    def start(self) -> None:
        """Push from now on (events committed before are backlog: never pushed)."""
        self._loop = asyncio.get_running_loop()
        self.warm()

    def warm(self) -> None:
        """Have the push library loaded before the first push needs it (in a thread)."""
        if self._loop is not None:
            self._loop.run_in_executor(None, self._sender.warm)

    async def stop(self) -> None:
        self._loop = None
        tasks = list(self._tasks)
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)

    def continue_failed(self, session_id: str) -> None:
        """A scheduled continue of the session was refused (called on the event loop)."""
        if self._settings.continues:
            self._spawn(self._push("continue_failed", session_id, ""))

    def _committed(self, events: Sequence[StoredEvent]) -> None:
        """On the writer thread: hand what may push to the event loop."""
        loop = self._loop
        wanted = [e for e in events if e.kind in _WATCHED]
        if loop is None or not wanted:
            return
        try:
            loop.call_soon_threadsafe(self._take, wanted)
        except RuntimeError:  # the loop has closed: the app is gone
            return

    def _take(self, events: Sequence[StoredEvent]) -> None:
        if self._loop is None or self._events.streams_closed:
            return
        for event in events:
            sid = event.session_id
            if event.kind == "status":
                if event.payload.get("status") != "waiting":
                    self._notified.discard(sid)
                elif sid not in self._notified:
                    self._notified.add(sid)
                    self._spawn(self._waiting(sid))
            elif (
                self._settings.turns
                and self._events.subscriber_count(sid) == 0
                and self._is_live(sid)
            ):
                self._spawn(self._push("turn", sid, ""))

    def _spawn(self, work: Coroutine[Any, Any, None]) -> None:
        task = asyncio.create_task(work)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _waiting(self, session_id: str) -> None:
        if not await asyncio.to_thread(self._sender.subscribed):
            return
        row = await asyncio.to_thread(self._oldest_pending, session_id)
        if row is None:  # answered already, or an imported event
            self._notified.discard(session_id)
            return
        kind = "approval" if row.kind in ("tool", "plan") else "question"
        if not (self._settings.approvals if kind == "approval" else self._settings.questions):
            return
        detail = shown_name(row.tool) if row.kind == "tool" else ""
        await self._push(kind, session_id, detail)

    async def _push(self, kind: str, session_id: str, detail: str) -> None:
        try:
            if not await asyncio.to_thread(self._sender.subscribed):
                return  # nobody to tell: no reads, no log line
            profile = await asyncio.to_thread(self._profile_name, session_id)
            if profile is None:
                return
            body = f"{profile}: {detail}" if detail else profile
            urgent = kind in ("approval", "question")
            notice = Notice(
                kind=kind,
                session_id=session_id,
                title=_TITLES[kind],
                body=body,
                url=session_url(session_id),
                urgency="high" if urgent else "normal",
            )
            await self._sender.send(notice)
        except Exception:
            log.exception("Sending a push for session %s failed", session_id)

    def _oldest_pending(self, session_id: str) -> PermissionRequest | None:
        with Session(self._engine) as db:
            return db.exec(
                select(PermissionRequest)
                .where(
                    col(PermissionRequest.session_id) == session_id,
                    col(PermissionRequest.status) == "pending",
                )
                .order_by(col(PermissionRequest.created_at))
                .limit(1)
            ).first()

    def _profile_name(self, session_id: str) -> str | None:
        with Session(self._engine) as db:
            chat = db.get(ChatSession, session_id)
            profile = db.get(Profile, chat.profile_id) if chat is not None else None
            return shown_name(profile.name) if profile is not None else None
