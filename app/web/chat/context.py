"""The context gauge and Compact: ``/api/sessions/{id}/context`` and ``/compact``, the
page's Compact button, and the ``context_gauges`` lookup the templates draw gauges with."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, FastAPI
from fastapi.responses import Response
from pydantic import BaseModel

from app.errors import AppError
from app.schemas import Accepted
from app.services.sessions import context
from app.web.deps import AppState, SessionIdDep, StateDep
from app.web.history.terminal import refuse_if_followed

router = APIRouter()


class GaugePublic(BaseModel):
    """How full the context is, in tokens: nulls and level "unknown" where the backend
    reported nothing; else level green, amber (from 60 %) or red (from 80 %)."""

    used: int | None
    size: int | None
    level: str
    percent: int | None


class ContextPublic(GaugePublic):
    """The gauge, and whether Compact can run now (else ``compact_refusal`` says why)."""

    can_compact: bool
    compact_refusal: str


@router.get("/api/sessions/{session_id}/context", tags=["sessions"])
async def get_context(session_id: SessionIdDep, state: StateDep) -> ContextPublic:
    """The newest context figures the backend reported, and whether Compact is offered."""
    gauge = context.gauges(state.engine, [session_id])[session_id]
    refusal = context.compact_refusal(state.engine, state.events, session_id)
    return ContextPublic(**gauge.as_dict(), can_compact=not refusal, compact_refusal=refusal)


@router.post("/api/sessions/{session_id}/compact", status_code=202, tags=["sessions"])
async def compact(session_id: SessionIdDep, state: StateDep) -> Accepted:
    """Ask the backend to compact the conversation (its own ``/compact`` command).

    409 with the reason while a turn runs or an approval waits, when the backend offers
    no compact command, or when the session is followed from a terminal.
    """
    await _compact(state, session_id)
    return Accepted()


@router.post("/sessions/{session_id}/compact", include_in_schema=False, response_model=None)
async def compact_page(session_id: SessionIdDep, state: StateDep) -> Response:
    """The page's Compact button; a refusal's reason comes back as plain text."""
    try:
        await _compact(state, session_id)
    except AppError as exc:
        return Response(exc.message, status_code=exc.status, media_type="text/plain")
    return Response(status_code=204)


async def _compact(state: AppState, session_id: str) -> None:
    refuse_if_followed(state, session_id)
    busy = state.manager.busy(session_id)
    context.check_compact(state.engine, state.events, session_id, busy=busy)
    await state.manager.send_message(session_id, "/" + context.COMPACT_COMMAND)


def install(app: FastAPI) -> None:
    """Add the routes, and the gauges' lookup to the pages' templates."""
    app.include_router(router)
    state: AppState = app.state.angelia

    def context_gauges(session_ids: list[str]) -> dict[str, dict[str, Any]]:
        found = context.gauges(state.engine, session_ids)
        return {sid: gauge.as_dict() for sid, gauge in found.items()}

    def compact_refusal(session_id: str) -> str:
        return context.compact_refusal(state.engine, state.events, session_id)

    state.templates.env.globals["context_gauges"] = context_gauges
    state.templates.env.globals["compact_refusal"] = compact_refusal
