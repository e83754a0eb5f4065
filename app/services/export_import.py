"""Import Angelia's own JSON session exports (``exporter``) as new sessions."""

from __future__ import annotations

import asyncio
from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, ValidationError
from sqlalchemy.engine import Engine
from sqlmodel import Session, col, select

from app.db.models import ChatSession, Profile, utcnow
from app.errors import ValidationFailed
from app.schemas import PermissionMode
from app.services.eventlog import EventLog
from app.services.exporter import FORMAT

# Fields the event log adds to every event it shows; the rest is the stored payload.
_ENVELOPE = ("seq", "session_id", "kind", "at")
# Yield to the event loop this often, so a large import does not stall live sessions.
_YIELD_EVERY = 200


class _SessionIn(BaseModel):
    model_config = ConfigDict(extra="ignore")

    backend: str
    backend_session_id: str | None = None
    title: str = ""
    cost_usd: float = 0.0
    input_tokens: int = 0
    output_tokens: int = 0
    turns: int = 0
    permission_mode: PermissionMode | None = None
    created_at: datetime | None = None
    updated_at: datetime | None = None


class _ProfileIn(BaseModel):
    model_config = ConfigDict(extra="ignore")

    name: str = "session"
    backend: str | None = None
    cwd: str
    model: str | None = None
    permission_mode: PermissionMode = "default"
    allowed_tools: list[str] = []
    disallowed_tools: list[str] = []
    permission_timeout_s: int = 600
    idle_timeout_s: int | None = None
    reasoning_effort: Literal["low", "medium", "high"] | None = None


class _EventIn(BaseModel):
    model_config = ConfigDict(extra="allow")

    seq: int
    kind: str


class _ExportIn(BaseModel):
    model_config = ConfigDict(extra="ignore")

    session: _SessionIn
    profile: _ProfileIn
    events: list[_EventIn]


async def import_json_export(engine: Engine, events: EventLog, document: Any) -> ChatSession:
    """Store an exported session as a new session; its events keep kind, payload and seq.

    The session goes to the oldest profile with the same backend and folder, else to a
    new profile "Imported · <name>" without the export's command, env and MCP servers
    (those were redacted or belong to another machine).

    Raises:
        ValidationFailed: the document is not an Angelia session export.
    """
    if isinstance(document, dict) and document.get("format", FORMAT) != FORMAT:
        raise ValidationFailed("file", f"unsupported export format {document.get('format')!r}")
    try:
        doc = _ExportIn.model_validate(document)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        raise ValidationFailed(
            "file", f"not an Angelia session export ({where}: {first['msg']})"
        ) from exc
    ordered = sorted(doc.events, key=lambda e: e.seq)
    if len({e.seq for e in ordered}) != len(ordered):
        raise ValidationFailed("file", "the export lists an event sequence number twice")
    chat = _create_from_export(engine, doc)
    for n, event in enumerate(ordered, start=1):
        payload = {k: v for k, v in (event.model_extra or {}).items() if k not in _ENVELOPE}
        events.append(chat.id, event.kind, payload)
        if n % _YIELD_EVERY == 0:
            await asyncio.sleep(0)
    await events.flush()
    return chat


def _create_from_export(engine: Engine, doc: _ExportIn) -> ChatSession:
    backend = doc.profile.backend or doc.session.backend
    with Session(engine) as db:
        profile = db.exec(
            select(Profile)
            .where(col(Profile.backend) == backend, col(Profile.cwd) == doc.profile.cwd)
            .order_by(col(Profile.created_at))
        ).first()
        if profile is None:
            data = doc.profile.model_dump(exclude={"name", "backend"})
            name = doc.profile.name
            name = name if name.startswith("Imported · ") else f"Imported · {name}"
            profile = Profile(name=name, backend=backend, **data)
            db.add(profile)
            db.flush()
        s = doc.session
        now = utcnow()
        chat = ChatSession(
            profile_id=profile.id,
            backend=s.backend,
            backend_session_id=s.backend_session_id,
            title=s.title,
            status="idle",
            cost_usd=s.cost_usd,
            input_tokens=s.input_tokens,
            output_tokens=s.output_tokens,
            turns=s.turns,
            permission_mode=s.permission_mode,
            created_at=s.created_at or now,
            updated_at=s.updated_at or now,
        )
        db.add(chat)
        db.commit()
        db.refresh(chat)
        return chat
