"""Import sessions: Claude Code's own transcripts, and Angelia's JSON exports.

Each Claude ``<slug>/<session-id>.jsonl`` becomes one chat session (backend ``claude``,
``backend_session_id`` = the file's session id, so a message resumes it). Every stored
event carries ``imported: true`` and the entry's ``uuid``: importing again adds only
entries that are new, at the end, and an imported session outlives its file.
"""

from __future__ import annotations

import asyncio
import os
from datetime import datetime
from pathlib import Path
from typing import Any, Literal
from weakref import WeakKeyDictionary

from pydantic import BaseModel, ConfigDict, ValidationError
from sqlalchemy.engine import Engine
from sqlmodel import Session, col, select

from app.db.models import ChatSession, Event, Profile, utcnow
from app.errors import ValidationFailed
from app.schemas import PermissionMode
from app.services.claude_transcripts import (
    EventBuilder,
    Transcript,
    conversation,
    parse_time,
    read_transcript,
    title_for,
)
from app.services.eventlog import EventLog
from app.services.exporter import FORMAT
from app.settings import Settings

# Fields the event log adds to every event it shows; the rest is the stored payload.
_ENVELOPE = ("seq", "session_id", "kind", "at")
# Yield to the event loop this often, so a large import does not stall live sessions.
_YIELD_EVERY = 200
# One import at a time per event log: two interleaved imports of one file would both
# see its new entries as missing and store them twice.
_locks: WeakKeyDictionary[EventLog, asyncio.Lock] = WeakKeyDictionary()


class FileReport(BaseModel):
    path: str
    backend_session_id: str
    status: Literal["created", "updated", "unchanged", "skipped"]
    reason: str = ""
    chat_session_id: str | None = None
    title: str = ""
    cwd: str = ""
    events_added: int = 0
    lines: int = 0
    lines_imported: int = 0
    lines_skipped: int = 0
    malformed_lines: int = 0


class ClaudeImportReport(BaseModel):
    sessions_created: int = 0
    sessions_updated: int = 0
    events_added: int = 0
    lines_skipped: int = 0
    malformed_lines: int = 0
    files: list[FileReport] = []


def default_projects_dir(settings: Settings) -> Path:
    """The setting, else where the CLI writes: ``${CLAUDE_CONFIG_DIR:-~/.claude}/projects``."""
    if settings.claude_projects_dir is not None:
        return settings.claude_projects_dir.expanduser()
    config = os.environ.get("CLAUDE_CONFIG_DIR") or str(Path.home() / ".claude")
    return Path(config).expanduser() / "projects"


def find_transcripts(path: Path) -> list[Path]:
    """Session files under a projects dir or one project's dir, or the file given."""
    if path.is_file():
        if path.suffix != ".jsonl":
            raise ValidationFailed("path", f"{path} is not a .jsonl transcript")
        return [path]
    if not path.is_dir():
        raise ValidationFailed("path", f"{path} does not exist")
    # Subagent transcripts live deeper (<session>/subagents/**/agent-*.jsonl) and are
    # not conversations of their own.
    found = [*path.glob("*.jsonl"), *path.glob("*/*.jsonl")]
    return sorted(p for p in found if p.is_file() and not p.name.startswith("agent-"))


async def import_claude(engine: Engine, events: EventLog, path: Path) -> ClaudeImportReport:
    """Import every transcript under ``path``; bad lines and unreadable files are counted.

    Raises:
        ValidationFailed: ``path`` does not exist or is not a transcript.
    """
    files = find_transcripts(path)
    report = ClaudeImportReport()
    async with _locks.setdefault(events, asyncio.Lock()):
        for file in files:
            try:
                item = await _import_file(engine, events, file)
            except OSError as exc:
                item = FileReport(
                    path=str(file),
                    backend_session_id=file.stem,
                    status="skipped",
                    reason=f"cannot read it: {exc.strerror or exc}",
                )
            report.files.append(item)
            report.sessions_created += item.status == "created"
            report.sessions_updated += item.status == "updated"
            report.events_added += item.events_added
            report.lines_skipped += item.lines_skipped
            report.malformed_lines += item.malformed_lines
            await asyncio.sleep(0)
    return report


