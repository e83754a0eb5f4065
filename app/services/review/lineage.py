"""New sessions made from old ones: a fork (the backend copies the conversation) and a
continuation (a fresh conversation that links back, for when resuming is impossible)."""

from __future__ import annotations

from pathlib import Path

from sqlalchemy.engine import Engine

from app.brains import get_brain_class
from app.brains.base import Capability
from app.db.models import ChatSession
from app.errors import AppError, ValidationFailed
from app.services.sessions import workspace
from app.services.sessions.closed import closed_of, refuse_if_closed
from app.services.store import store
from app.services.store.eventlog import EventLog

COPY_LIMIT = 100_000


def can_fork(chat: ChatSession) -> bool:
    """Whether ``fork_session`` would accept this session (the page hides the button if not)."""
    try:
        capabilities = get_brain_class(chat.backend).capabilities
    except AppError:
        return False
    fits = Capability.FORK in capabilities and bool(chat.backend_session_id)
    return fits and closed_of(chat) is None


async def fork_session(
    engine: Engine, events: EventLog, data_dir: Path, session_id: str
) -> ChatSession:
    """A new session whose first start forks the old backend conversation.

    Raises:
        ValidationFailed: the backend cannot fork, or there is no conversation yet (422).
        SessionClosed: the old session's worktree is gone (409): see :func:`successor`.
    """
    old = store.get_session(engine, session_id)
    if Capability.FORK not in get_brain_class(old.backend).capabilities:
        raise ValidationFailed("session", f"the {old.backend} backend cannot fork a session")
    if not old.backend_session_id:
        raise ValidationFailed("session", "this session has no conversation to fork yet")
    refuse_if_closed(old, "forking it")
    new = await successor(
        engine,
        data_dir,
        old,
        title=f"{old.title or 'Session'} (fork)",
        links={"forked_from": old.backend_session_id},
    )
    # The fork's transcript starts as a copy, so it reads on its own.
    for ev in events.list(session_id, limit=COPY_LIMIT):
        payload = {k: v for k, v in ev.items() if k not in ("seq", "session_id", "kind", "at")}
        events.append(new.id, ev["kind"], payload)
    events.append(
        new.id,
        "note",
        {
            "text": f"Forked from “{old.title or old.id}”.{_where(old, new)}",
            "link": f"/sessions/{old.id}",
        },
    )
    return new


async def continue_session(
    engine: Engine, events: EventLog, data_dir: Path, session_id: str
) -> ChatSession:
    """A fresh session on the same profile that starts with a link to the old one.

    Raises:
        SessionClosed: the old session's worktree is gone (409): see :func:`successor`.
    """
    old = store.get_session(engine, session_id)
    refuse_if_closed(old, "continuing it")
    new = await successor(
        engine,
        data_dir,
        old,
        title=f"{old.title or 'Session'} (continued)",
        links={"continued_from": old.id},
    )
    events.append(
        new.id,
        "note",
        {
            "text": f"Continues “{old.title or old.id}”, which could not be resumed. "
            "The agent starts without its history; summarise what it needs to know."
            + _where(old, new),
            "link": f"/sessions/{old.id}",
        },
    )
    return new


async def successor(
    engine: Engine, data_dir: Path, old: ChatSession, *, title: str, links: dict[str, str]
) -> ChatSession:
    """The new session that follows ``old``, working where ``old``'s work is.

    A session made in a worktree is followed in a worktree of its own, on a new branch
    made from the old one's branch head: never in the user's checkout, and never in the
    old worktree, whose files are the old session's. One made in the profile's folder is
    followed there. A session whose worktree is gone (discarded, cleaned up) has no
    branch left to start from: refused (409) with what happened.
    """
    refuse_if_closed(old, "following it with a new session")
    in_worktree = bool(old.worktree_path and old.worktree_branch)
    return await workspace.create_session(
        engine,
        data_dir,
        profile_id=old.profile_id,
        title=title,
        worktree=in_worktree,
        base=old.worktree_branch if in_worktree else None,
        links=links,
    )


def _where(old: ChatSession, new: ChatSession) -> str:
    """The note's word on where the new session works, when that is a worktree."""
    if not (new.worktree_path and new.worktree_branch):
        return ""
    start = (new.worktree_base_commit or "")[:7]
    return (
        f" It works in a worktree of its own on branch {new.worktree_branch}, made from "
        f"{old.worktree_branch} at {start}; changes not committed in the old worktree are "
        "not in it."
    )
