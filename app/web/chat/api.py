"""The JSON API under /api (OpenAPI at /docs). Routes stay thin: services do the work."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any

from fastapi import APIRouter, Path, Query, Response

from app import __version__
from app.errors import ValidationFailed
from app.schemas import (
    Accepted,
    DecisionIn,
    InstructionsIn,
    MessageIn,
    ModeIn,
    ModelIn,
    ModelsPublic,
    PermissionPublic,
    ProfileCreate,
    ProfilePublic,
    ProfileUpdate,
    QueuedEdit,
    QueuedPublic,
    RewindIn,
    RewindPublic,
    RuleIn,
    RulePublic,
    SessionCreate,
    SessionPublic,
    SessionUpdate,
)
from app.services.permissions import rulebook
from app.services.permissions.permissions import permission_to_dict
from app.services.profiles import instructions
from app.services.review import lineage
from app.services.sessions import finish, workspace
from app.services.sessions.images import decode_image
from app.services.store import search, store
from app.web.deps import MAX_SEQ, StateDep, aware_utc
from app.web.history.terminal import refuse_if_followed
from app.web.security import link_proof

router = APIRouter(prefix="/api")
QueueSeq = Annotated[int, Path(ge=1, le=MAX_SEQ)]


@router.get("/health", tags=["meta"])
async def health(
    state: StateDep, challenge: Annotated[str | None, Query(max_length=64)] = None
) -> dict[str, Any]:
    """Liveness probe; needs no token. With ``challenge``, also ``proof`` that this is the
    server the asking page came from (a page that lost its server sends its cookie again
    only to one that answers it; see static/js/link.js)."""
    answer: dict[str, Any] = {"ok": True, "version": __version__}
    if challenge is not None:
        answer["proof"] = link_proof(state.token, challenge)
    return answer


@router.get("/backends", tags=["meta"])
async def list_backends(state: StateDep) -> list[dict[str, Any]]:
    """Every backend: executable found (on PATH, or by a profile's command), version,
    install hint, modes, capabilities, facts."""
    return await state.backends.describe_all(store.list_profiles(state.engine))


# -- profiles ---------------------------------------------------------------------
@router.post("/profiles", status_code=201, tags=["profiles"])
async def create_profile(body: ProfileCreate, state: StateDep) -> ProfilePublic:
    """Create a profile: a backend, a folder and the capabilities it may use."""
    profile = store.create_profile(state.engine, data=body)
    return ProfilePublic.model_validate(profile, from_attributes=True)


@router.get("/profiles", tags=["profiles"])
async def list_profiles(state: StateDep) -> list[ProfilePublic]:
    """All profiles, oldest first."""
    return [
        ProfilePublic.model_validate(p, from_attributes=True)
        for p in store.list_profiles(state.engine)
    ]


@router.get("/profiles/{profile_id}", tags=["profiles"])
async def get_profile(profile_id: str, state: StateDep) -> ProfilePublic:
    """One profile."""
    return ProfilePublic.model_validate(
        store.get_profile(state.engine, profile_id), from_attributes=True
    )


@router.patch("/profiles/{profile_id}", tags=["profiles"])
async def update_profile(profile_id: str, body: ProfileUpdate, state: StateDep) -> ProfilePublic:
    """Change some fields of a profile (validated like creation)."""
    profile = store.update_profile(state.engine, profile_id=profile_id, data=body)
    return ProfilePublic.model_validate(profile, from_attributes=True)


@router.delete("/profiles/{profile_id}", status_code=204, tags=["profiles"])
async def delete_profile(profile_id: str, state: StateDep) -> None:
    """Delete a profile that has no sessions."""
    store.delete_profile(state.engine, profile_id)


@router.get("/profiles/{profile_id}/instructions", tags=["profiles"])
async def get_instructions(profile_id: str, state: StateDep) -> dict[str, Any]:
    """The instructions file the profile's backend reads, and a template for it."""
    return instructions.describe(store.get_profile(state.engine, profile_id))


@router.post("/profiles/{profile_id}/instructions", status_code=201, tags=["profiles"])
async def write_instructions(
    profile_id: str, body: InstructionsIn, state: StateDep
) -> dict[str, Any]:
    """Write the instructions file; 409 if it exists and ``overwrite`` is not set."""
    profile = store.get_profile(state.engine, profile_id)
    return instructions.write(profile, body.content, overwrite=body.overwrite)


# -- sessions ---------------------------------------------------------------------
@router.post("/sessions", status_code=201, tags=["sessions"])
async def create_session(body: SessionCreate, state: StateDep) -> SessionPublic:
    """Create a chat session for a profile; its backend starts on the first message.

    With ``"worktree": true`` (or a profile whose ``worktree_default`` is on) the session
    gets a git worktree of its own, on a new branch ``angelia/<slug>`` made from ``base``
    (default: the folder's current branch), and its agent runs there; a folder that is
    not a git repository answers 422 with the reason."""
    chat = await workspace.create_session(
        state.engine,
        state.settings.data_dir,
        profile_id=body.profile_id,
        title=body.title,
        worktree=body.worktree,
        base=body.base,
    )
    return SessionPublic.model_validate(chat, from_attributes=True)


@router.get("/sessions", tags=["sessions"])
async def list_sessions(
    state: StateDep,
    response: Response,
    profile_id: str | None = None,
    backend: str | None = None,
    status: str | None = None,
    since: datetime | None = None,
    until: datetime | None = None,
    cursor: str | None = None,
    limit: Annotated[int, Query(ge=1, le=1000)] = 100,
) -> list[SessionPublic]:
    """Sessions, most recently active first; the next page's cursor is in ``X-Next-Cursor``."""
    rows, next_cursor = store.list_sessions(
        state.engine,
        limit=limit,
        profile_id=profile_id,
        backend=backend,
        status=status,
        since=aware_utc(since, "since"),
        until=aware_utc(until, "until"),
        cursor=cursor,
    )
    if next_cursor:
        response.headers["X-Next-Cursor"] = next_cursor
    return [SessionPublic.model_validate(c, from_attributes=True) for c in rows]


@router.get("/sessions/{session_id}", tags=["sessions"])
async def get_session(session_id: str, state: StateDep) -> SessionPublic:
    """One session with its totals and status."""
    return SessionPublic.model_validate(
        store.get_session(state.engine, session_id), from_attributes=True
    )


@router.patch("/sessions/{session_id}", tags=["sessions"])
async def rename_session(session_id: str, body: SessionUpdate, state: StateDep) -> SessionPublic:
    """Rename a session."""
    chat = store.update_session(state.engine, session_id, title=body.title)
    return SessionPublic.model_validate(chat, from_attributes=True)


@router.delete("/sessions/{session_id}", status_code=204, tags=["sessions"])
async def delete_session(session_id: str, state: StateDep, discard: bool = False) -> None:
    """Delete a session with its events, permission requests and search rows; with
    ``?discard=true`` its worktree folder and branch go too, whatever they hold."""
    # Nothing may import into the session while or after it is deleted.
    await state.follower.stop(session_id, finish=False)
    if discard:
        await finish.discard_with_session(state.engine, state.manager, state.settings, session_id)
    await state.manager.delete_session(session_id)


@router.post("/sessions/{session_id}/fork", status_code=201, tags=["sessions"])
async def fork_session(session_id: str, state: StateDep) -> SessionPublic:
    """A new session that forks this one's conversation (Claude: ``--fork-session``)."""
    chat = await lineage.fork_session(
        state.engine, state.events, state.settings.data_dir, session_id
    )
    return SessionPublic.model_validate(chat, from_attributes=True)


@router.post("/sessions/{session_id}/continue", status_code=201, tags=["sessions"])
async def continue_session(session_id: str, state: StateDep) -> SessionPublic:
    """A fresh session linked to this one, for when it cannot be resumed."""
    chat = await lineage.continue_session(
        state.engine, state.events, state.settings.data_dir, session_id
    )
    return SessionPublic.model_validate(chat, from_attributes=True)


@router.get("/search", tags=["sessions"])
async def search_events(
    state: StateDep,
    q: Annotated[str, Query(min_length=1, max_length=500)],
    session_id: str | None = None,
    limit: Annotated[int, Query(ge=1, le=500)] = 50,
) -> list[dict[str, Any]]:
    """Full-text search over user and assistant text, tool inputs and outputs."""
    return search.search(state.engine, q, limit=limit, session_id=session_id)


@router.post("/sessions/{session_id}/messages", status_code=202, tags=["sessions"])
async def send_message(session_id: str, body: MessageIn, state: StateDep) -> Accepted:
    """Send a user message, with up to 10 images; the answer arrives as events.

    A message sent while the agent is busy waits (``queued: true``) and can still be
    edited or dropped through ``/queue``.
    """
    store.get_session(state.engine, session_id)
    refuse_if_followed(state, session_id)
    images = [decode_image(i, img.media_type, img.data) for i, img in enumerate(body.images)]
    queued = await state.manager.send_message(session_id, body.text, images)
    return Accepted(queued=queued)


@router.get("/sessions/{session_id}/images/{image_id}", tags=["sessions"])
async def get_image(session_id: str, image_id: str, state: StateDep) -> Response:
    """An image attached to one of the session's messages."""
    data, media_type = state.manager.images.load(session_id, image_id)
    # Content-addressed, so it never changes; the security headers still apply.
    return Response(
        data, media_type=media_type, headers={"cache-control": "private, max-age=86400"}
    )


@router.post("/sessions/{session_id}/rewind", tags=["sessions"])
async def rewind(session_id: str, body: RewindIn, state: StateDep) -> RewindPublic:
    """Restore the files to before the message at ``event_seq``; ``dry_run`` only lists
    them. 409 with the reason when the backend cannot rewind (or is busy)."""
    if body.event_seq > MAX_SEQ:
        raise ValidationFailed("event_seq", f"must be at most {MAX_SEQ}")
    result = await state.manager.controls.rewind(session_id, body.event_seq, dry_run=body.dry_run)
    return RewindPublic.model_validate(result)


@router.get("/sessions/{session_id}/queue", tags=["sessions"])
async def list_queue(session_id: str, state: StateDep) -> list[QueuedPublic]:
    """Messages waiting until the running turn ends (or an approval is answered)."""
    store.get_session(state.engine, session_id)
    return [
        QueuedPublic(seq=q.seq, text=q.text, reason=q.reason)
        for q in state.manager.outbox.items(session_id)
    ]


@router.patch("/sessions/{session_id}/queue/{seq}", tags=["sessions"])
async def edit_queued(
    session_id: str, seq: QueueSeq, body: QueuedEdit, state: StateDep
) -> Accepted:
    """Change a waiting message before it goes; 409 once it was sent or dropped."""
    state.manager.edit_queued(session_id, seq, body.text)
    return Accepted(queued=True)


@router.delete("/sessions/{session_id}/queue/{seq}", status_code=204, tags=["sessions"])
async def drop_queued(session_id: str, seq: QueueSeq, state: StateDep) -> None:
    """Drop a waiting message; 409 once it was sent or dropped."""
    state.manager.drop_queued(session_id, seq)


@router.post("/sessions/{session_id}/interrupt", status_code=202, tags=["sessions"])
async def interrupt(session_id: str, state: StateDep) -> Accepted:
    """Stop the current turn; pending permission requests are cancelled."""
    await state.manager.interrupt(session_id)
    return Accepted()


@router.post("/sessions/{session_id}/mode", tags=["sessions"])
async def set_mode(session_id: str, body: ModeIn, state: StateDep) -> SessionPublic:
    """Switch the permission mode mid-session (bypassPermissions needs ``confirm: true``)."""
    await state.manager.controls.set_mode(session_id, body.mode, confirm=body.confirm)
    return SessionPublic.model_validate(
        store.get_session(state.engine, session_id), from_attributes=True
    )


@router.get("/sessions/{session_id}/models", tags=["sessions"])
async def list_models(session_id: str, state: StateDep) -> ModelsPublic:
    """The models the session can switch to (as the backend last reported them)."""
    return ModelsPublic.model_validate(state.manager.controls.models(session_id))


@router.post("/sessions/{session_id}/model", tags=["sessions"])
async def set_model(session_id: str, body: ModelIn, state: StateDep) -> SessionPublic:
    """Switch the model from the next request on; 409 if the backend cannot."""
    await state.manager.controls.set_model(session_id, body.model)
    return SessionPublic.model_validate(
        store.get_session(state.engine, session_id), from_attributes=True
    )


# -- permissions ------------------------------------------------------------------
@router.get("/permissions", tags=["permissions"])
async def list_permissions(
    state: StateDep,
    status: str | None = None,
    session_id: str | None = None,
    profile_id: str | None = None,
    tool: str | None = None,
    decision: str | None = None,
    source: str | None = None,
    since: datetime | None = None,
    until: datetime | None = None,
    limit: Annotated[int, Query(ge=1, le=5000)] = 500,
) -> list[PermissionPublic]:
    """The audit log: permission requests, newest first, with filters."""
    rows = state.manager.permissions.find(
        status=status,
        session_id=session_id,
        profile_id=profile_id,
        tool=tool,
        decision=decision,
        source=source,
        since=aware_utc(since, "since"),
        until=aware_utc(until, "until"),
        limit=limit,
    )
    return [PermissionPublic.model_validate(permission_to_dict(r)) for r in rows]


@router.post("/permissions/{permission_id}/decision", tags=["permissions"])
async def decide(permission_id: str, body: DecisionIn, state: StateDep) -> PermissionPublic:
    """Answer a pending request; a second answer gets 409."""
    row = await state.manager.controls.decide(
        permission_id, body.decision, body.message, answers=body.answers, mode=body.mode
    )
    return PermissionPublic.model_validate(row)


# -- rules ------------------------------------------------------------------------
@router.get("/profiles/{profile_id}/rules", tags=["rules"])
async def list_rules(profile_id: str, state: StateDep) -> list[RulePublic]:
    """The profile's remembered permission rules."""
    return [
        RulePublic.model_validate(r, from_attributes=True)
        for r in rulebook.list_rules(state.engine, profile_id)
    ]


@router.post("/profiles/{profile_id}/rules", status_code=201, tags=["rules"])
async def add_rule(profile_id: str, body: RuleIn, state: StateDep) -> RulePublic:
    """Add a rule in Claude Code's syntax, e.g. ``Bash(git add:*)``; deny beats allow."""
    row = rulebook.add_rule(
        state.engine, profile_id=profile_id, rule=body.rule, decision=body.decision
    )
    return RulePublic.model_validate(row, from_attributes=True)


@router.put("/profiles/{profile_id}/rules/{rule_id}", tags=["rules"])
async def update_rule(profile_id: str, rule_id: str, body: RuleIn, state: StateDep) -> RulePublic:
    """Change a rule."""
    row = rulebook.update_rule(
        state.engine, profile_id=profile_id, rule_id=rule_id, rule=body.rule, decision=body.decision
    )
    return RulePublic.model_validate(row, from_attributes=True)


@router.delete("/profiles/{profile_id}/rules/{rule_id}", status_code=204, tags=["rules"])
async def delete_rule(profile_id: str, rule_id: str, state: StateDep) -> None:
    """Delete a rule."""
    rulebook.delete_rule(state.engine, profile_id=profile_id, rule_id=rule_id)
