"""HTML pages (Jinja2 + htmx). The same ``_event.html`` partial renders stored and live events."""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import Annotated, Any

from fastapi import APIRouter, Form, Query, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response
from pydantic import ValidationError

from app.brains import available_backends, get_brain_class
from app.brains.base import PERMISSION_MODES, Brain
from app.errors import AppError, NotFoundError
from app.schemas import MessageIn, ProfileCreate
from app.services.profiles import firstrun
from app.services.review import lineage
from app.services.sessions import folder_files, workspace
from app.services.sessions.closed import closed_of
from app.services.sessions.commands import newest, offered_commands
from app.services.store import store
from app.services.transcripts.claude_reader import is_session_id
from app.web.chat.live import agent_label, install_hint
from app.web.context import SIDEBAR_SESSIONS, base_context, first_error, pending_requests
from app.web.deps import MAX_SEQ, AppState, StateDep
from app.web.formatting import shown_status
from app.web.history.terminal import follow_state, refuse_if_followed
from app.web.transcript import (
    completed_later,
    fold_events,
)

router = APIRouter(include_in_schema=False)
# A long session opens at its last events: enough to fill a tall window, few enough that the
# page is served and laid out fast (bench/transcript_browser.py).
PAGE_EVENTS = 100
# A page loaded above while scrolling back goes in as one task; 150 events keep that
# task short enough not to stall scrolling (bench/transcript_browser.py).
EARLIER_EVENTS = 150


@router.get("/badge", response_class=HTMLResponse)
async def badge(
    request: Request,
    state: StateDep,
    session: Annotated[str, Query(max_length=200)] = "",
) -> HTMLResponse:
    """The pending-approvals badge for the sidebar's poll, with the title and status of
    the sidebar's sessions and of ``session`` (the one the page shows), so a page keeps
    them current without a reload. An unknown ``session`` is simply left out."""
    sessions, _ = store.list_sessions(state.engine, limit=SIDEBAR_SESSIONS)
    if session and all(s.id != session for s in sessions):
        with contextlib.suppress(NotFoundError):
            sessions.append(store.get_session(state.engine, session))
    pending = state.manager.permissions.pending_by_session([s.id for s in sessions])
    context = {
        "pending_total": state.manager.permissions.pending_count(),
        "pending_requests": pending_requests(state),
        "session_states": [
            {
                "id": s.id,
                "title": s.title,
                "status": s.status,
                "pending": pending.get(s.id, 0),
                "shown": shown_status(
                    s.status, state.manager.is_live(s.id) or state.follower.is_following(s.id)
                ),
            }
            for s in sessions
        ],
    }
    return state.templates.TemplateResponse(request, "_badge.html", context)


def _index(
    request: Request,
    state: AppState,
    *,
    error: str | None = None,
    form: dict[str, Any] | None = None,
    status_code: int = 200,
) -> HTMLResponse:
    profiles = {p.id: p for p in store.list_profiles(state.engine)}
    recent = store.list_sessions(state.engine)[0]
    sessions = [
        {
            **s.model_dump(),
            "profile_name": profiles[s.profile_id].name if s.profile_id in profiles else "",
        }
        for s in recent
    ]
    context = base_context(request, state) | {
        "sessions": sessions,
        "profiles": [p.model_dump() for p in profiles.values()],
        "preferred_profile": firstrun.preferred_profile(list(profiles.values()), recent),
        "backends": sorted(available_backends()),
        "permission_modes": list(PERMISSION_MODES),
        "error": error,
        "form": form or {},
    }
    return state.templates.TemplateResponse(request, "index.html", context, status_code=status_code)


@router.get("/", response_model=None)
async def index(request: Request, state: StateDep) -> Response:
    # A fresh data dir has nothing to show yet: the wizard makes the first profile.
    if not store.list_profiles(state.engine) and not store.list_sessions(state.engine, limit=1)[0]:
        return RedirectResponse("/welcome", status_code=303)
    # The New profile form starts on an agent this machine has, as the wizard does.
    backend = firstrun.suggested_backend(await state.backends.detected())
    return _index(request, state, form={"backend": backend})


