"""The plan-limit meter and scheduled continues: the JSON API, the forms that work without
scripts, and the panel the session page shows (``_limits.html``).

The session page includes the panel itself, so its template calls ``session_limits``, a
global ``install`` adds to the pages' Jinja environment.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Annotated, Any

from fastapi import APIRouter, FastAPI, Form, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response
from pydantic import BaseModel, ConfigDict, Field

from app.db.models import ScheduledContinue, utcnow
from app.errors import AppError, ValidationFailed
from app.nul import Input
from app.services.sessions import limits as plan_limits
from app.services.sessions import schedule
from app.services.sessions.schedule import ContinueScheduler
from app.services.store import store
from app.web.context import base_context
from app.web.deps import AppState, StateDep, aware_utc
from app.web.history.terminal import refuse_if_followed

router = APIRouter()


class ResumeAtIn(Input):
    """When to continue (default: when the session's limit resets) and what to send."""

    model_config = ConfigDict(extra="forbid")

    at: datetime | None = None
    message: str = Field(default=schedule.DEFAULT_MESSAGE, max_length=schedule.MAX_MESSAGE_CHARS)


class ScheduledPublic(BaseModel):
    id: str
    session_id: str
    at: datetime  # UTC
    message: str
    state: str  # pending | sent | cancelled | failed
    created_at: datetime
    done_at: datetime | None
    note: str  # why it failed


def _public(row: ScheduledContinue) -> ScheduledPublic:
    return ScheduledPublic(
        id=row.id,
        session_id=row.session_id,
        at=schedule.aware(row.at),
        message=row.message,
        state=row.state,
        created_at=schedule.aware(row.created_at),
        done_at=schedule.aware(row.done_at) if row.done_at else None,
        note=row.note,
    )


def _scheduler(request: Request) -> ContinueScheduler:
    found: ContinueScheduler = request.app.state.continues
    return found


def _reset_time(state: AppState, session_id: str) -> datetime:
    """When the session's limit resets: what a continue without a time waits for."""
    found = plan_limits.of_session(state.events, session_id)
    if found is None or found.resets_at is None:
        raise ValidationFailed(
            "at",
            "no limit reset time is known for this session; give the time to continue at",
        )
    return max(found.resets_at, utcnow())


def _schedule(
    state: AppState, request: Request, session_id: str, at: datetime | None, message: str
) -> ScheduledContinue:
    store.get_session(state.engine, session_id)
    refuse_if_followed(state, session_id)
    when = aware_utc(at, "at") or _reset_time(state, session_id)
    row = schedule.schedule(state.engine, session_id, when, message)
    _scheduler(request).poke()
    return row


def _cancel(state: AppState, request: Request, session_id: str) -> ScheduledContinue:
    store.get_session(state.engine, session_id)
    row = schedule.cancel(state.engine, session_id)
    _scheduler(request).poke()
    return row


# -- JSON API ----------------------------------------------------------------------------


@router.get("/api/limits", tags=["usage"])
async def newest_limits(state: StateDep) -> dict[str, Any] | None:
    """The newest plan-limit figures any session's backend reported; null when none ever did
    (only Claude Code behind a claude.ai login or a gateway reports them)."""
    found = plan_limits.newest_overall(state.engine)
    return found.as_dict() if found else None


@router.get("/api/sessions/{session_id}/limits", tags=["sessions"])
async def session_limits_api(session_id: str, state: StateDep) -> dict[str, Any]:
    """The session's newest plan-limit figures (null when its backend reports none) and its
    scheduled continue (the pending one, else the newest; null when it never had one)."""
    store.get_session(state.engine, session_id)
    return _panel(state, session_id, for_page=False)


@router.get("/api/sessions/{session_id}/resume-at", tags=["sessions"])
async def get_resume_at(session_id: str, state: StateDep) -> ScheduledPublic | None:
    """The session's pending continue, else its newest one; null when it never had one."""
    store.get_session(state.engine, session_id)
    row = schedule.latest_of(state.engine, session_id)
    return _public(row) if row else None


@router.post("/api/sessions/{session_id}/resume-at", status_code=201, tags=["sessions"])
async def post_resume_at(
    session_id: str, body: ResumeAtIn, state: StateDep, request: Request
) -> ScheduledPublic:
    """Send ``message`` (default "continue") to the session at ``at`` (default: when its plan
    limit resets), as if the user sent it then. Stored, so it survives a restart; replaces
    the session's pending one."""
    return _public(_schedule(state, request, session_id, body.at, body.message))


@router.delete("/api/sessions/{session_id}/resume-at", tags=["sessions"])
async def delete_resume_at(session_id: str, state: StateDep, request: Request) -> ScheduledPublic:
    """Cancel the session's pending continue (404 when none is pending)."""
    return _public(_cancel(state, request, session_id))


# -- pages ------------------------------------------------------------------------------


def _fragment(request: Request, state: AppState, session_id: str, error: str = "") -> HTMLResponse:
    context = base_context(request, state) | {
        "session": store.get_session(state.engine, session_id),
        "panel": _panel(state, session_id, for_page=True),
        "error": error,
    }
    return state.templates.TemplateResponse(request, "_limits.html", context)


def _form_done(
    request: Request, state: AppState, session_id: str, act: Callable[[], object]
) -> Response:
    """Run a form's action. htmx gets the panel back in place, with the refusal in it when
    the action was refused; a plain form goes back to the session page (or, refused, to the
    error page saying why)."""
    swapped = request.headers.get("hx-request") == "true"
    try:
        act()
    except AppError as exc:
        if not swapped:
            raise
        return _fragment(request, state, session_id, exc.message)
    if not swapped:
        return RedirectResponse(f"/sessions/{session_id}#limits", status_code=303)
    return _fragment(request, state, session_id)


@router.get("/sessions/{session_id}/limits", include_in_schema=False)
async def limits_fragment(session_id: str, request: Request, state: StateDep) -> HTMLResponse:
    """The panel alone, which static/js/limits.js swaps in when a turn ends."""
    return _fragment(request, state, session_id)


@router.post("/sessions/{session_id}/resume-at", include_in_schema=False)
async def resume_at_form(
    session_id: str,
    request: Request,
    state: StateDep,
    message: Annotated[str, Form(max_length=schedule.MAX_MESSAGE_CHARS)] = "continue",
) -> Response:
    return _form_done(
        request, state, session_id, lambda: _schedule(state, request, session_id, None, message)
    )


@router.post("/sessions/{session_id}/resume-at/cancel", include_in_schema=False)
async def cancel_form(session_id: str, request: Request, state: StateDep) -> Response:
    return _form_done(request, state, session_id, lambda: _cancel(state, request, session_id))


# -- the panel's data --------------------------------------------------------------------


def _panel(state: AppState, session_id: str, *, for_page: bool) -> dict[str, Any]:
    found = plan_limits.of_session(state.events, session_id)
    row = schedule.latest_of(state.engine, session_id)
    scheduled = _public(row).model_dump(mode="json" if not for_page else "python") if row else None
    return {
        "limits": (found if for_page else found.as_dict()) if found else None,
        "scheduled": scheduled,
        "default_message": schedule.DEFAULT_MESSAGE,
    }


def _panel_global(state: AppState) -> Callable[[str], dict[str, Any]]:
    def session_limits(session_id: str) -> dict[str, Any]:
        """The session page's limit meter and scheduled continue."""
        return _panel(state, session_id, for_page=True)

    return session_limits


def install(app: FastAPI, scheduler: ContinueScheduler) -> None:
    """Add the routes, the scheduler the routes wake, and the panel's data to the pages."""
    app.include_router(router)
    app.state.continues = scheduler
    state: AppState = app.state.angelia
    state.templates.env.globals["session_limits"] = _panel_global(state)
