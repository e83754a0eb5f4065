"""Review comments: a note on one line of a session's diff, sent to its agent in one
message, then shown as answered once that line (or the file around it) reads differently.

A comment names a file the session's diff lists, a line number and a side: ``new`` (the
file as it is now: an added or unchanged line) or ``old`` (a line the diff removed). The
line is read when the comment is written: for ``new`` from the file on disk in the
session's folder (any line of a changed file, not only those the diff shows; a path that
leads outside the folder is read from the diff alone), for ``old`` from the diff; a line
that is not there is refused. The comment keeps the line (``quote``, which the message
cites) and a digest of it with ``AROUND`` neighbours on each side (``context``); a sent
comment whose digest reads differently now has been answered.

The diff is the Changes tab's own, through ``diff_texts``, the one place that knows which
function builds it.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from sqlalchemy.engine import Engine
from sqlmodel import Session, col, func, select

from app.db.models import ChatSession, ReviewComment, utcnow
from app.errors import ConflictError, NotFoundError, ValidationFailed
from app.services.permissions.preview import MAX_FILE_BYTES
from app.services.review.session_changes import session_changes
from app.services.sessions.manager import SessionManager
from app.services.sessions.workspace import git_place_of
from app.services.store import store
from app.services.store.eventlog import EventLog

__all__ = [
    "MAX_BODY_CHARS",
    "MAX_COMMENTS",
    "MAX_PATH_CHARS",
    "Sent",
    "Side",
    "Spot",
    "add",
    "answered",
    "comments_of",
    "delete",
    "diff_texts",
    "locate",
    "message_text",
    "send",
]

Side = Literal["new", "old"]
MAX_BODY_CHARS = 10_000
MAX_PATH_CHARS = 4_096
MAX_COMMENTS = 500
# Lines on each side of the commented one that count as "around it".
AROUND = 2
# A minified file's one line can be megabytes: the message quotes its start.
MAX_QUOTE_CHARS = 500
# What a message may hold (MessageIn.text in app/schemas.py); comments past it stay open.
MAX_MESSAGE_CHARS = 1_000_000
HEADING = "Review comments on your changes:"
# File by file, line by line: how the list shows them and the message cites them.
_ORDER = (
    col(ReviewComment.path),
    col(ReviewComment.line),
    col(ReviewComment.side),
    col(ReviewComment.created_at),
)
_HUNK = re.compile(r"^@@ -(\d+)(?:,\d+)? \+(\d+)(?:,\d+)? @@")


@dataclass(frozen=True)
class Sent:
    comments: list[ReviewComment]
    seq: int | None  # the user_message event they went out in
    queued: bool  # waits for the agent to finish its turn
    left: int  # open comments that did not fit in the message


def diff_texts(engine: Engine, events: EventLog, chat: ChatSession) -> tuple[str, dict[str, str]]:
    """The session's folder and each changed file's diff, as the Changes tab has them.

    Blocks on the disk (and git): call it from a worker thread."""
    cwd = store.session_profile(engine, chat).cwd
    found = session_changes(events, chat, cwd, git_place_of(engine, chat))
    return found.root, {f.path: f.diff for f in found.files}


# -- reading a line ----------------------------------------------------------------------


def _rows(diff: str) -> Iterator[tuple[str, int, int, str]]:
    """(marker, old line, new line, text) for each line of a unified diff's hunks."""
    old_no = new_no = 0
    in_hunk = False
    for line in diff.split("\n"):
        if m := _HUNK.match(line):
            old_no, new_no, in_hunk = int(m[1]), int(m[2]), True
        elif not in_hunk or not line or line[0] not in "+- ":
            continue  # file headers, "\ No newline at end of file"
        elif line[0] == "-":
            yield "-", old_no, 0, line[1:]
            old_no += 1
        elif line[0] == "+":
            yield "+", 0, new_no, line[1:]
            new_no += 1
        else:
            yield " ", old_no, new_no, line[1:]
            old_no += 1
            new_no += 1


