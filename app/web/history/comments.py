"""Review comments on the Changes tab's diff lines: the JSON API, the plain forms that send
or delete them without scripts, and the list the tab shows (``_review_comments.html``).

The Changes page includes that list itself, so the template calls ``review_comments``,
a global ``install`` adds to the page's Jinja environment; it reuses the diff the page
has already built (``files``) rather than building it again.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from typing import Any, Literal

from fastapi import APIRouter, FastAPI, Request
from fastapi.responses import HTMLResponse, RedirectResponse
from pydantic import BaseModel, ConfigDict

from app.db.models import ReviewComment
from app.nul import Input
from app.services.review import comments
from app.services.store import store
from app.web.context import base_context
from app.web.deps import AppState, StateDep
from app.web.history.terminal import refuse_if_followed

router = APIRouter()

Where = tuple[str, dict[str, str]]


class CommentIn(Input):
    model_config = ConfigDict(extra="forbid")

    path: str
    line: int
    side: Literal["new", "old"] = "new"
    body: str


class CommentPublic(BaseModel):
    id: str
    session_id: str
    path: str
    line: int
    side: str
    body: str
    quote: str  # the line as it read when the comment was written
    status: str  # open | sent
    created_at: datetime
    sent_at: datetime | None
    sent_seq: int | None  # the user_message event it went out in
    # For a sent comment: its line, or the lines around it, changed since (None: open).
    answered: bool | None


class SentPublic(BaseModel):
    sent: int
    seq: int | None
    queued: bool  # waits until the agent's running turn ends
    left: int  # open comments that did not fit in one message; send again for them
    comments: list[CommentPublic]


def _public(c: ReviewComment, flags: Mapping[str, bool]) -> CommentPublic:
    return CommentPublic.model_validate(
        {**c.model_dump(), "answered": flags.get(c.id) if c.status == "sent" else None}
    )


async def _where(state: AppState, session_id: str) -> Where:
    chat = store.get_session(state.engine, session_id)
    return await asyncio.to_thread(comments.diff_texts, state.engine, state.events, chat)


async def _listing(state: AppState, session_id: str) -> list[CommentPublic]:
    rows = comments.comments_of(state.engine, session_id)
    flags: dict[str, bool] = {}
    if any(c.status == "sent" for c in rows):
        where = await _where(state, session_id)
        flags = await asyncio.to_thread(comments.answered, rows, where)
    return [_public(c, flags) for c in rows]


# -- JSON API ----------------------------------------------------------------------------


@router.get("/api/sessions/{session_id}/comments", tags=["review"])
async def list_comments(session_id: str, state: StateDep) -> list[CommentPublic]:
    """The session's review comments, open and sent, file by file; a sent one says
    whether it was ``answered`` (its line or the lines around it changed since)."""
    store.get_session(state.engine, session_id)
    return await _listing(state, session_id)


@router.post("/api/sessions/{session_id}/comments", status_code=201, tags=["review"])
async def add_comment(session_id: str, body: CommentIn, state: StateDep) -> CommentPublic:
    """Comment on one line of the session's diff: ``side`` ``new`` is a line of the file
    as it is now, ``old`` a line the diff removed. 422 names the field that is wrong."""
    where = await _where(state, session_id)
    spot = await asyncio.to_thread(comments.locate, where, body.path, body.line, body.side)
    made = comments.add(
        state.engine,
        session_id,
        path=body.path,
        line=body.line,
        side=body.side,
        body=body.body,
        spot=spot,
    )
    return _public(made, {})


@router.delete("/api/sessions/{session_id}/comments/{comment_id}", status_code=204, tags=["review"])
async def delete_comment(session_id: str, comment_id: str, state: StateDep) -> None:
    """Delete a comment not sent yet (409 for a sent one: the agent was told)."""
    comments.delete(state.engine, session_id, comment_id)


@router.post("/api/sessions/{session_id}/comments/send", tags=["review"])
async def send_comments(session_id: str, state: StateDep) -> SentPublic:
    """Send the open comments to the agent as one message, each with its file:line and
    the line quoted; it waits like any message while the agent is busy. 409 when none
    is open."""
    sent = await _send(state, session_id)
    return SentPublic(
        sent=len(sent.comments),
        seq=sent.seq,
        queued=sent.queued,
        left=sent.left,
        comments=[_public(c, dict.fromkeys([c.id], False)) for c in sent.comments],
    )


async def _send(state: AppState, session_id: str) -> comments.Sent:
    store.get_session(state.engine, session_id)
    refuse_if_followed(state, session_id)
    return await comments.send(state.engine, state.events, state.manager, session_id)


# -- pages -------------------------------------------------------------------------------


@router.get("/sessions/{session_id}/comments", include_in_schema=False)
async def comments_fragment(session_id: str, request: Request, state: StateDep) -> HTMLResponse:
    """The list alone, which static/js/comments.js swaps in after a comment is written."""
    chat = store.get_session(state.engine, session_id)
    context = base_context(request, state) | {
        "session": chat,
        "review": _page_review(await _listing(state, session_id)),
    }
    return state.templates.TemplateResponse(request, "_review_comments.html", context)


@router.post("/sessions/{session_id}/comments/send", include_in_schema=False)
async def send_form(session_id: str, state: StateDep) -> RedirectResponse:
    """The Send button without scripts: the conversation shows the message go out."""
    await _send(state, session_id)
    return RedirectResponse(f"/sessions/{session_id}", status_code=303)


@router.post("/sessions/{session_id}/comments/{comment_id}/delete", include_in_schema=False)
async def delete_form(session_id: str, comment_id: str, state: StateDep) -> RedirectResponse:
    comments.delete(state.engine, session_id, comment_id)
    return RedirectResponse(f"/sessions/{session_id}/changes#review-comments", status_code=303)


def _page_review(listed: Sequence[CommentPublic]) -> dict[str, Any]:
    return {
        "comments": [c.model_dump() for c in listed],
        "open": sum(c.status == "open" for c in listed),
    }


def _diffs_of(files: object) -> dict[str, str] | None:
    """The page's own files as {path: diff} (None when it has none to give)."""
    if not isinstance(files, list):
        return None
    found: dict[str, str] = {}
    for f in files:
        path = f.get("path") if isinstance(f, Mapping) else getattr(f, "path", None)
        diff = f.get("diff") if isinstance(f, Mapping) else getattr(f, "diff", None)
        if isinstance(path, str):
            found[path] = diff if isinstance(diff, str) else ""
    return found


def _review_global(state: AppState) -> Callable[[str, object], dict[str, Any]]:
    def review_comments(session_id: str, files: object = None) -> dict[str, Any]:
        """The session's comments for the Changes page, answered ones marked."""
        rows = comments.comments_of(state.engine, session_id)
        flags: dict[str, bool] = {}
        if any(c.status == "sent" for c in rows):
            chat = store.get_session(state.engine, session_id)
            diffs = _diffs_of(files)
            if diffs is None:
                where = comments.diff_texts(state.engine, state.events, chat)
            else:
                where = (store.session_profile(state.engine, chat).cwd, diffs)
            flags = comments.answered(rows, where)
        return _page_review([_public(c, flags) for c in rows])

    return review_comments


def install(app: FastAPI) -> None:
    """Add the routes, and the list's data to the pages' templates."""
    app.include_router(router)
    state: AppState = app.state.angelia
    state.templates.env.globals["review_comments"] = _review_global(state)
