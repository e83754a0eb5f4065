"""What every page shares: the layout's context (sidebar, badge, CSRF token) and the
one-line message a refused form shows."""

from __future__ import annotations

from typing import Any

from fastapi import Request
from pydantic import ValidationError

from app.errors import NotFoundError
from app.services.store import store
from app.web.deps import AppState
from app.web.formatting import STATUS_LABELS, day_label

SIDEBAR_SESSIONS = 30
# The newest waiting requests the badge names, so a page can say each new one once.
PENDING_NAMED = 10
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


def pending_requests(state: AppState) -> list[dict[str, str]]:
    """The newest requests waiting for an answer, each with its session's title: every
    page says one that is new in another session, once (static/js/page.js)."""
    titles: dict[str, str] = {}
    named = []
    for row in state.manager.permissions.find(status="pending", limit=PENDING_NAMED):
        if row.session_id not in titles:
            try:
                title = store.get_session(state.engine, row.session_id).title
            except NotFoundError:
                title = ""
            titles[row.session_id] = title or UNTITLED
        named.append(
            {
                "id": row.id,
                "sid": row.session_id,
                "title": titles[row.session_id],
                "kind": row.kind,
                "tool": row.tool,
            }
        )
    return named


def base_context(request: Request, state: AppState) -> dict[str, Any]:
    return {
        "request": request,
        "csrf_token": getattr(request.state, "csrf_token", ""),
        "sidebar_sessions": sidebar_rows(state),
        "pending_total": state.manager.permissions.pending_count(),
        "pending_requests": pending_requests(state),
    }


def first_error(exc: ValidationError) -> str:
    err = exc.errors()[0]
    field = ".".join(str(p) for p in err.get("loc", ()) if p != "body") or "input"
    msg = str(err.get("msg", "invalid")).removeprefix("Value error, ")
    return f"{field}: {msg}"
