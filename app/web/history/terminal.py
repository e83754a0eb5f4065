"""A terminal session's page: followed live while its CLI writes, continued here after.

The page of a session imported from a Claude Code transcript that was written lately
follows the file (``app.services.transcripts.follow``) and is read-only meanwhile: a message from
here would make a second CLI write the same session. "Continue here" ends the following
once the terminal's CLI has exited, and from then on the session is the app's own.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

from fastapi import APIRouter
from fastapi.responses import RedirectResponse, Response

from app.db.models import ChatSession
from app.errors import ConflictError
from app.services.store import store
from app.services.transcripts import importer, terminal
from app.services.transcripts.follow import find_transcript
from app.services.transcripts.importer import FileReport
from app.web.deps import AppState, StateDep

router = APIRouter(include_in_schema=False)

# A transcript written this recently may still be growing: its page follows it.
RECENT_S = 60 * 60


def refuse_if_followed(state: AppState, session_id: str) -> None:
    """Messages wait until the terminal's CLI has let go of the session.

    Raises:
        ConflictError: the session is being followed from its terminal.
    """
    if state.follower.is_following(session_id):
        raise ConflictError(
            "This session is running in a terminal and is only followed here. Quit claude "
            f"there, then press Continue here (POST /api/sessions/{session_id}/continue-here) "
            "to send messages from here."
        )


def _may_grow(state: AppState, path: Path, cwd: str) -> bool:
    """Written lately, or a claude still runs in its folder: the CLI may add to it."""
    try:
        recent = time.time() - path.stat().st_mtime < RECENT_S
    except OSError:
        return False
    return recent or bool(cwd and state.follower.cli_running(cwd))


async def follow_state(state: AppState, chat: ChatSession, cwd: str) -> dict[str, Any]:
    """Start following the session's transcript if it may still grow; what the page shows."""
    if chat.backend != "claude" or not chat.backend_session_id:
        return {"following": False}
    if not state.follower.is_following(chat.id):
        if not terminal.is_imported(state.events, chat.id):
            return {"following": False}
        projects = importer.default_projects_dir(state.settings)
        path = find_transcript(projects, chat.backend_session_id)
        if path is None or not _may_grow(state, path, cwd):
            return {"following": False}
        await state.follower.follow(path)
    following = state.follower.is_following(chat.id)
    return {
        "following": following,
        "terminal_running": state.follower.cli_running(cwd) if following else None,
    }


async def open_transcript(state: AppState, path: Path) -> FileReport:
    """Import a terminal session; one the CLI may still add to is followed from now on,
    so the turn it is in the middle of is not closed early."""
    if _may_grow(state, path, terminal.transcript_cwd(path)):
        return await state.follower.follow(path)
    return (await importer.import_claude(state.engine, state.events, path)).files[0]


@router.post("/sessions/{session_id}/continue-here", response_model=None)
async def continue_here(session_id: str, state: StateDep) -> Response:
    """Stop following the terminal session and take it over, once its CLI has exited."""
    chat = store.get_session(state.engine, session_id)
    cwd = store.get_profile(state.engine, chat.profile_id).cwd
    try:
        await state.follower.take_over(chat.id, cwd)
    except ConflictError as exc:
        query = urlencode({"continue_error": exc.message})
        return RedirectResponse(f"/sessions/{session_id}?{query}#follow-banner", status_code=303)
    return RedirectResponse(f"/sessions/{session_id}", status_code=303)
