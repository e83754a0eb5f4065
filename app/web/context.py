"""What every page shares: the layout's context (sidebar, badge, CSRF token) and the
one-line message a refused form shows."""

from __future__ import annotations

from typing import Any

from fastapi import Request
from pydantic import ValidationError

from app.services.store import store
from app.web.deps import AppState
from app.web.formatting import STATUS_LABELS, day_label

SIDEBAR_SESSIONS = 30
UNTITLED = "Untitled session"


def sidebar_rows(state: AppState) -> list[dict[str, str]]:
    """The sidebar's sessions as it shows them, most recently active first; the page
    draws them and its stream (``app.web.sidebar``) sends them again as they change."""
    sessions, _ = store.list_sessions(state.engine, limit=SIDEBAR_SESSIONS)
    return [
        {
            "id": s.id,
            "title": s.title or UNTITLED,
            "status": s.status,
            "label": STATUS_LABELS.get(s.status, s.status),
            "day": day_label(s.updated_at),
        }
        for s in sessions
    ]


def base_context(request: Request, state: AppState) -> dict[str, Any]:
    return {
        "request": request,
        "csrf_token": getattr(request.state, "csrf_token", ""),
        "sidebar_sessions": sidebar_rows(state),
        "pending_total": state.manager.permissions.pending_count(),
    }


def first_error(exc: ValidationError) -> str:
    err = exc.errors()[0]
    field = ".".join(str(p) for p in err.get("loc", ()) if p != "body") or "input"
    msg = str(err.get("msg", "invalid")).removeprefix("Value error, ")
    return f"{field}: {msg}"