@router.post("/profiles", response_model=None)
async def create_profile(
    request: Request,
    state: StateDep,
    name: Annotated[str, Form()] = "",
    backend: Annotated[str, Form()] = "",
    cwd: Annotated[str, Form()] = "",
    model: Annotated[str, Form()] = "",
    permission_mode: Annotated[str, Form()] = "default",
) -> Response:
    form = {
        "name": name,
        "backend": backend,
        "cwd": cwd,
        "model": model,
        "permission_mode": permission_mode,
    }
    try:
        data = ProfileCreate.model_validate({**form, "model": model or None})
    except ValidationError as exc:
        return _index(request, state, error=first_error(exc), form=form, status_code=422)
    try:
        store.create_profile(state.engine, data=data)
    except AppError as exc:
        return _index(request, state, error=exc.message, form=form, status_code=exc.status)
    return RedirectResponse("/", status_code=303)


@router.post("/sessions", response_model=None)
async def create_session(
    request: Request,
    state: StateDep,
    profile_id: Annotated[str, Form()] = "",
    title: Annotated[str, Form()] = "",
    # "yes", "no", or anything else: as the profile says.
    worktree: Annotated[str, Form(max_length=10)] = "",
    base: Annotated[str, Form(max_length=250)] = "",
) -> Response:
    try:
        chat = await workspace.create_session(
            state.engine,
            state.settings.data_dir,
            profile_id=profile_id,
            title=title or None,
            worktree={"yes": True, "no": False}.get(worktree),
            base=base.strip() or None,
        )
    except AppError as exc:
        return _index(request, state, error=exc.message, status_code=exc.status)
    return RedirectResponse(f"/sessions/{chat.id}", status_code=303)


