"""Finishing a worktree session's work: the API and the Changes tab's panel forms.

``/api/sessions/{id}/worktree|commit|merge|discard|resolve`` answer JSON; a refusal that
is about files (a conflict, uncommitted work or untracked files in the way) is a 409 that
lists them. The
panel's forms post to the same actions under ``/sessions/{id}/finish/…`` and come back
to the Changes tab with the outcome in the address, so they work without scripts.
"""

from __future__ import annotations

import asyncio
from dataclasses import asdict
from typing import Annotated, Any, Literal, cast
from urllib.parse import urlencode

from fastapi import APIRouter, Form
from fastapi.responses import JSONResponse, RedirectResponse, Response
from pydantic import Field

from app.db.models import ChatSession
from app.errors import AppError
from app.nul import Input
from app.services.git.merge import (
    LocalChanges,
    MergeConflict,
    Strategy,
    StrategyNotPossible,
    UntrackedInTheWay,
)
from app.services.git.worktrees import UnsafeToDiscard
from app.services.sessions import finish
from app.services.store import store
from app.web.deps import AppState, StateDep

router = APIRouter(prefix="/api", tags=["worktrees"])

MAX_MESSAGE_CHARS = 65_536
# How many file names a redirect back to the panel carries (the address stays short).
SHOWN_FILES = 50


class CommitIn(Input):
    message: str = Field(min_length=1, max_length=MAX_MESSAGE_CHARS)


class MergeIn(Input):
    strategy: Literal["ff", "merge", "squash"]


class DiscardIn(Input):
    confirm: bool = False


def refusal(exc: AppError) -> dict[str, Any] | None:
    """The JSON of a refusal that names files; None for any other error."""
    if isinstance(exc, MergeConflict):
        return {"detail": exc.message, "reason": "conflict", "files": exc.files}
    if isinstance(exc, LocalChanges):
        # Files git does not track are the user's to move: git would not guard them.
        untracked = isinstance(exc, UntrackedInTheWay)
        return {
            "detail": exc.message,
            "reason": "untracked" if untracked else "local_changes",
            "checkout": str(exc.checkout),
            "files": exc.files,
        }
    if isinstance(exc, StrategyNotPossible):
        return {"detail": exc.message, "reason": "not_possible", "strategy": exc.strategy}
    if isinstance(exc, UnsafeToDiscard):
        return {
            "detail": exc.message,
            "reason": "unsafe",
            "unmerged": exc.unmerged,
            "files": exc.dirty,
        }
    return None


def _refused(exc: AppError) -> Response:
    body = refusal(exc)
    if body is None:
        raise exc
    return JSONResponse(body, status_code=exc.status)


async def worktree_json(state: AppState, chat: ChatSession) -> dict[str, Any]:
    got = await asyncio.to_thread(finish.info, state.engine, state.events, chat)
    return asdict(got)


# -- the API ------------------------------------------------------------------------------


@router.get("/sessions/{session_id}/worktree")
async def get_worktree(session_id: str, state: StateDep) -> dict[str, Any]:
    """The session's branch against its base: ahead/behind, dirty files, merged or not,
    the strategies possible now (``strategies``: each ``possible`` or ``why_not``), the
    files a merge would conflict in, and the suggested commit message; 422 for a session
    without a worktree."""
    return await worktree_json(state, store.get_session(state.engine, session_id))


@router.post("/sessions/{session_id}/commit", status_code=201, response_model=None)
async def commit(session_id: str, body: CommitIn, state: StateDep) -> dict[str, Any]:
    """Commit everything in the session's worktree with ``message``."""
    chat = store.get_session(state.engine, session_id)
    made = await finish.commit(state.engine, state.manager, chat, body.message)
    return {"commit": made, "worktree": await worktree_json(state, chat)}


@router.post("/sessions/{session_id}/merge", response_model=None)
async def merge(session_id: str, body: MergeIn, state: StateDep) -> dict[str, Any] | Response:
    """Merge the session's branch into its base (``ff``, ``merge`` or ``squash``); 409
    with the conflicting files (``reason`` ``conflict``), the user's uncommitted files in
    the way (``local_changes``), the ignored or untracked files the merge would write
    over where the base is checked out (``untracked``), or a strategy not possible now
    (``not_possible``: a fast-forward of a base with commits of its own), nothing changed
    anywhere."""
    chat = store.get_session(state.engine, session_id)
    try:
        done = await finish.merge(state.engine, state.manager, chat, body.strategy)
    except (MergeConflict, LocalChanges, StrategyNotPossible) as exc:
        return _refused(exc)
    return {
        "commit": done.commit,
        "previous": done.previous,
        "strategy": done.strategy,
        "checkout": str(done.checkout) if done.checkout else None,
    }


