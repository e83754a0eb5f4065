"""The session folder's files, for ``@`` mentions in the composer (static/js/mentions.js)."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Annotated

from fastapi import APIRouter, Query
from pydantic import BaseModel

from app.errors import ConflictError
from app.services.sessions import files, folder_files
from app.services.sessions.closed import refuse_if_closed
from app.services.sessions.workspace import git_place_of
from app.services.store import store
from app.web.deps import SessionIdDep, StateDep

router = APIRouter(prefix="/api")


class FilesPublic(BaseModel):
    """Paths relative to the session's folder, best match first."""

    files: list[str]
    # "git" (tracked plus untracked, not ignored) or "walk" (outside a repository).
    source: str
    # How many files the folder's list holds, and whether it was cut at its limit.
    total: int
    truncated: bool
    # The folder's first listing is still running: these are the files found so far.
    partial: bool = False


@router.get("/sessions/{session_id}/files", tags=["sessions"])
async def session_files(
    session_id: SessionIdDep,
    state: StateDep,
    q: Annotated[str, Query(max_length=200, description="Characters to find, in order")] = "",
    limit: Annotated[int, Query(ge=1, le=200)] = files.MAX_RESULTS,
) -> FilesPublic:
    """Files of the session's folder (its worktree if it has one) whose path holds the
    characters of ``q`` in order, file-name matches first. An empty ``q`` lists the files
    nearest the top of the folder. While the folder's first listing still runs (it starts
    with the session) the answer comes from the files found so far, with ``partial``.
    409 with the reason for a session whose worktree is gone (discarded, cleaned up)."""
    chat = store.get_session(state.engine, session_id)
    # A finished session's files are gone with its worktree; the folder left is the
    # user's own checkout, which is not the session's to offer.
    refuse_if_closed(chat, "listing its files for @-mentions")
    root = Path(store.session_profile(state.engine, chat).cwd)
    if not root.is_dir():
        raise ConflictError(f"The session's folder {root} does not exist any more.")
    # Refused (409) when the worktree's .git no longer points where the app made it.
    place = await asyncio.to_thread(git_place_of, state.engine, chat)
    found, listed = await folder_files.find(root, place, q, limit)
    return FilesPublic(
        files=found,
        source=listed.source,
        total=len(listed.paths),
        truncated=listed.truncated,
        partial=listed.partial,
    )
