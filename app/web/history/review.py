"""Pages for reviewing approvals: the audit log, the mode and model switches.

Everything here is a plain form or link (htmx only polls the badge), so each page also
works as a bookmark and with the keyboard alone. A profile's rules are on its page
(``profiles.pages``).
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Iterable
from datetime import UTC, date, datetime, time
from typing import Annotated, Any
from urllib.parse import urlencode

from fastapi import APIRouter, Form, Query, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response
from pydantic import ValidationError
from sqlalchemy import func, select
from sqlalchemy.engine import Engine
from sqlmodel import col

from app.db.models import Event, PermissionRequest
from app.errors import AppError, NotFoundError
from app.schemas import ModeIn, ModelIn
from app.services.store import store
from app.web.context import base_context
from app.web.deps import AppState, StateDep

router = APIRouter(include_in_schema=False)

DECISIONS = ("allow_once", "allow_always", "deny", "deny_stop", "cancelled", "expired")
SOURCES = ("user", "rule", "mode", "timeout", "cancel", "restart")
STATUSES = ("pending", "decided", "cancelled", "expired")
# What the audit table shows of a request; the full input is one click away on the
# session page, and a long command would otherwise stretch every row.
ASKED_CHARS = 120
AUDIT_LIMIT = 500


# -- permission mode -------------------------------------------------------------------


@router.post("/sessions/{session_id}/mode", response_model=None)
async def set_mode(
    session_id: str,
    state: StateDep,
    mode: Annotated[str, Form()] = "",
    confirm: Annotated[str, Form()] = "",
) -> Response:
    async def apply() -> None:
        body = ModeIn.model_validate({"mode": mode, "confirm": bool(confirm)})
        await state.manager.controls.set_mode(session_id, body.mode, confirm=body.confirm)

    return await _switch(state, session_id, "mode", mode, apply)


@router.post("/sessions/{session_id}/model", response_model=None)
async def set_model(
    session_id: str, state: StateDep, model: Annotated[str, Form()] = ""
) -> Response:
    """The model picker without scripts (static/js/model.js posts to the JSON API)."""

    async def apply() -> None:
        body = ModelIn.model_validate({"model": model})
        await state.manager.controls.set_model(session_id, body.model)

    return await _switch(state, session_id, "model", model, apply)


async def _switch(
    state: AppState,
    session_id: str,
    field: str,
    value: str,
    apply: Callable[[], Awaitable[None]],
) -> Response:
    """Run ``apply`` and go back to the session, with what went wrong if it was refused."""
    store.get_session(state.engine, session_id)
    try:
        await apply()
    except ValidationError as exc:
        return _back_to_session(session_id, field, value, _error_text(exc))
    except NotFoundError:
        raise
    except AppError as exc:
        return _back_to_session(session_id, field, value, exc.message)
    return RedirectResponse(f"/sessions/{session_id}", status_code=303)


def _back_to_session(session_id: str, field: str, value: str, error: str) -> RedirectResponse:
    # A redirect rather than a re-render keeps reload from re-posting the form. The
    # message can only reach a signed-in page: the SameSite=Strict cookie is not sent
    # when another site links here.
    query = urlencode({field: value[:200], f"{field}_error": error[:500]})
    return RedirectResponse(f"/sessions/{session_id}?{query}#{field}-form", status_code=303)


# -- audit log -------------------------------------------------------------------------


@router.get("/permissions", response_class=HTMLResponse)
async def audit(
    request: Request,
    state: StateDep,
    session: str = "",
    profile: str = "",
    tool: str = "",
    decision: str = "",
    source: str = "",
    status: str = "",
    date_from: Annotated[str, Query(alias="from")] = "",
    date_to: Annotated[str, Query(alias="to")] = "",
) -> HTMLResponse:
    filters = {
        "session": session.strip(),
        "profile": profile.strip(),
        "tool": tool.strip(),
        "decision": decision.strip(),
        "source": source.strip(),
        "status": status.strip(),
        "from": date_from.strip(),
        "to": date_to.strip(),
    }
    errors: dict[str, str] = {}
    since = _parse_day(filters["from"], "from", errors)
    until = _parse_day(filters["to"], "to", errors)
    rows = state.manager.permissions.find(
        status=filters["status"] or None,
        session_id=filters["session"] or None,
        profile_id=filters["profile"] or None,
        tool=filters["tool"] or None,
        decision=filters["decision"] or None,
        source=filters["source"] or None,
        since=datetime.combine(since, time.min, tzinfo=UTC) if since else None,
        until=datetime.combine(until, time.max, tzinfo=UTC) if until else None,
        limit=AUDIT_LIMIT,
    )
    titles = _session_titles(state, {r.session_id for r in rows})
    seqs = _request_seqs(state.engine, {r.session_id for r in rows})
    sessions, _ = store.list_sessions(state.engine, limit=200)
    context = base_context(request, state) | {
        "active_nav": "permissions",
        "filters": filters,
        "errors": errors,
        "rows": [_audit_row(r, titles, seqs) for r in rows],
        "truncated": len(rows) >= AUDIT_LIMIT,
        "session_choices": [{"id": s.id, "title": s.title} for s in sessions],
        "profile_choices": [
            {"id": p.id, "name": p.name} for p in store.list_profiles(state.engine)
        ],
        "decisions": DECISIONS,
        "sources": SOURCES,
        "statuses": STATUSES,
    }
    return state.templates.TemplateResponse(request, "permissions.html", context)


def _parse_day(text: str, field: str, errors: dict[str, str]) -> date | None:
    if not text:
        return None
    try:
        return date.fromisoformat(text)
    except ValueError:
        errors[field] = f"{text!r} is not a date; use YYYY-MM-DD"
        return None


def _audit_row(
    row: PermissionRequest, titles: dict[str, str], seqs: dict[str, int]
) -> dict[str, Any]:
    seq = seqs.get(row.id)
    waited = (row.decided_at - row.created_at).total_seconds() * 1000 if row.decided_at else None
    return {
        "id": row.id,
        "created_at": row.created_at,
        "session_id": row.session_id,
        "session_title": titles.get(row.session_id, ""),
        "href": f"/sessions/{row.session_id}" + (f"#e-{seq}" if seq else ""),
        "tool": row.tool,
        "asked": asked_summary(row.tool, row.input, row.title),
        "status": row.status,
        "decision": row.decision,
        "source": row.source,
        "rule": row.rule,
        "message": row.message,
        "waited_ms": waited,
    }


def asked_summary(tool: str, tool_input: dict[str, Any], title: str = "") -> str:
    """One short line saying what a request wanted to do."""
    text = ""
    for key in ("command", "file_path", "notebook_path", "path", "url", "pattern", "query"):
        value = tool_input.get(key)
        if isinstance(value, str) and value.strip():
            text = value
            break
    if not text:
        text = title or (json.dumps(tool_input, ensure_ascii=False) if tool_input else tool)
    text = " ".join(text.split())
    return text if len(text) <= ASKED_CHARS else text[: ASKED_CHARS - 1] + "…"


def _session_titles(state: AppState, session_ids: Iterable[str]) -> dict[str, str]:
    titles: dict[str, str] = {}
    for sid in session_ids:
        try:
            titles[sid] = store.get_session(state.engine, sid).title
        except NotFoundError:
            titles[sid] = ""
    return titles


def _request_seqs(engine: Engine, session_ids: set[str]) -> dict[str, int]:
    """permission_id → seq of its ``permission_request`` event, for permalinks."""
    if not session_ids:
        return {}
    pid = func.json_extract(col(Event.payload), "$.permission_id")
    stmt = select(pid, col(Event.seq)).where(
        col(Event.kind) == "permission_request",
        col(Event.session_id).in_(sorted(session_ids)),
    )
    with engine.connect() as conn:
        return {str(p): int(seq) for p, seq in conn.execute(stmt) if p}


# -- helpers -----------------------------------------------------------------------------


def _field_errors(exc: ValidationError) -> dict[str, str]:
    errors: dict[str, str] = {}
    for err in exc.errors():
        field = ".".join(str(p) for p in err.get("loc", ()) if p != "body") or "form"
        errors.setdefault(field, str(err.get("msg", "invalid")).removeprefix("Value error, "))
    return errors


def _error_text(exc: ValidationError) -> str:
    return "; ".join(f"{field}: {msg}" for field, msg in _field_errors(exc).items())