async def _import_file(engine: Engine, events: EventLog, path: Path) -> FileReport:
    transcript = read_transcript(path)
    thread = conversation(transcript)
    title = title_for(transcript, thread)
    report = FileReport(
        path=str(path),
        backend_session_id=transcript.session_id,
        status="unchanged",
        title=title,
        cwd=transcript.cwd,
        lines=transcript.lines,
        malformed_lines=transcript.malformed,
    )
    valid = transcript.lines - transcript.malformed
    chat, done, reason = _existing(engine, transcript.session_id)
    if reason:
        return _skip(report, valid, reason, chat)
    builder = EventBuilder()
    already = 0
    for entry in thread:
        if entry["uuid"] in done:
            already += 1
        elif builder.add(entry):
            report.lines_imported += 1
    builder.close()
    report.lines_skipped = valid - report.lines_imported - already
    if chat is None and not builder.out:
        return _skip(report, valid, "no conversation in this file", None)
    if chat is None and not transcript.cwd:
        return _skip(report, valid, "the transcript names no working folder", None)
    stamps = [e["timestamp"] for e in thread if isinstance(e.get("timestamp"), str)]
    if chat is None:
        chat = _create_session(engine, transcript, title, stamps[0] if stamps else "")
        report.status = "created"
    elif builder.out:
        report.status = "updated"
    report.chat_session_id = chat.id
    for n, (kind, payload) in enumerate(builder.out, start=1):
        events.append(chat.id, kind, payload)
        if n % _YIELD_EVERY == 0:
            await asyncio.sleep(0)
    # Stored before the next file is checked against what is already imported.
    await events.flush()
    report.events_added = len(builder.out)
    if builder.out:
        _add_totals(engine, chat.id, builder, stamps[-1] if stamps else "")
    return report


def _skip(report: FileReport, valid: int, reason: str, chat: ChatSession | None) -> FileReport:
    report.status, report.reason = "skipped", reason
    report.lines_imported, report.lines_skipped = 0, valid
    report.chat_session_id = chat.id if chat is not None else None
    return report


def _existing(engine: Engine, backend_id: str) -> tuple[ChatSession | None, set[str], str]:
    """The session this file went into and the entry uuids it holds, or why not to touch it."""
    with Session(engine) as db:
        chats = db.exec(
            select(ChatSession)
            .where(
                col(ChatSession.backend) == "claude",
                col(ChatSession.backend_session_id) == backend_id,
            )
            .order_by(col(ChatSession.created_at))
        ).all()
        reason = ""
        for chat in chats:
            rows = db.exec(
                select(col(Event.kind), col(Event.payload)).where(col(Event.session_id) == chat.id)
            ).all()
            if all(payload.get("imported") for _kind, payload in rows):
                # A footer repeats the uuid of its turn's last entry; that entry may
                # itself have produced nothing and must still count as not yet seen.
                done = {
                    p["uuid"] for k, p in rows if k != "turn_end" and isinstance(p.get("uuid"), str)
                }
                return chat, done, ""
            # Its own turns already hold what the CLI appended since; importing those
            # lines again would show every message twice.
            imported = any(payload.get("imported") for _kind, payload in rows)
            reason = reason or (
                "continued in Angelia since it was imported"
                if imported
                else "this conversation was started in Angelia"
            )
        return (chats[0] if chats else None), set(), reason


def _create_session(engine: Engine, transcript: Transcript, title: str, first: str) -> ChatSession:
    with Session(engine) as db:
        profile = _profile_for(db, transcript.cwd)
        at = parse_time(first) or utcnow()
        chat = ChatSession(
            profile_id=profile.id,
            backend="claude",
            backend_session_id=transcript.session_id,
            title=title,
            status="idle",
            created_at=at,
            updated_at=at,
        )
        db.add(chat)
        db.commit()
        db.refresh(chat)
        return chat


def _profile_for(db: Session, cwd: str) -> Profile:
    """The oldest claude profile for ``cwd``, else a new one (even if the folder is gone)."""
    names = {cwd, os.path.realpath(cwd)}
    stmt = (
        select(Profile)
        .where(col(Profile.backend) == "claude", col(Profile.cwd).in_(names))
        .order_by(col(Profile.created_at))
    )
    profile = db.exec(stmt).first()
    if profile is None:
        label = Path(cwd).name or cwd
        profile = Profile(name=f"Imported · {label}", backend="claude", cwd=cwd)
        db.add(profile)
        db.commit()
        db.refresh(profile)
    return profile


def _add_totals(engine: Engine, chat_id: str, builder: EventBuilder, last: str) -> None:
    with Session(engine) as db:
        chat = db.get(ChatSession, chat_id)
        if chat is None:
            return
        chat.turns += builder.turns
        chat.input_tokens += builder.tokens["input_tokens"]
        chat.output_tokens += builder.tokens["output_tokens"]
        # The list is ordered by activity; an old conversation keeps its old place.
        chat.updated_at = parse_time(last) or utcnow()
        db.add(chat)
        db.commit()


# -- Angelia's own JSON exports ----------------------------------------------------------
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
