"""Picking up after the app was killed: orphaned backends, stale prompts and statuses."""

from __future__ import annotations

import contextlib
import os
import signal

from sqlalchemy.engine import Engine
from sqlmodel import Session, col, select

from app.db.models import ChatSession
from app.services import store
from app.services.eventlog import EventLog
from app.services.permissions import PermissionService

LIVE_STATUSES = ("live", "working", "waiting")


def recover(engine: Engine, events: EventLog, permissions: PermissionService) -> None:
    """After a crash or kill of the app: reap orphans, expire prompts, mark sessions."""
    with Session(engine) as db:
        rows = list(
            db.exec(
                select(ChatSession).where(
                    col(ChatSession.status).in_(LIVE_STATUSES)
                    | col(ChatSession.backend_pid).is_not(None)
                )
            )
        )
    for chat in rows:
        if chat.backend_pid:
            kill_group(chat.backend_pid)
        expired = permissions.close_pending(
            chat.id,
            status="expired",
            source="restart",
            message="The server restarted while this request was waiting.",
        )
        interrupted = chat.status in ("working", "waiting")
        if interrupted or expired:
            events.append(
                chat.id,
                "error",
                {
                    "message": "The server stopped during this session's turn; the turn "
                    "was interrupted. Send a message to continue.",
                    "detail": "",
                },
            )
        store.update_session(
            engine,
            chat.id,
            status="interrupted" if interrupted else "idle",
            backend_pid=None,
        )


def kill_group(pid: int) -> None:
    """Kill a backend's process group: an orphan of an earlier run, or at a forced exit."""
    try:
        pgid = os.getpgid(pid)
    except (ProcessLookupError, PermissionError):
        return
    # Only a group led by the recorded pid is ours: brains start in their own session.
    if pgid != pid:
        return
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signal.SIGKILL)