@router.get("/sessions/{session_id}", response_class=HTMLResponse)
async def session_page(
    session_id: str,
    request: Request,
    state: StateDep,
    around: Annotated[int | None, Query(ge=1, le=MAX_SEQ)] = None,
) -> HTMLResponse:
    chat = store.get_session(state.engine, session_id)
    profile = store.session_profile(state.engine, chat)
    # Before the events are read: following first imports what the terminal added since.
    follow = await follow_state(state, chat, profile.cwd)
    closed = closed_of(chat)
    if closed is None:
        # So that the composer's first "@" finds the folder already listed.
        folder_files.warm(chat.id, Path(profile.cwd), lambda: workspace.git_place(chat, profile))
    latest = state.events.last_seq(session_id)
    if around is not None and around <= latest - PAGE_EVENTS:
        # A link to an event older than the tail (a search hit) opens on the events
        # around it; the page says how many later ones it leaves out.
        start = max(0, around - PAGE_EVENTS // 2 - 1)
        events = state.events.list(session_id, after=start, limit=PAGE_EVENTS)
    else:
        # A long session opens at its end; earlier events load as the user scrolls up.
        events = state.events.list(session_id, limit=PAGE_EVENTS, newest=True)
    shown_last = events[-1]["seq"] if events else 0
    later_done = completed_later(state.events, session_id, events) if shown_last < latest else set()
    hint = install_hint(chat.backend)
    # The header and the composer need the backend's newest report even when it is
    # older than the tail of events the page shows.
    info = newest(state.events, session_id, "session_info") or {}
    offered = offered_commands(state.events, session_id) or {}
    commands = [{"name": name, "description": text} for name, text in offered.items()]
    context = base_context(request, state) | {
        "session": chat.model_dump(),
        "profile": profile.model_dump(),
        "items": fold_events(events, later_done),
        "first_seq": events[0]["seq"] if events else 0,
        "has_earlier": bool(events) and events[0]["seq"] > 1,
        # The stream follows on from the newest stored event, even when it is not shown.
        "last_seq": max(latest, shown_last),
        "later_hidden": max(0, latest - shown_last),
        "can_fork": lineage.can_fork(chat),
        # Its worktree is gone: the page is read-only and says what happened and when.
        "closed": closed,
        "closed_reason": closed.refusal("sending a message") if closed else "",
        # Nothing of a finished session is put back: its files went with its worktree.
        "can_rewind": closed is None and _can_rewind(chat.backend),
        # Paths in rewind lines are shown relative to the session's folder.
        "cwd": profile.cwd,
        "pending_count": state.manager.permissions.pending_count(session_id),
        "install_hint": hint,
        "agent_label": agent_label(chat.backend),
        "permission_modes": list(PERMISSION_MODES),
        "session_info": info,
        "slash_commands": commands,
        "queue_held": _queue_held(state, session_id),
        "models": _models(state, session_id),
        "transcript_missing": _transcript_missing(chat.backend, chat.backend_session_id),
        **follow,
        # The transcript's stream carries the sidebar's events too.
        "sidebar_via": "page",
    }
    return state.templates.TemplateResponse(request, "session.html", context)


@router.get("/sessions/{session_id}/earlier", response_class=HTMLResponse)
async def earlier(
    session_id: str,
    request: Request,
    state: StateDep,
    before: Annotated[int, Query(ge=1, le=MAX_SEQ)],
) -> HTMLResponse:
    """The page of events just above ``before``, plus a loader for the one above that."""
    chat = store.get_session(state.engine, session_id)
    events = state.events.list(session_id, before=before, limit=EARLIER_EVENTS, newest=True)
    context = base_context(request, state) | {
        "session_id": session_id,
        "items": fold_events(events, completed_later(state.events, session_id, events)),
        "first_seq": events[0]["seq"] if events else 0,
        "has_earlier": bool(events) and events[0]["seq"] > 1,
        "install_hint": install_hint(chat.backend),
        "agent_label": agent_label(chat.backend),
        "cwd": store.session_profile(state.engine, chat).cwd,
        "queue_held": _queue_held(state, session_id),
    }
    return state.templates.TemplateResponse(request, "_earlier.html", context)


@router.post("/sessions/{session_id}/messages", response_model=None)
async def send_message(
    session_id: str, state: StateDep, text: Annotated[str, Form()] = ""
) -> Response:
    try:
        body = MessageIn(text=text)
    except ValidationError as exc:
        return Response(first_error(exc), status_code=422, media_type="text/plain")
    try:
        refuse_if_followed(state, session_id)
        await state.manager.send_message(session_id, body.text)
    except AppError as exc:
        # The error is also stored as an event, so the transcript shows it.
        return Response(exc.message, status_code=exc.status, media_type="text/plain")
    return Response(status_code=204)


@router.post("/sessions/{session_id}/fork", response_model=None)
async def fork(session_id: str, state: StateDep) -> Response:
    chat = await lineage.fork_session(
        state.engine, state.events, state.settings.data_dir, session_id
    )
    return RedirectResponse(f"/sessions/{chat.id}", status_code=303)


@router.post("/sessions/{session_id}/continue", response_model=None)
async def continue_session(session_id: str, state: StateDep) -> Response:
    chat = await lineage.continue_session(
        state.engine, state.events, state.settings.data_dir, session_id
    )
    return RedirectResponse(f"/sessions/{chat.id}", status_code=303)


@router.post("/sessions/{session_id}/interrupt", response_model=None)
async def interrupt(session_id: str, state: StateDep) -> Response:
    await state.manager.interrupt(session_id)
    return Response(status_code=204)


def _transcript_missing(backend: str, backend_session_id: str | None) -> str:
    """What the page says when a stored Claude session id cannot name a transcript file
    (an import can bring in any text): the session shows, its file is not looked for."""
    if backend != "claude" or not backend_session_id or is_session_id(backend_session_id):
        return ""
    return (
        "The Claude Code transcript of this session cannot be found: its stored session id "
        "is not one Claude Code uses."
    )


def _models(state: AppState, session_id: str) -> dict[str, Any]:
    """The models the header's picker offers, and the one in use ({"current", "models"})."""
    try:
        return state.manager.controls.models(session_id)
    except AppError:
        return {"current": "", "models": []}


def _queue_held(state: AppState, session_id: str) -> list[int]:
    """The seqs of the messages the app holds for the session: they can still change."""
    return [item.seq for item in state.manager.outbox.items(session_id)]


def _can_rewind(backend: str) -> bool:
    """Whether the backend can put files back to before a message (Brain.rewind_files)."""
    try:
        return get_brain_class(backend).rewind_files is not Brain.rewind_files
    except AppError:
        return False