def _disk_lines(cwd: str, path: str) -> list[str] | None:
    """The file's lines as git numbers them; None when it is not a readable text file
    inside the session's folder."""
    try:
        root = Path(cwd).resolve()
        target = (root / path).resolve()
        if not target.is_relative_to(root) or not target.is_file():
            return None
        if target.stat().st_size > MAX_FILE_BYTES:
            return None
        text = target.read_bytes().decode("utf-8", errors="replace")
    except (OSError, ValueError):
        return None
    lines = text.split("\n")
    return lines[:-1] if lines[-1] == "" else lines


def _readings(cwd: str, diffs: dict[str, str], path: str, side: Side) -> dict[int, str]:
    """What each line of one side of a file reads now, by line number.

    Old lines carry their diff marker, so a removed line the agent puts back (now
    context, or no longer in the diff at all) reads differently."""
    diff = diffs.get(path, "")
    if side == "old":
        return {old: mark + text for mark, old, _, text in _rows(diff) if mark != "+"}
    lines = _disk_lines(cwd, path)
    if lines is not None:
        return dict(enumerate(lines, start=1))
    return {new: text for mark, _, new, text in _rows(diff) if mark != "-"}


def _context(readings: dict[int, str], line: int) -> str:
    around = [readings.get(n) for n in range(line - AROUND, line + AROUND + 1)]
    return hashlib.sha256(json.dumps(around).encode()).hexdigest()


def _quote(reading: str, side: Side) -> str:
    text = (reading[1:] if side == "old" else reading).rstrip("\r")
    return text if len(text) <= MAX_QUOTE_CHARS else text[: MAX_QUOTE_CHARS - 1] + "…"


# -- storing -----------------------------------------------------------------------------


@dataclass(frozen=True)
class Spot:
    """A line as it reads when a comment is written on it."""

    quote: str
    context: str


def locate(where: tuple[str, dict[str, str]], path: str, line: int, side: Side) -> Spot:
    """Read ``path``:``line`` on ``side``; ``where`` is what ``diff_texts`` gave.

    ``ValidationFailed`` for a file the diff does not list or a line that is not there.
    Reads the disk: call it from a worker thread."""
    if not path:
        raise ValidationFailed("path", "name the file the line is in")
    if len(path) > MAX_PATH_CHARS:
        raise ValidationFailed("path", f"must be at most {MAX_PATH_CHARS} characters")
    if line < 1:
        raise ValidationFailed("line", "must be 1 or more (lines count from 1)")
    cwd, diffs = where
    if path not in diffs:
        raise ValidationFailed("path", f"{path!r} is not a file this session changed")
    readings = _readings(cwd, diffs, path, side)
    if line not in readings:
        place = "in the file now" if side == "new" else "among the diff's removed lines"
        raise ValidationFailed("line", f"{path} has no line {line} {place}")
    return Spot(_quote(readings[line], side), _context(readings, line))


def add(
    engine: Engine, session_id: str, *, path: str, line: int, side: Side, body: str, spot: Spot
) -> ReviewComment:
    """Store an open comment on the line ``locate`` found."""
    if not body.strip():
        raise ValidationFailed("body", "is empty; write what should change")
    if len(body) > MAX_BODY_CHARS:
        raise ValidationFailed("body", f"must be at most {MAX_BODY_CHARS:,} characters")
    with Session(engine) as db:
        if db.get(ChatSession, session_id) is None:
            raise NotFoundError(f"Session {session_id} not found")
        count = db.exec(
            select(func.count()).where(col(ReviewComment.session_id) == session_id)
        ).one()
        if count >= MAX_COMMENTS:
            raise ValidationFailed(
                "comments", f"a session keeps at most {MAX_COMMENTS} review comments"
            )
        comment = ReviewComment(
            session_id=session_id,
            path=path,
            line=line,
            side=side,
            body=body,
            quote=spot.quote,
            context=spot.context,
        )
        db.add(comment)
        db.commit()
        db.refresh(comment)
        return comment


