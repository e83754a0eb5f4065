"""Scheduled continues: a message the app sends to a session at a set time.

When a turn stops on a plan limit, the user can have the session continue by itself once
the limit resets ("continue", or a message of their own). Each is a row in
``scheduled_continue`` (so it survives a restart of the app): ``pending`` until it is due,
then ``sent`` — marked before the message goes, so a crash or a restart never sends it
twice — or ``cancelled`` by the user, or ``failed`` when the session refused it (the
reason in ``note``). A session keeps only its newest continue: a new one replaces the
pending one and drops the done ones before it (its transcript shows what was sent), so
the table stays as small as the number of sessions however often a client schedules.

``ContinueScheduler`` is one asyncio task started with the app: it sleeps until the next
due row, wakes when rows change (``poke``), and on start sends what came due while the app
was down, once. It ends as soon as the server starts to stop (the event log ends every
subscription then), so nothing is sent to an agent that is being shut down. Sending is
``SessionManager.send_message``, the user's own path, so a message for a busy session
waits in its queue and one for a session with an approval pending waits for the answer.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable
from datetime import UTC, datetime, timedelta

from sqlalchemy import delete, update
from sqlalchemy.engine import Engine
from sqlmodel import Session, col, select

from app.db.models import ChatSession, ScheduledContinue, utcnow
from app.errors import AppError, NotFoundError, ValidationFailed
from app.services.sessions.closed import refuse_if_closed
from app.services.sessions.manager import SessionManager
from app.services.store.eventlog import EventLog, StoredEvent

__all__ = [
    "DEFAULT_MESSAGE",
    "MAX_AHEAD",
    "MAX_MESSAGE_CHARS",
    "ContinueScheduler",
    "aware",
    "cancel",
    "latest_of",
    "pending_by_session",
    "schedule",
]

log = logging.getLogger(__name__)

DEFAULT_MESSAGE = "continue"
MAX_MESSAGE_CHARS = 10_000
# The weekly limit is the longest a plan has; a month leaves room for any reset.
MAX_AHEAD = timedelta(days=31)
# Sleeping in slices notices a clock that jumped (a suspended laptop) within this long.
_LONGEST_NAP_S = 30.0
# The event-log channel whose subscription ends when the server starts to stop; no event
# is ever stored under it.
STOP_CHANNEL = "continues:stop"


def aware(moment: datetime) -> datetime:
    """SQLite gives datetimes back without a zone; every one stored here is UTC."""
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


def schedule(
    engine: Engine, session_id: str, at: datetime, message: str = DEFAULT_MESSAGE
) -> ScheduledContinue:
    """Store a pending continue of the session at ``at`` (UTC), in place of its earlier ones.

    Raises:
        ValidationFailed: a blank or too long message, a time in the past or too far ahead.
        NotFoundError: no such session.
        SessionClosed: (409) its worktree is gone, so it is read-only.
    """
    if not message.strip():
        raise ValidationFailed("message", "is empty; write what to send (e.g. continue)")
    if len(message) > MAX_MESSAGE_CHARS:
        raise ValidationFailed("message", f"must be at most {MAX_MESSAGE_CHARS:,} characters")
    now = utcnow()
    at = aware(at).astimezone(UTC)
    if at < now - timedelta(seconds=1):
        raise ValidationFailed("at", "is in the past; pick a time from now on")
    if at > now + MAX_AHEAD:
        raise ValidationFailed("at", f"is more than {MAX_AHEAD.days} days ahead")
    with Session(engine) as db:
        chat = db.get(ChatSession, session_id)
        if chat is None:
            raise NotFoundError(f"Session {session_id} not found")
        refuse_if_closed(chat, "scheduling a message")
        db.execute(delete(ScheduledContinue).where(col(ScheduledContinue.session_id) == session_id))
        row = ScheduledContinue(session_id=session_id, at=at, message=message)
        db.add(row)
        db.commit()
        db.refresh(row)
        return row


def cancel(engine: Engine, session_id: str) -> ScheduledContinue:
    """Cancel the session's pending continue; ``NotFoundError`` when none is pending."""
    with Session(engine) as db:
        row = _pending(db, session_id)
        if row is None:
            raise NotFoundError(
                "No continue is scheduled for this session (it was sent or cancelled)."
            )
        row.state, row.done_at = "cancelled", utcnow()
        db.add(row)
        db.commit()
        db.refresh(row)
        return row