@router.post("/sessions/{session_id}/discard", response_model=None)
async def discard(
    session_id: str, state: StateDep, body: DiscardIn | None = None
) -> dict[str, Any] | Response:
    """Remove the session's worktree and its branch (nothing else); 409 with what would
    be lost (unmerged commits, uncommitted files) unless ``confirm``."""
    chat = store.get_session(state.engine, session_id)
    confirm = body.confirm if body else False
    try:
        await finish.discard(
            state.engine, state.manager, state.settings.data_dir, chat, confirm=confirm
        )
    except UnsafeToDiscard as exc:
        return _refused(exc)
    return {"discarded": True}


@router.post("/sessions/{session_id}/resolve", status_code=202)
async def resolve(session_id: str, state: StateDep) -> dict[str, Any]:
    """Send the session's agent the files that conflict with its base, and what to do."""
    chat = store.get_session(state.engine, session_id)
    files = await finish.ask_to_resolve(state.engine, state.manager, chat)
    return {"files": files}


# -- the panel's forms ---------------------------------------------------------------------

pages = APIRouter(include_in_schema=False)


def _back(session_id: str, view: str = "", **outcome: Any) -> RedirectResponse:
    # Back to the view the form was sent from: a split diff stays split.
    if view == "split":
        outcome["view"] = view
    query = urlencode({k: v for k, v in outcome.items() if v not in (None, "")}, doseq=True)
    where = f"/sessions/{session_id}/changes" + (f"?{query}" if query else "")
    # At the outcome itself: the browser scrolls there and, as it can take the focus,
    # focuses it, so the keyboard goes on from the panel and a screen reader says it.
    # (At a fragment the browser skips autofocus, and it clears the focus when the
    # target cannot take it.)
    target = "finish-error" if "finish_error" in outcome else "finish-done"
    return RedirectResponse(f"{where}#{target}", status_code=303)


def _refused_back(session_id: str, exc: AppError, view: str = "") -> RedirectResponse:
    body = refusal(exc) or {}
    files = list(body.get("files") or [])[:SHOWN_FILES]
    return _back(
        session_id,
        view,
        finish_error=exc.message[:1000],
        reason=body.get("reason"),
        files=files,
    )


@pages.post("/sessions/{session_id}/finish/commit")
async def commit_form(
    session_id: str,
    state: StateDep,
    message: Annotated[str, Form()] = "",
    view: Annotated[str, Form()] = "",
) -> RedirectResponse:
    chat = store.get_session(state.engine, session_id)
    try:
        made = await finish.commit(state.engine, state.manager, chat, message)
    except AppError as exc:
        return _refused_back(session_id, exc, view)
    return _back(session_id, view, finish_done=f"Committed {made[:10]} on {chat.worktree_branch}.")


@pages.post("/sessions/{session_id}/finish/merge")
async def merge_form(
    session_id: str,
    state: StateDep,
    strategy: Annotated[str, Form()] = "",
    view: Annotated[str, Form()] = "",
) -> RedirectResponse:
    chat = store.get_session(state.engine, session_id)
    if strategy not in ("ff", "merge", "squash"):
        return _back(session_id, view, finish_error="Choose how to merge: ff, merge or squash.")
    try:
        done = await finish.merge(state.engine, state.manager, chat, cast(Strategy, strategy))
    except AppError as exc:
        return _refused_back(session_id, exc, view)
    return _back(
        session_id,
        view,
        finish_done=f"Merged {chat.worktree_branch} into {chat.worktree_base}: it is now at "
        f"{done.commit[:10]} (was {done.previous[:10]}).",
    )


@pages.post("/sessions/{session_id}/finish/resolve")
async def resolve_form(session_id: str, state: StateDep) -> RedirectResponse:
    chat = store.get_session(state.engine, session_id)
    try:
        await finish.ask_to_resolve(state.engine, state.manager, chat)
    except AppError as exc:
        return _refused_back(session_id, exc)
    # To the conversation, where the message and the agent's answer appear.
    return RedirectResponse(f"/sessions/{session_id}", status_code=303)


@pages.post("/sessions/{session_id}/finish/discard")
async def discard_form(
    session_id: str,
    state: StateDep,
    confirm: Annotated[str, Form()] = "",
    view: Annotated[str, Form()] = "",
) -> RedirectResponse:
    chat = store.get_session(state.engine, session_id)
    try:
        await finish.discard(
            state.engine,
            state.manager,
            state.settings.data_dir,
            chat,
            confirm=confirm == "yes",
        )
    except AppError as exc:
        return _refused_back(session_id, exc, view)
    return _back(session_id, view, finish_done="The worktree and its branch were discarded.")


async def panel(state: AppState, chat: ChatSession) -> dict[str, Any] | None:
    """What the Changes tab's panel shows: None without a worktree, else its state (or
    why it cannot be read: ``error``)."""
    if not chat.worktree_path:
        return None
    try:
        return await worktree_json(state, chat)
    except AppError as exc:
        return {"error": exc.message}