def comments_of(engine: Engine, session_id: str) -> list[ReviewComment]:
    """The session's comments, open and sent, file by file and line by line."""
    with Session(engine) as db:
        return list(
            db.exec(
                select(ReviewComment)
                .where(col(ReviewComment.session_id) == session_id)
                .order_by(*_ORDER)
            )
        )


def answered(
    comments: Sequence[ReviewComment], where: tuple[str, dict[str, str]]
) -> dict[str, bool]:
    """For each sent comment, whether its line or the lines around it read differently
    now. Reads the disk: call it from a worker thread."""
    cwd, diffs = where
    cache: dict[tuple[str, Side], dict[int, str]] = {}
    out: dict[str, bool] = {}
    for c in comments:
        if c.status != "sent":
            continue
        side: Side = "old" if c.side == "old" else "new"
        key = (c.path, side)
        if key not in cache:
            cache[key] = _readings(cwd, diffs, c.path, side)
        out[c.id] = _context(cache[key], c.line) != c.context
    return out


def delete(engine: Engine, session_id: str, comment_id: str) -> None:
    """Delete an open comment; a sent one is part of what the agent was told and stays."""
    with Session(engine) as db:
        comment = db.get(ReviewComment, comment_id)
        if comment is None or comment.session_id != session_id:
            raise NotFoundError(f"Comment {comment_id} not found in this session")
        if comment.status != "open":
            raise ConflictError("This comment was sent to the agent already; it stays.")
        db.delete(comment)
        db.commit()


# -- sending -----------------------------------------------------------------------------


def _entry(c: ReviewComment) -> str:
    where = f"{c.path}:{c.line}" + (" (a removed line)" if c.side == "old" else "")
    return f"{where}\n> {c.quote}\n{c.body.strip()}"


def message_text(comments: Sequence[ReviewComment]) -> str:
    """The message: the heading, then per comment its file:line, the line and the comment."""
    return "\n\n".join([HEADING, *(_entry(c) for c in comments)])


def _claim(engine: Engine, session_id: str) -> tuple[list[ReviewComment], int]:
    """Mark as many open comments sent as one message holds (before any await, so a
    second send at the same time finds none); returns them and how many are left."""
    with Session(engine) as db:
        waiting = list(
            db.exec(
                select(ReviewComment)
                .where(
                    col(ReviewComment.session_id) == session_id,
                    col(ReviewComment.status) == "open",
                )
                .order_by(*_ORDER)
            )
        )
        taken: list[ReviewComment] = []
        size = len(HEADING)
        for c in waiting:
            size += 2 + len(_entry(c))
            if taken and size > MAX_MESSAGE_CHARS:
                break
            taken.append(c)
        now = utcnow()
        for c in taken:
            c.status, c.sent_at = "sent", now
            db.add(c)
        db.commit()
        for c in taken:
            db.refresh(c)
        return taken, len(waiting) - len(taken)


def _settle(engine: Engine, ids: list[str], seq: int | None, *, sent: bool) -> None:
    with Session(engine) as db:
        for comment_id in ids:
            c = db.get(ReviewComment, comment_id)
            if c is None:
                continue
            if sent:
                c.sent_seq = seq
            else:
                c.status, c.sent_at = "open", None
            db.add(c)
        db.commit()


async def send(engine: Engine, events: EventLog, manager: SessionManager, session_id: str) -> Sent:
    """Send the open comments to the agent as one user message (queued like any message
    while it is busy) and mark them sent; ``ConflictError`` when none is open."""
    taken, left = _claim(engine, session_id)
    if not taken:
        raise ConflictError("No open review comments to send: write one on a diff line first.")
    ids = [c.id for c in taken]
    text = message_text(taken)
    try:
        queued = await manager.send_message(session_id, text)
    except BaseException:
        _settle(engine, ids, None, sent=False)
        raise
    await events.flush()
    recent = events.list(session_id, kind="user_message", newest=True, limit=20)
    seq = next((int(e["seq"]) for e in reversed(recent) if e.get("text") == text), None)
    _settle(engine, ids, seq, sent=True)
    for c in taken:
        c.sent_seq = seq
    return Sent(taken, seq, queued, left)