def _pending(db: Session, session_id: str) -> ScheduledContinue | None:
    return db.exec(
        select(ScheduledContinue).where(
            col(ScheduledContinue.session_id) == session_id,
            col(ScheduledContinue.state) == "pending",
        )
    ).first()


def latest_of(engine: Engine, session_id: str) -> ScheduledContinue | None:
    """The session's pending continue, else its newest one of any state (None: never any)."""
    with Session(engine) as db:
        return (
            _pending(db, session_id)
            or db.exec(
                select(ScheduledContinue)
                .where(col(ScheduledContinue.session_id) == session_id)
                .order_by(col(ScheduledContinue.created_at).desc())
                .limit(1)
            ).first()
        )


def pending_by_session(engine: Engine) -> dict[str, datetime]:
    """Each session with a pending continue: when it goes (UTC)."""
    with Session(engine) as db:
        rows = db.exec(
            select(ScheduledContinue).where(col(ScheduledContinue.state) == "pending")
        ).all()
    return {r.session_id: aware(r.at) for r in rows}


def _next_due(engine: Engine) -> ScheduledContinue | None:
    with Session(engine) as db:
        return db.exec(
            select(ScheduledContinue)
            .where(col(ScheduledContinue.state) == "pending")
            .order_by(col(ScheduledContinue.at))
            .limit(1)
        ).first()


def _claim(engine: Engine, row_id: str) -> bool:
    """Mark a pending continue sent; False when it is no longer pending (cancelled)."""
    with Session(engine) as db:
        done = db.execute(
            update(ScheduledContinue)
            .where(col(ScheduledContinue.id) == row_id, col(ScheduledContinue.state) == "pending")
            .values(state="sent", done_at=utcnow())
        )
        db.commit()
        return bool(getattr(done, "rowcount", 0))


def _failed(engine: Engine, row_id: str, why: str) -> None:
    with Session(engine) as db:
        row = db.get(ScheduledContinue, row_id)
        if row is not None:
            row.state, row.note = "failed", why[:500]
            db.add(row)
            db.commit()


class ContinueScheduler:
    """The task that sends scheduled continues when they are due."""

    def __init__(self, engine: Engine, events: EventLog, manager: SessionManager) -> None:
        self._engine = engine
        self._events = events
        self._manager = manager
        self._wake = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        # Told the session id of each continue that could not be sent (a push, say).
        self.on_failed: Callable[[str], None] | None = None

    def start(self) -> None:
        self._task = asyncio.get_running_loop().create_task(self._run(), name="continues")

    def poke(self) -> None:
        """Rows changed: look again at what is due next."""
        self._wake.set()

    async def stop(self) -> None:
        """End the task at once; what is pending stays stored for the next start."""
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task

    async def _run(self) -> None:
        with self._events.subscribe(STOP_CHANNEL) as stop:
            stopping = asyncio.ensure_future(stop.queue.get())
            try:
                await self._loop(stopping)
            finally:
                stopping.cancel()

    async def _loop(self, stopping: asyncio.Future[StoredEvent | None]) -> None:
        while not stopping.done():
            # Cleared before reading, so a poke while reading is not lost.
            self._wake.clear()
            try:
                due = _next_due(self._engine)
                wait = None
                if due is not None:
                    wait = (aware(due.at) - utcnow()).total_seconds()
                    if wait <= 0:
                        await self._send(due)
                        continue
                    wait = min(wait, _LONGEST_NAP_S)
            except Exception:
                log.exception("Scheduled continues: reading or sending failed")
                wait = _LONGEST_NAP_S
            woken = asyncio.ensure_future(self._wake.wait())
            await asyncio.wait((woken, stopping), timeout=wait, return_when=asyncio.FIRST_COMPLETED)
            woken.cancel()

    async def _send(self, row: ScheduledContinue) -> None:
        if not _claim(self._engine, row.id):
            return
        try:
            await self._manager.send_message(row.session_id, row.message, scheduled=True)
        except AppError as exc:
            why = exc.message
        except Exception as exc:
            log.exception("Scheduled continue %s for session %s failed", row.id, row.session_id)
            why = f"The app could not send it: {exc}"
        else:
            return
        _failed(self._engine, row.id, why)
        if self.on_failed is not None:
            self.on_failed(row.session_id)
