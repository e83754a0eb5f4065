"""Import Claude Code's own transcripts as sessions (Angelia's exports: ``export_import``).

Each Claude ``<slug>/<session-id>.jsonl`` becomes one chat session (backend ``claude``,
``backend_session_id`` = the file's session id, so a message resumes it). Every stored
event carries ``imported: true`` and the entry's ``uuid`` (a line of an unknown type, shown
raw, its text's hash): importing again adds only entries that are new, at the end, and an
imported session outlives its file.
"""

from __future__ import annotations

import asyncio
import os
from pathlib import Path
from typing import Literal
from weakref import WeakKeyDictionary

from pydantic import BaseModel
from sqlalchemy.engine import Engine
from sqlmodel import Session, col, select

from app.db.models import ChatSession, Event, Profile, utcnow
from app.errors import ValidationFailed
from app.folders import MAX_CHARS
from app.services.store.eventlog import EventLog
from app.services.transcripts.claude_reader import JsonDict, RawLine, Transcript, TranscriptReader
from app.services.transcripts.claude_transcripts import (
    EventBuilder,
    conversation,
    parse_time,
    title_for,
)
from app.settings import Settings

# Fields the event log adds to every event it shows; the rest is the stored payload.
_ENVELOPE = ("seq", "session_id", "kind", "at")
# Yield to the event loop this often, so a large import does not stall live sessions.
_YIELD_EVERY = 200
# One import at a time per event log: two interleaved imports of one file would both
# see its new entries as missing and store them twice.
_locks: WeakKeyDictionary[EventLog, asyncio.Lock] = WeakKeyDictionary()
# The files followed live, by resolved path (see TranscriptImport.follow).
_followed: WeakKeyDictionary[EventLog, dict[str, TranscriptImport]] = WeakKeyDictionary()


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


# Linux's PATH_MAX: no longer path can be opened anyway.
MAX_PATH_CHARS = MAX_CHARS  # PATH_MAX, as for a profile's folder


def find_transcripts(path: Path) -> list[Path]:
    """Session files under a projects dir or one project's dir, or the file given.

    Raises:
        ValidationFailed: ``path`` is too long, missing, not a transcript or unreadable.
    """
    if len(str(path)) > MAX_PATH_CHARS:
        raise ValidationFailed("path", f"is longer than {MAX_PATH_CHARS} characters")
    try:
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
    except OSError as exc:  # a name too long for the filesystem, a folder it may not read
        raise ValidationFailed("path", f"cannot read {path}: {exc.strerror or exc}") from exc


async def import_claude(engine: Engine, events: EventLog, path: Path) -> ClaudeImportReport:
    """Import every transcript under ``path``; bad lines and unreadable files are counted.

    A file being followed live goes through its follower's import, which keeps a turn
    the CLI has not finished open.

    Raises:
        ValidationFailed: ``path`` does not exist or is not a transcript.
    """
    files = find_transcripts(path)
    report = ClaudeImportReport()
    followed = _followed.setdefault(events, {})
    async with lock(events):
        for file in files:
            live = followed.get(str(file.resolve()))
            try:
                if live is not None:
                    item = await live.step(keep_open=True)
                else:
                    item = await TranscriptImport(engine, events, file).step(keep_open=False)
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


def lock(events: EventLog) -> asyncio.Lock:
    """Held by every import into ``events``; a follower's steps take it too."""
    return _locks.setdefault(events, asyncio.Lock())


