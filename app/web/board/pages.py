"""The board's page: a card per session at work, its live stream of cards as HTML, and
the form that sends the same prompt to N new worktree sessions."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response
from fastapi.sse import EventSourceResponse
from pydantic import ValidationError

from app.brains import get_brain_class
from app.errors import AppError, UnknownBackendError
from app.services.sessions.board_compare import Run, compare
from app.services.store import store
from app.web.board.api import CompareIn
from app.web.board.view import cards, events
from app.web.context import base_context, first_error
from app.web.deps import AppState, StateDep
from app.web.sidebar import with_sidebar
from app.web.sse import STREAM_RESPONSES, batched_response, one_each
from app.web.stopping import ending_on_stop

router = APIRouter(include_in_schema=False)
FORM_ROWS = 4


def _models(backend: str) -> list[str]:
    try:
        return [m for m, _label in get_brain_class(backend).known_models]
    except UnknownBackendError:
        return []


async def _page(
    request: Request,
    state: AppState,
    *,
    notice: str = "",
    form: dict[str, str] | None = None,
    status_code: int = 200,
) -> HTMLResponse:
    profiles = store.list_profiles(state.engine)
    models = sorted({m for p in profiles for m in _models(p.backend)})
    context = base_context(request, state) | {
        "active_nav": "board",
        "cards": await cards(state),
        "profiles": profiles,
        "models": models,
        "rows": range(FORM_ROWS),
        "notice": notice,
        "form": form or {},
        "sidebar_via": "page",
    }
    return state.templates.TemplateResponse(request, "board.html", context, status_code=status_code)


@router.get("/board", response_class=HTMLResponse)
async def board_page(request: Request, state: StateDep) -> HTMLResponse:
    return await _page(request, state)


@router.get("/board/live", responses=STREAM_RESPONSES)
async def live(request: Request, state: StateDep) -> EventSourceResponse:
    """The page's stream: the API's, with each card rendered as the page draws it, and
    the sidebar's events (``app.web.sidebar``), so the page holds one connection."""
    template = state.templates.get_template("_board_card.html")
    csrf = getattr(request.state, "csrf_token", "")
    cards_live = events(state, request, lambda card: template.render(card=card, csrf_token=csrf))
    woven = with_sidebar(one_each(cards_live), state, request)
    return batched_response(ending_on_stop(woven, state.events))


def _runs(form: dict[str, str]) -> list[dict[str, Any]]:
    """The rows the user filled in; a row names a model, another profile, or both."""
    main = form.get("profile_id", "")
    runs = []
    for i in range(FORM_ROWS):
        model = form.get(f"model-{i}", "").strip()
        other = form.get(f"profile-{i}", "")
        if model or other:
            runs.append({"profile_id": other or main, "model": model or None})
    return runs or [{"profile_id": main}]


@router.post("/board/compare", response_model=None)
async def compare_form(request: Request, state: StateDep) -> Response:
    raw = await request.form()
    form = {k: str(v) for k, v in raw.items() if k != "csrf_token"}
    try:
        body = CompareIn.model_validate({"prompt": form.get("prompt", ""), "runs": _runs(form)})
    except ValidationError as exc:
        return await _page(request, state, notice=first_error(exc), form=form, status_code=422)
    runs = [Run(r.profile_id, r.model or None) for r in body.runs]
    try:
        await compare(state.engine, state.manager, state.settings.data_dir, body.prompt, runs)
    except AppError as exc:
        return await _page(request, state, notice=exc.message, form=form, status_code=exc.status)
    return RedirectResponse("/board", status_code=303)
