"""Which models a session can switch to, before and while its backend runs."""

from __future__ import annotations

from typing import Any

from sqlalchemy.engine import Engine

from app.brains import get_brain_class
from app.db.models import ChatSession
from app.errors import ValidationFailed
from app.services.store import store
from app.services.store.eventlog import EventLog


def session_models(engine: Engine, events: EventLog, session_id: str) -> dict[str, Any]:
    """The models this session can switch to (as last offered), and the one it uses."""
    chat = store.get_session(engine, session_id)
    profile = store.get_profile(engine, chat.profile_id)
    offered = events.list(session_id, kind="models", limit=1, newest=True)
    if offered:
        models = list(offered[0].get("models") or [])
    else:
        brain_cls = get_brain_class(profile.backend)
        models = [
            {"id": i, "label": label, "description": ""} for i, label in brain_cls.known_models
        ]
    current = chat.model or profile.model or ""
    if current and all(m.get("id") != current for m in models):
        models.append({"id": current, "label": current, "description": ""})
    return {"current": current, "models": models}


def check_model_offered(engine: Engine, events: EventLog, chat: ChatSession, model: str) -> None:
    """Before the backend runs, only a model it offered (or can take by name) is kept:
    it is applied when the backend starts, and must not be dropped quietly there."""
    brain_cls = get_brain_class(chat.backend)
    if brain_cls.accepts_any_model:
        return
    ids = [str(m.get("id")) for m in session_models(engine, events, chat.id)["models"]]
    if not ids:
        raise ValidationFailed("model", f"{brain_cls.label} offers no model choice in a session")
    if model not in ids:
        raise ValidationFailed(
            "model", f"{brain_cls.label} has no model {model!r}; it offers: {', '.join(ids)}"
        )
