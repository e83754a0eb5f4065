"""Profiles and chat sessions: plain CRUD over SQLModel, keyword-only functions."""

from __future__ import annotations

import base64
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import and_, delete, or_
from sqlalchemy.engine import Engine
from sqlmodel import Session, col, select

from app.brains import check_profile, get_brain_class
from app.db.models import ChatSession, Event, PermissionRequest, Profile, new_id, utcnow
from app.errors import ConflictError, NotFoundError, ValidationFailed
from app.schemas import ProfileCreate, ProfileUpdate, validate_rule
from app.services.store.search import delete_session_index

TITLE_LENGTH = 80


def unenforceable_deny(backend: str, rule: str, *, in_profile: bool = False) -> str | None:
    """Why a deny ``rule`` could never apply to ``backend`` (None: it can); ``in_profile``:
    the rule is in the profile's deny list rather than stored on its own."""
    cls = get_brain_class(backend)
    try:
        # The tool is all before any "(" of a valid rule; rules.Rule is a layer above.
        tool = validate_rule(rule).split("(", 1)[0]
    except ValueError:
        return None
    return cls.deny_refusal(rule, tool, in_profile=in_profile)


def enforcement_problems(
    backend: str,
    *,
    mcp_servers: dict[str, Any],
    allowed_tools: list[str],
    disallowed_tools: list[str],
    command: list[str] | None,
    permission_mode: str = "default",
    reasoning_effort: str | None = None,
) -> dict[str, str]:
    """What a profile asks for that its backend cannot enforce, by field (empty: nothing)."""
    asked = {
        "mcp_servers": ("has_mcp_servers", bool(mcp_servers)),
        "disallowed_tools": ("has_disallowed_tools", bool(disallowed_tools)),
        "allowed_tools": ("has_allowed_tools", bool(allowed_tools)),
    }
    problems: dict[str, str] = {}
    for field, (flag, wanted) in asked.items():
        if not wanted:
            continue
        # One flag at a time, so each message lands on the field that asked for it.
        flags = {other: other == flag for other, _ in asked.values()}
        found = check_profile(backend, **flags)
        if found:
            problems[field] = " ".join(found)
    if "disallowed_tools" not in problems:
        found = [
            why
            for t in disallowed_tools
            if (why := unenforceable_deny(backend, t, in_profile=True))
        ]
        if found:
            problems["disallowed_tools"] = found[0]
    brain_cls = get_brain_class(backend)
    if permission_mode not in brain_cls.permission_modes:
        problems["permission_mode"] = (
            f"{brain_cls.label} has no {permission_mode!r} mode; its modes: "
            f"{', '.join(brain_cls.permission_modes)}"
        )
    if reasoning_effort and brain_cls.effort_limit:
        problems["reasoning_effort"] = (
            f"{brain_cls.label} cannot take a reasoning effort: {brain_cls.effort_limit}"
        )
    if not brain_cls.executable and not command:
        problems["command"] = f"{brain_cls.label} has no command of its own: enter the one to run"
    return problems


def check_enforceable(
    backend: str,
    *,
    mcp_servers: dict[str, Any],
    allowed_tools: list[str],
    disallowed_tools: list[str],
    command: list[str] | None,
    permission_mode: str = "default",
    reasoning_effort: str | None = None,
) -> None:
    """Refuse a profile that asks for something its backend cannot enforce."""
    problems = enforcement_problems(
        backend,
        mcp_servers=mcp_servers,
        allowed_tools=allowed_tools,
        disallowed_tools=disallowed_tools,
        command=command,
        permission_mode=permission_mode,
        reasoning_effort=reasoning_effort,
    )
    for field, message in problems.items():
        raise ValidationFailed(field, message)


def create_profile(engine: Engine, *, data: ProfileCreate) -> Profile:
    check_enforceable(
        data.backend,
        mcp_servers=data.mcp_servers,
        allowed_tools=data.allowed_tools,
        disallowed_tools=data.disallowed_tools,
        command=data.command,
        permission_mode=data.permission_mode,
        reasoning_effort=data.reasoning_effort,
    )
    with Session(engine) as db:
        profile = Profile(**data.model_dump())
        db.add(profile)
        db.commit()
        db.refresh(profile)
        return profile


def list_profiles(engine: Engine) -> list[Profile]:
    with Session(engine) as db:
        return list(db.exec(select(Profile).order_by(col(Profile.created_at))))


def get_profile(engine: Engine, profile_id: str) -> Profile:
    with Session(engine) as db:
        profile = db.get(Profile, profile_id)
        if profile is None:
            raise NotFoundError(f"Profile {profile_id} not found")
        return profile


def update_profile(engine: Engine, *, profile_id: str, data: ProfileUpdate) -> Profile:
    with Session(engine) as db:
        profile = db.get(Profile, profile_id)
        if profile is None:
            raise NotFoundError(f"Profile {profile_id} not found")
        for key, value in data.model_dump(exclude_unset=True).items():
            setattr(profile, key, value)
        check_enforceable(
            profile.backend,
            mcp_servers=profile.mcp_servers,
            allowed_tools=profile.allowed_tools,
            disallowed_tools=profile.disallowed_tools,
            command=profile.command,
            permission_mode=profile.permission_mode,
            reasoning_effort=profile.reasoning_effort,
        )
        profile.updated_at = utcnow()
        db.add(profile)
        db.commit()
        db.refresh(profile)
        return profile


