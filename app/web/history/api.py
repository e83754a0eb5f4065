"""Past sessions under /api: export one as a download, import exports and Claude Code's
own transcripts."""

from __future__ import annotations

import asyncio
from dataclasses import asdict
from pathlib import Path
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Query, Request, Response
from pydantic import BaseModel, ConfigDict
from starlette.datastructures import UploadFile

from app.errors import ValidationFailed
from app.nul import Input
from app.schemas import SessionPublic
from app.services.review import export_import, exporter
from app.services.review import session_changes as session_changes_service
from app.services.sessions.closed import closed_of
from app.services.sessions.workspace import git_place_of
from app.services.store import store
from app.services.transcripts import importer, terminal
from app.services.transcripts.importer import ClaudeImportReport
from app.web.bodylimits import load_json
from app.web.deps import StateDep

router = APIRouter(prefix="/api")

_MEDIA_TYPES = {"md": "text/markdown; charset=utf-8", "json": "application/json"}


class ClaudeImportIn(Input):
    model_config = ConfigDict(extra="forbid")

    # A projects dir, one project's dir, or one .jsonl; None = the configured default.
    path: str | None = None


class JsonImportOut(BaseModel):
    session: SessionPublic
    events_added: int
    # What the import changed or left out (bypass mode, command, env, MCP servers, ids).
    changes: list[export_import.Change]


@router.get(
    "/sessions/{session_id}/export",
    tags=["history"],
    response_class=Response,
    responses={200: {"content": {"text/markdown": {}, "application/json": {}}}},
)
async def export_session(
    session_id: str,
    state: StateDep,
    fmt: Annotated[Literal["md", "json"], Query(alias="format")] = "md",
) -> Response:
    """Download the session: ``md`` is a readable transcript, ``json`` is complete and can
    be imported again with ``POST /api/import/json``."""
    chat = store.get_session(state.engine, session_id)
    if fmt == "json":
        body = exporter.dumps(exporter.export_document(state.engine, state.events, session_id))
    else:
        body = exporter.export_markdown(state.engine, state.events, session_id)
    disposition = exporter.content_disposition(chat.title, chat.id, fmt)
    return Response(
        content=body.encode("utf-8"),
        media_type=_MEDIA_TYPES[fmt],
        headers={"Content-Disposition": disposition},
    )


# The body is read by hand (raw JSON or a form upload), so it is described here for /docs.
_EXPORT_BODY: dict[str, Any] = {
    "requestBody": {
        "required": True,
        "content": {
            "application/json": {"schema": {"type": "object"}},
            "multipart/form-data": {
                "schema": {
                    "type": "object",
                    "properties": {"file": {"type": "string", "format": "binary"}},
                    "required": ["file"],
                }
            },
        },
    }
}


@router.post("/import/json", status_code=201, tags=["history"], openapi_extra=_EXPORT_BODY)
async def import_json(request: Request, state: StateDep) -> JsonImportOut:
    """Import a JSON export as a new session. Send the file as the request body, or as
    the ``file`` field of a multipart form.

    It is checked like the API checks a new profile: 422 with the reason, and nothing
    stored, for a value the API would refuse. ``bypassPermissions`` comes in as
    ``default``, a new profile never takes the export's command, environment or MCP
    servers, and a malformed backend session id is dropped: ``changes`` lists each."""
    document = _parse_json(await _uploaded_bytes(request))
    result = await export_import.import_json_export(state.engine, state.events, document)
    return JsonImportOut(
        session=SessionPublic.model_validate(result.chat, from_attributes=True),
        events_added=state.events.last_seq(result.chat.id),
        changes=result.changes,
    )


@router.post("/import/claude", tags=["history"])
async def import_claude(state: StateDep, body: ClaudeImportIn | None = None) -> ClaudeImportReport:
    """Import Claude Code's transcripts; importing again adds only what is new."""
    if body is not None and body.path:
        try:
            path = Path(body.path).expanduser()
        except RuntimeError as exc:  # "~name" of a user this machine does not have
            raise ValidationFailed("path", str(exc)) from exc
        if not path.is_absolute():
            raise ValidationFailed("path", "must be an absolute path")
    else:
        path = importer.default_projects_dir(state.settings)
    return await importer.import_claude(state.engine, state.events, path)


