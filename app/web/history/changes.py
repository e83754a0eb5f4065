"""The session page's Changes tab: every file the session changed, with its diff, from the
source its folder allows (git worktree, snapshot, or the tools; see
``app.services.review.session_changes``)."""

from __future__ import annotations

import asyncio
from typing import Literal

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse

from app.services.review.session_changes import recorded_changes, session_changes
from app.services.sessions.closed import closed_of
from app.services.sessions.workspace import git_place_of
from app.services.store import store
from app.web.context import base_context
from app.web.deps import StateDep
from app.web.history.diffview import split_rows, unified_rows
from app.web.history.finish import panel

router = APIRouter(include_in_schema=False)


@router.get("/sessions/{session_id}/changes", response_class=HTMLResponse)
async def changes_page(
    request: Request,
    session_id: str,
    state: StateDep,
    view: Literal["unified", "split"] = "unified",
) -> HTMLResponse:
    chat = store.get_session(state.engine, session_id)
    profile = store.session_profile(state.engine, chat)
    closed = closed_of(chat)
    if closed is not None:
        # Its worktree and branch are gone: what they held as they went, never the checkout.
        found = recorded_changes(state.events, chat)
    else:
        place = await asyncio.to_thread(git_place_of, state.engine, chat)
        found = await asyncio.to_thread(session_changes, state.events, chat, profile.cwd, place)
    files = found.files
    context = base_context(request, state) | {
        "session": chat,
        "profile": profile,
        "view": view,
        "changes_tab": True,
        "closed": closed,
        "source": found.source,
        "base": found.base,
        "root": found.root,
        "note": found.note,
        "target": found.target,
        "merge_base": found.merge_base,
        "finish": await panel(state, chat),
        "files": [
            {
                **f.to_dict(),
                "rows": split_rows(f.diff) if view == "split" else [],
                "lines": unified_rows(f.diff) if view == "unified" else [],
            }
            for f in files
        ],
        "additions": sum(f.additions for f in files),
        "deletions": sum(f.deletions for f in files),
    }
    return state.templates.TemplateResponse(request, "session_changes.html", context)