def delete_profile(engine: Engine, profile_id: str) -> None:
    with Session(engine) as db:
        profile = db.get(Profile, profile_id)
        if profile is None:
            raise NotFoundError(f"Profile {profile_id} not found")
        used = db.exec(select(ChatSession).where(col(ChatSession.profile_id) == profile_id)).first()
        if used is not None:
            raise ConflictError(
                "This profile has sessions; delete its sessions first so no history is lost."
            )
        db.delete(profile)
        db.commit()


def session_profile(engine: Engine, chat: ChatSession) -> Profile:
    """The session's profile as the session uses it: a session in a worktree of its own
    works there, so its agent, folder rules and every path shown are the worktree's."""
    profile = get_profile(engine, chat.profile_id)
    if not chat.worktree_path:
        return profile
    return profile.model_copy(update={"cwd": chat.worktree_path})


def create_session(
    engine: Engine,
    *,
    profile_id: str,
    title: str | None,
    session_id: str | None = None,
    workspace: Mapping[str, str | None] | None = None,
) -> ChatSession:
    """Store a new session; ``workspace`` holds its worktree or snapshot columns."""
    with Session(engine) as db:
        profile = db.get(Profile, profile_id)
        if profile is None:
            raise NotFoundError(f"Profile {profile_id} not found")
        chat = ChatSession(
            id=session_id or new_id(),
            profile_id=profile.id,
            backend=profile.backend,
            title=title or "",
        )
        for column, value in (workspace or {}).items():
            setattr(chat, column, value)
        db.add(chat)
        db.commit()
        db.refresh(chat)
        return chat


def list_sessions(
    engine: Engine,
    *,
    limit: int = 200,
    profile_id: str | None = None,
    backend: str | None = None,
    status: str | None = None,
    since: datetime | None = None,
    until: datetime | None = None,
    cursor: str | None = None,
) -> tuple[list[ChatSession], str | None]:
    """Sessions, most recently active first, and the cursor of the next page (or None).

    The cursor is the (updated_at, id) of the last row, so paging stays cheap and
    stable however many sessions there are.
    """
    with Session(engine) as db:
        stmt = select(ChatSession)
        if profile_id:
            stmt = stmt.where(col(ChatSession.profile_id) == profile_id)
        if backend:
            stmt = stmt.where(col(ChatSession.backend) == backend)
        if status:
            stmt = stmt.where(col(ChatSession.status) == status)
        if since is not None:
            stmt = stmt.where(col(ChatSession.updated_at) >= since)
        if until is not None:
            stmt = stmt.where(col(ChatSession.updated_at) <= until)
        if cursor:
            at, last_id = _decode_cursor(cursor)
            stmt = stmt.where(
                or_(
                    col(ChatSession.updated_at) < at,
                    and_(col(ChatSession.updated_at) == at, col(ChatSession.id) < last_id),
                )
            )
        stmt = stmt.order_by(col(ChatSession.updated_at).desc(), col(ChatSession.id).desc())
        rows = list(db.exec(stmt.limit(limit + 1)))
    more = len(rows) > limit
    rows = rows[:limit]
    return rows, (_encode_cursor(rows[-1]) if more and rows else None)


def _encode_cursor(chat: ChatSession) -> str:
    raw = f"{chat.updated_at.isoformat()}|{chat.id}"
    return base64.urlsafe_b64encode(raw.encode()).decode().rstrip("=")


def _decode_cursor(cursor: str) -> tuple[datetime, str]:
    try:
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)).decode()
        at, last_id = raw.split("|", 1)
        parsed = datetime.fromisoformat(at)
    except (ValueError, UnicodeDecodeError) as exc:
        raise ValidationFailed("cursor", "is not a cursor this server gave out") from exc
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC), last_id


def get_session(engine: Engine, session_id: str) -> ChatSession:
    with Session(engine) as db:
        chat = db.get(ChatSession, session_id)
        if chat is None:
            raise NotFoundError(f"Session {session_id} not found")
        return chat


def update_session(engine: Engine, session_id: str, **fields: Any) -> ChatSession:
    with Session(engine) as db:
        chat = db.get(ChatSession, session_id)
        if chat is None:
            raise NotFoundError(f"Session {session_id} not found")
        for key, value in fields.items():
            setattr(chat, key, value)
        chat.updated_at = utcnow()
        db.add(chat)
        db.commit()
        db.refresh(chat)
        return chat


def delete_session(engine: Engine, session_id: str) -> None:
    with Session(engine) as db:
        chat = db.get(ChatSession, session_id)
        if chat is None:
            raise NotFoundError(f"Session {session_id} not found")
        # Bulk deletes: a long session has many thousands of events.
        conn = db.connection()
        delete_session_index(conn, session_id)
        for model in (Event, PermissionRequest):
            conn.execute(delete(model).where(col(model.session_id) == session_id))
        db.delete(chat)
        db.commit()


def title_from_message(text: str) -> str:
    line = " ".join(text.split())
    return line if len(line) <= TITLE_LENGTH else line[: TITLE_LENGTH - 1] + "…"
