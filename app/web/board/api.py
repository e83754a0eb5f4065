"""The board's JSON: its cards, their changes as SSE, and the same prompt in N worktrees."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Annotated, Any

from fastapi import APIRouter, Request
from fastapi.sse import EventSourceResponse, ServerSentEvent
from pydantic import BaseModel, Field, StringConstraints

from app.nul import Input
from app.schemas import SessionPublic
from app.services.sessions.board_compare import MAX_RUNS, Run, compare
from app.web.board.view import cards, events
from app.web.chat.context import GaugePublic
from app.web.deps import StateDep

router = APIRouter(prefix="/api/board", tags=["board"])

PROMPT_CHARS = 100_000
Text = Annotated[str, StringConstraints(strip_whitespace=True, min_length=1)]


class GitPublic(BaseModel):
    branch: str
    base: str
    ahead: int
    behind: int
    files_changed: int
    merged: bool
    dirty: bool
    error: str | None = None


class PendingPublic(BaseModel):
    id: str
    tool: str
    kind: str
    title: str
    summary: str


class BoardCardPublic(BaseModel):
    id: str
    title: str
    status: str
    backend: str
    model: str
    worktree: GitPublic | None
    last_line: str
    pending: PendingPublic | None
    pending_count: int
    context: GaugePublic | None = None
    scheduled_at: str = ""  # when a scheduled continue goes (ISO-8601 UTC); "" for none


class RunIn(Input):
    profile_id: Annotated[str, StringConstraints(min_length=1, max_length=100)]
    model: Annotated[str, StringConstraints(strip_whitespace=True, max_length=200)] | None = None


class CompareIn(Input):
    prompt: Annotated[Text, StringConstraints(max_length=PROMPT_CHARS)]
    runs: list[RunIn] = Field(min_length=1, max_length=MAX_RUNS)


@router.get("")
async def get_board(state: StateDep) -> list[BoardCardPublic]:
    """Every session working, waiting for an approval, or done in a worktree whose branch
    is not merged into its base yet (or has uncommitted work), newest first."""
    return [BoardCardPublic.model_validate(c) for c in await cards(state)]


@router.post("/compare", status_code=201)
async def post_compare(body: CompareIn, state: StateDep) -> list[SessionPublic]:
    """The same prompt in N worktrees: one session per run, each in a new git worktree,
    each sent ``prompt``. 422 (nothing made) when a profile's folder is not a git
    repository or a run's model is refused."""
    runs = [Run(r.profile_id, r.model or None) for r in body.runs]
    made = await compare(state.engine, state.manager, state.settings.data_dir, body.prompt, runs)
    return [SessionPublic.model_validate(c, from_attributes=True) for c in made]


@router.get("/stream", response_class=EventSourceResponse)
async def stream(request: Request, state: StateDep) -> AsyncIterator[ServerSentEvent]:
    """The board live: ``ids`` (``{"ids": [...]}``, every card now, in order) first, then
    a ``card`` event for each card that appears or changes (as ``GET /api/board`` lists
    it) and a ``gone`` event (``{"id": ...}``) for each that leaves; it ends when the
    server stops."""
    async for event in events(state, request, _json):
        yield event


def _json(card: dict[str, Any]) -> str:
    return BoardCardPublic.model_validate(card).model_dump_json()
