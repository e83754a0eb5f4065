"""Profiles and chat sessions: plain CRUD over SQLModel, keyword-only functions."""

from __future__ import annotations

from typing import Any

from sqlalchemy.engine import Engine
from sqlmodel import Session, col, select

from app.db.models import ChatSession, Event, PermissionRequest, Profile, utcnow
from app.errors import ConflictError, NotFoundError
from app.schemas import ProfileCreate, ProfileUpdate

TITLE_LENGTH = 80


def create_profile(engine: Engine, *, data: ProfileCreate) -> Profile:
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


def create_session(engine: Engine, *, profile_id: str, title: str | None) -> ChatSession:
    with Session(engine) as db:
        profile = db.get(Profile, profile_id)
        if profile is None:
            raise NotFoundError(f"Profile {profile_id} not found")
        chat = ChatSession(profile_id=profile.id, backend=profile.backend, title=title or "")
        db.add(chat)
        db.commit()
        db.refresh(chat)
        return chat


def list_sessions(engine: Engine, *, limit: int = 200) -> list[ChatSession]:
    with Session(engine) as db:
        stmt = select(ChatSession).order_by(col(ChatSession.updated_at).desc()).limit(limit)
        return list(db.exec(stmt))


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
        for model in (Event, PermissionRequest):
            for row in db.exec(select(model).where(col(model.session_id) == session_id)):
                db.delete(row)
        db.delete(chat)
        db.commit()


def title_from_message(text: str) -> str:
    line = " ".join(text.split())
    return line if len(line) <= TITLE_LENGTH else line[: TITLE_LENGTH - 1] + "…"
