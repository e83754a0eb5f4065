"""Import Angelia's own JSON session exports (``exporter``) as new sessions.

An export is a file from somewhere else, so it is checked the way the API checks what it
is sent (``import_checks``). What an export may not bring is changed on the way in and
listed in the result's ``changes``: ``bypassPermissions`` comes in as ``default``; a new
profile never gets the export's command, environment or MCP servers (they start
programs); a backend session id that is not of the backend's shape is dropped. Anything
else that is wrong refuses the whole file, and then nothing is stored.
"""

from __future__ import annotations

import asyncio
import json
import math
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy.engine import Engine
from sqlmodel import Session, col, select

from app.db.models import ChatSession, Profile, utcnow
from app.errors import ValidationFailed
from app.schemas import ProfileCreate
from app.services.review.import_checks import (
    Change,
    ExportIn,
    check_new_profile,
    check_session,
    new_profile,
    read_export,
)
from app.services.store.eventlog import EventLog

__all__ = ["Change", "ImportResult", "import_json_export", "parse_export"]

# Fields the event log adds to every event it shows; the rest is the stored payload.
_ENVELOPE = ("seq", "session_id", "kind", "at")
# Yield to the event loop this often, so a large import does not stall live sessions.
_YIELD_EVERY = 200
_PREFIX = "Imported · "


@dataclass
class ImportResult:
    """The new session and what was changed or left out on the way in."""

    chat: ChatSession
    changes: list[Change] = field(default_factory=list)


def parse_export(raw: bytes) -> Any:
    """The uploaded file as JSON; ValidationFailed says why it is not.

    Numbers SQLite's JSON functions could not hold are refused here, wherever they are:
    NaN and Infinity (Python reads them, JSON has no such thing), floats too large to be
    finite, integers beyond 64 bits."""
    try:
        return json.loads(raw, parse_constant=_no_constant, parse_float=_finite, parse_int=_int64)
    except RecursionError:
        raise ValidationFailed("file", "nested too deeply to be an Angelia export") from None
    except (UnicodeDecodeError, ValueError) as exc:
        raise ValidationFailed("file", f"not valid JSON ({exc})") from exc


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a number in JSON")


def _finite(text: str) -> float:
    number = float(text)
    if not math.isfinite(number):
        raise ValueError(f"{text[:40]} is too large a number")
    return number


def _int64(text: str) -> int:
    number = int(text)
    if not -(2**63) <= number < 2**63:
        raise ValueError(f"{text[:20]}… does not fit in 64 bits")
    return number


async def import_json_export(engine: Engine, events: EventLog, document: Any) -> ImportResult:
    """Store an exported session as a new session; its events keep kind, payload and seq.

    The session goes to the oldest profile with the same backend and folder, else to a
    new profile "Imported · <name>".

    Raises:
        ValidationFailed: the document is not an Angelia session export, or holds a value
            the API would refuse; nothing has been stored.
    """
    doc = read_export(document)
    changes: list[Change] = []
    data = new_profile(doc, changes)
    existing = _same_folder(engine, data)
    if existing is None:
        check_new_profile(data)
        changes += _left_out(doc.profile)
    else:
        # The session joins a profile of this machine: the export's profile is not used.
        changes.clear()
    changes += check_session(doc, data.backend)
    chat = _create(engine, doc, data, existing)
    ordered = sorted(doc.events, key=lambda e: e.seq)
    for n, event in enumerate(ordered, start=1):
        payload = {k: v for k, v in (event.model_extra or {}).items() if k not in _ENVELOPE}
        events.append(chat.id, event.kind, payload)
        if n % _YIELD_EVERY == 0:
            await asyncio.sleep(0)
    await events.flush()
    return ImportResult(chat=chat, changes=changes)


def _same_folder(engine: Engine, data: ProfileCreate) -> Profile | None:
    with Session(engine) as db:
        return db.exec(
            select(Profile)
            .where(col(Profile.backend) == data.backend, col(Profile.cwd) == data.cwd)
            .order_by(col(Profile.created_at))
        ).first()


# What a new profile never takes from an export, since each can start programs.
_LEFT_OUT = {
    "command": "The export's command ({}) was not kept: a command from a file is never "
    "run. Set one on the profile's page if you trust it.",
    "env": "The export's environment variables ({}) were not kept; their values were "
    "never in the file.",
    "mcp_servers": "The export's MCP servers ({}) were not kept: they start programs or "
    "reach other machines. Add them on the profile's page if you trust them.",
}


def _left_out(profile: dict[str, Any]) -> list[Change]:
    out: list[Change] = []
    for name, sentence in _LEFT_OUT.items():
        value = profile.get(name)
        if not value:
            continue
        # A command is an argv; env and MCP servers are tables, named by their keys.
        sep = ", " if isinstance(value, dict) else " "
        listed = sep.join(map(str, value)) if isinstance(value, dict | list) else str(value)
        out.append(Change(field=f"profile.{name}", message=sentence.format(_clip(listed))))
    return out


def _clip(text: str, limit: int = 200) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _create(
    engine: Engine, doc: ExportIn, data: ProfileCreate, profile: Profile | None
) -> ChatSession:
    """The profile (unless it exists) and the session, in one transaction."""
    with Session(engine) as db:
        if profile is None:
            name = data.name if data.name.startswith(_PREFIX) else f"{_PREFIX}{data.name}"
            profile = Profile(**(data.model_dump() | {"name": name[:200]}))
            db.add(profile)
            db.flush()
        s = doc.session
        now = utcnow()
        chat = ChatSession(
            profile_id=profile.id,
            backend=data.backend,
            backend_session_id=s.backend_session_id,
            title=s.title,
            status="idle",
            cost_usd=s.cost_usd,
            input_tokens=s.input_tokens,
            output_tokens=s.output_tokens,
            turns=s.turns,
            permission_mode=s.permission_mode,
            created_at=s.created_at or now,
            updated_at=s.updated_at or s.created_at or now,
        )
        db.add(chat)
        db.commit()
        db.refresh(chat)
        return chat
