"""New sessions made from old ones: a fork (the backend copies the conversation) and a
continuation (a fresh conversation that links back, for when resuming is impossible)."""

from __future__ import annotations

from sqlalchemy.engine import Engine
from sqlmodel import Session

from app.brains import get_brain_class
from app.brains.base import Capability
from app.db.models import ChatSession
from app.errors import AppError, ValidationFailed
from app.services.store import store
from app.services.store.eventlog import EventLog

COPY_LIMIT = 100_000


def can_fork(chat: ChatSession) -> bool:
    """Whether ``fork_session`` would accept this session (the page hides the button if not)."""
    try:
        capabilities = get_brain_class(chat.backend).capabilities
    except AppError:
        return False
    return Capability.FORK in capabilities and bool(chat.backend_session_id)


def fork_session(engine: Engine, events: EventLog, session_id: str) -> ChatSession:
    """A new session whose first start forks the old backend conversation."""
    old = store.get_session(engine, session_id)
    if Capability.FORK not in get_brain_class(old.backend).capabilities:
        raise ValidationFailed("session", f"the {old.backend} backend cannot fork a session")
    if not old.backend_session_id:
        raise ValidationFailed("session", "this session has no conversation to fork yet")
    with Session(engine) as db:
        new = ChatSession(
            profile_id=old.profile_id,
            backend=old.backend,
            title=f"{old.title or 'Session'} (fork)",
            forked_from=old.backend_session_id,
        )
        db.add(new)
        db.commit()
        db.refresh(new)
    # The fork's transcript starts as a copy, so it reads on its own.
    for ev in events.list(session_id, limit=COPY_LIMIT):
        payload = {k: v for k, v in ev.items() if k not in ("seq", "session_id", "kind", "at")}
        events.append(new.id, ev["kind"], payload)
    events.append(
        new.id,
        "note",
        {
            "text": f"Forked from “{old.title or old.id}”.",
            "link": f"/sessions/{old.id}",
        },
    )
    return new


def continue_session(engine: Engine, events: EventLog, session_id: str) -> ChatSession:
    """A fresh session on the same profile that starts with a link to the old one."""
    old = store.get_session(engine, session_id)
    with Session(engine) as db:
        new = ChatSession(
            profile_id=old.profile_id,
            backend=old.backend,
            title=f"{old.title or 'Session'} (continued)",
            continued_from=old.id,
        )
        db.add(new)
        db.commit()
        db.refresh(new)
    events.append(
        new.id,
        "note",
        {
            "text": f"Continues “{old.title or old.id}”, which could not be resumed. "
            "The agent starts without its history; summarise what it needs to know.",
            "link": f"/sessions/{old.id}",
        },
    )
    return new
