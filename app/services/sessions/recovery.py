"""Picking up after the app was killed: orphaned backends, stale prompts and statuses;
and ending a backend's process group when the app stops or is forced to."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
from pathlib import Path

from sqlalchemy.engine import Engine
from sqlmodel import Session, col, select

from app.db.models import ChatSession
from app.services.git import folder_snapshot
from app.services.permissions.permissions import PermissionService
from app.services.sessions.brain_start import LiveBrain
from app.services.store import store
from app.services.store.eventlog import EventLog

log = logging.getLogger(__name__)

LIVE_STATUSES = ("live", "working", "waiting")


def recover(
    engine: Engine, events: EventLog, permissions: PermissionService, data_dir: Path
) -> None:
    """After a crash or kill of the app: reap orphans, expire prompts, mark sessions, and
    remove folder snapshots whose session is gone."""
    with Session(engine) as db:
        known = set(db.exec(select(ChatSession.id)))
        gone = folder_snapshot.prune(data_dir, known)
        if gone:
            log.info("Removed %d folder snapshot(s) of deleted sessions.", len(gone))
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


def kill_group(pid: int, sig: signal.Signals = signal.SIGKILL) -> None:
    """Signal a backend's process group (SIGKILL: an orphan of an earlier run, or at a
    forced exit; SIGTERM: a backend in a turn, at a stop)."""
    try:
        pgid = os.getpgid(pid)
    except (ProcessLookupError, PermissionError):
        return
    # Only a group led by the recorded pid is ours: brains start in their own session.
    if pgid != pid:
        return
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, sig)


def mark_stopped(
    engine: Engine, events: EventLog, permissions: PermissionService, session_id: str, busy: bool
) -> bool:
    """At a stop of the server: expire the session's waiting prompts and, if it was
    ``busy`` (in a turn or waiting), mark it interrupted, the notice saying so last.
    Returns whether it was marked."""
    expired = permissions.close_pending(
        session_id,
        status="expired",
        source="restart",
        message="Server stopped while this request was waiting.",
    )
    if not busy and not expired:
        return False
    if store.get_session(engine, session_id).status != "interrupted":
        store.update_session(engine, session_id, status="interrupted")
        events.append(session_id, "status", {"status": "interrupted"})
    events.append(
        session_id,
        "error",
        {
            "message": "The server stopped during this turn"
            + (" while an approval was waiting" if expired else "")
            + ". Send a message to continue.",
            "detail": "",
        },
    )
    return True


async def halt(live: LiveBrain, wait: float) -> None:
    """SIGTERM a backend's process group, and SIGKILL it if it has not exited (its events
    ended) within ``wait`` s.

    For a backend in a turn at a stop, before its stdin closes: Claude Code takes a
    closed stdin for a refused prompt and asks the model once more (a billed request),
    so the group ends without first being told anything.
    """
    pid = live.brain.pid
    if pid is None or live.pump is None:
        return
    kill_group(pid, signal.SIGTERM)
    _done, running = await asyncio.wait({live.pump}, timeout=wait)
    if running:
        kill_group(pid)