class TranscriptImport:
    """One transcript imported into one session, again and again as the file grows.

    Each step stores what the file added since: entries of the conversation by uuid,
    lines of unknown types by their text. With ``keep_open`` the last turn stays open
    until the file shows it ended (the CLI may still be working on it) and a half-written
    last line waits for its end; otherwise the step closes it, as a finished file needs.
    Steps must not overlap: callers hold ``lock``.
    """

    def __init__(self, engine: Engine, events: EventLog, path: Path) -> None:
        self.engine, self.events, self.path = engine, events, path
        self.chat_id: str | None = None
        self._reader = TranscriptReader(path)
        self._builder = EventBuilder()
        self._done: set[str] | None = None  # what the session held before the first step
        self._fed: set[str] = set()
        self._reason = ""
        self._imported = 0

    def follow(self) -> None:
        """Route imports of this file through this object until ``unfollow``."""
        _followed.setdefault(self.events, {})[str(self.path.resolve())] = self

    def unfollow(self) -> None:
        followed = _followed.setdefault(self.events, {})
        if followed.get(str(self.path.resolve())) is self:
            del followed[str(self.path.resolve())]

    def _parse(self, keep_open: bool) -> tuple[Transcript, list[JsonDict], str]:
        self._reader.read(complete_only=keep_open)
        transcript = self._reader.transcript
        thread = conversation(transcript)
        return transcript, thread, title_for(transcript, thread)

    async def step(self, *, keep_open: bool) -> FileReport:
        # Parsed off the event loop: a long transcript must not stall the live sessions.
        transcript, thread, title = await asyncio.to_thread(self._parse, keep_open)
        report = FileReport(
            path=str(self.path),
            backend_session_id=transcript.session_id,
            status="unchanged",
            title=title,
            cwd=transcript.cwd,
            lines=transcript.lines,
            malformed_lines=transcript.malformed,
        )
        valid = transcript.lines - transcript.malformed
        if self._done is None:
            chat, self._done, self._reason = _existing(self.engine, transcript.session_id)
            self.chat_id = chat.id if chat is not None else None
        if self._reason:
            return _skip(report, valid, self._reason, self.chat_id)
        builder, done, already = self._builder, self._done, 0
        items: list[tuple[int, JsonDict | RawLine]] = [
            (transcript.line_of[e["uuid"]], e) for e in thread
        ]
        items += [(raw.line, raw) for raw in transcript.unknown]
        for _line, item in sorted(items, key=lambda i: i[0]):
            key = item.key if isinstance(item, RawLine) else item["uuid"]
            if key in done:
                already += 1
            elif key not in self._fed:
                self._fed.add(key)
                if isinstance(item, RawLine):
                    builder.add_raw(item)
                    self._imported += 1
                elif builder.add(item):
                    self._imported += 1
        if not keep_open or builder.turn_finished:
            builder.close()
        out, turns, tokens = builder.drain()
        report.lines_imported = self._imported
        report.lines_skipped = max(0, valid - self._imported - already)
        if self.chat_id is None and not out:
            return _skip(report, valid, "no conversation in this file", None)
        if self.chat_id is None and not transcript.cwd:
            return _skip(report, valid, "the transcript names no working folder", None)
        stamps = [e["timestamp"] for e in thread if isinstance(e.get("timestamp"), str)]
        if self.chat_id is None:
            chat = _create_session(self.engine, transcript, title, stamps[0] if stamps else "")
            self.chat_id = chat.id
            report.status = "created"
        elif out:
            report.status = "updated"
        report.chat_session_id = self.chat_id
        for n, (kind, payload) in enumerate(out, start=1):
            self.events.append(self.chat_id, kind, payload)
            if n % _YIELD_EVERY == 0:
                await asyncio.sleep(0)
        # Stored before the next file is checked against what is already imported.
        await self.events.flush()
        report.events_added = len(out)
        if out:
            _add_totals(self.engine, self.chat_id, turns, tokens, stamps[-1] if stamps else "")
        return report


def _skip(report: FileReport, valid: int, reason: str, chat_id: str | None) -> FileReport:
    report.status, report.reason = "skipped", reason
    report.lines_imported, report.lines_skipped = 0, valid
    report.chat_session_id = chat_id
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


def _add_totals(
    engine: Engine, chat_id: str, turns: int, tokens: dict[str, int], last: str
) -> None:
    with Session(engine) as db:
        chat = db.get(ChatSession, chat_id)
        if chat is None:
            return
        chat.turns += turns
        chat.input_tokens += tokens["input_tokens"]
        chat.output_tokens += tokens["output_tokens"]
        # The list is ordered by activity; an old conversation keeps its old place.
        chat.updated_at = parse_time(last) or utcnow()
        db.add(chat)
        db.commit()