async def _uploaded_bytes(request: Request) -> bytes:
    if request.headers.get("content-type", "").startswith("multipart/form-data"):
        form = await request.form()
        upload = form.get("file")
        if not isinstance(upload, UploadFile):
            raise ValidationFailed("file", "send the export as the form field 'file'")
        return await upload.read()
    return await request.body()


def _parse_json(raw: bytes) -> Any:
    if not raw.strip():
        raise ValidationFailed("file", "the request has no body; send an exported .json file")
    # A form's file is not a JSON body, so the middleware's caps are applied here.
    return load_json(raw, "file", export_import.parse_export)


class SessionChangesPublic(BaseModel):
    session_id: str
    cwd: str
    # git: the worktree since the merge base of its branch with ``target``; snapshot: the
    # folder since the session started; tools: what its tools wrote (outside git).
    source: session_changes_service.Source
    base: str | None
    root: str
    note: str | None
    files: list[session_changes_service.ChangedFile]
    target: str | None = None
    merge_base: bool = False


@router.get("/sessions/{session_id}/changes", tags=["history"], response_model=SessionChangesPublic)
async def session_changes(session_id: str, state: StateDep) -> dict[str, Any]:
    """Every file the session changed, with one diff per file, from the best source its
    folder allows (``source``).

    ``git``: a session in its own worktree; what merging it would bring into ``target``
    (the branch it started from), and its uncommitted work: everything between ``base``
    and the worktree now (commits, uncommitted and new files, shell commands' changes
    included). ``base`` is the merge base of its branch with ``target`` (``merge_base``
    true); where ``target`` is gone, the commit the worktree started from (``note`` says
    so). ``snapshot``: a session in a plain git folder;
    everything that differs from ``base``, the tree recorded when the session started;
    files the session's tools did not write are marked ``changed_outside`` (a shell
    command of the session or something else changed them). ``tools``: outside git, the
    files the session's tools wrote; shell commands' changes are not seen. Paths are
    relative to ``root``. A session whose worktree is gone (discarded, cleaned up) shows
    the changes recorded as it went, never the user's checkout; ``note`` says so."""
    chat = store.get_session(state.engine, session_id)
    if closed_of(chat) is not None:
        kept = session_changes_service.recorded_changes(state.events, chat)
        return {"session_id": session_id, "cwd": kept.root, **asdict(kept)}
    cwd = store.session_profile(state.engine, chat).cwd
    place = await asyncio.to_thread(git_place_of, state.engine, chat)
    found = await asyncio.to_thread(
        session_changes_service.session_changes, state.events, chat, cwd, place
    )
    return {"session_id": session_id, "cwd": cwd, **asdict(found)}


@router.get("/claude/live", tags=["history"], response_model=list[terminal.TerminalSession])
async def claude_live(
    state: StateDep, minutes: Annotated[int, Query(ge=1, le=10_080)] = 30
) -> list[terminal.TerminalSession]:
    """Claude Code sessions started in a terminal whose transcript was written in the last
    ``minutes``, newest first (sessions Angelia runs itself are left out)."""
    projects = importer.default_projects_dir(state.settings)
    return await asyncio.to_thread(
        terminal.recent_sessions,
        state.engine,
        state.events,
        projects,
        minutes=minutes,
        own_groups=state.manager.process_groups(),
    )


class ContinuedOut(BaseModel):
    session_id: str
    # Whether a following was ended; False when the session was not being followed.
    was_following: bool


@router.post("/sessions/{session_id}/continue-here", tags=["history"])
async def continue_here(session_id: str, state: StateDep) -> ContinuedOut:
    """Take over a session followed from its terminal, once that terminal's CLI has exited:
    the rest of its transcript is imported and messages can be sent from then on.
    409 while a ``claude`` still runs in the session's folder."""
    chat = store.get_session(state.engine, session_id)
    cwd = store.get_profile(state.engine, chat.profile_id).cwd
    was_following = await state.follower.take_over(chat.id, cwd)
    return ContinuedOut(session_id=session_id, was_following=was_following)
