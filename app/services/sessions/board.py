"""The board of running agents: every session at work, waiting for an answer, or done
in a worktree whose work has not reached its base branch yet.

What a card shows comes from the database (status, model, the last answer, pending
approvals) and, for a session in a worktree, from git (ahead/behind, files changed,
merged or not). The git part costs a few git processes per session, so it is cached per
worktree under a signature read with ``stat`` alone (its HEAD, its index, the branch and
base refs): a board of idle sessions re-reads nothing. Files the agent edits change no
ref, so the session's newest event is part of the key too, and a busy session is
re-read at most every ``MIN_REFRESH_S``; an edit by hand, with no event at all, shows
within ``MAX_AGE_S``. Git runs in worker threads, at most
``GIT_WORKERS`` at a time, so a board of many sessions never takes the whole machine.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sqlalchemy import func
from sqlalchemy.engine import Engine
from sqlmodel import Session, col, select

from app.db.models import ChatSession, Event, PermissionRequest, Profile
from app.services.git.changes import diff
from app.services.git.merge import ahead_behind, is_merged, merge_base
from app.services.git.repo import GitError, uncommitted
from app.services.sessions.context import gauges
from app.services.sessions.schedule import pending_by_session
from app.services.sessions.workspace import git_place, repository_place
from app.services.store.eventlog import EventLog

__all__ = ["BoardCard", "GitCache", "GitView", "PendingView", "board"]

# The newest finished worktree sessions considered; older ones are in the history.
MAX_SESSIONS = 50
ACTIVE = ("working", "waiting")
MIN_REFRESH_S = 2.0
# Files edited by hand in a worktree move neither a ref nor an event: read again this often.
MAX_AGE_S = 15.0
GIT_WORKERS = 2
LINE_CHARS = 200
# The newest answers looked through for the main agent's own (a subagent's are skipped).
ANSWERS_SCANNED = 20


@dataclass(frozen=True)
class GitView:
    branch: str
    base: str
    ahead: int
    behind: int
    files_changed: int
    merged: bool  # the base branch has everything the branch has
    dirty: bool  # files changed in the worktree and not committed
    error: str | None = None  # git could not read the worktree (e.g. its base is gone)


@dataclass(frozen=True)
class PendingView:
    id: str
    tool: str
    kind: str
    title: str
    input: dict[str, Any]


@dataclass(frozen=True)
class BoardCard:
    id: str
    title: str
    status: str
    backend: str
    model: str
    worktree: GitView | None
    last_line: str
    pending: PendingView | None
    pending_count: int
    # How full its context is (app.services.sessions.context.Gauge as a dict).
    context: dict[str, Any] | None = None
    # When a scheduled continue goes (ISO-8601 UTC), "" when none waits.
    scheduled_at: str = ""


Signature = tuple[object, ...]


def _stat(path: Path) -> tuple[int, int, int] | None:
    try:
        info = path.stat()
    except OSError:
        return None
    return (info.st_ino, info.st_size, info.st_mtime_ns)


def _git_dirs(worktree: Path) -> tuple[Path, Path] | None:
    """(the worktree's own git dir, the repository's common dir), read from files."""
    try:
        line = (worktree / ".git").read_text(encoding="utf-8").strip()
    except (OSError, UnicodeDecodeError):
        return None
    if not line.startswith("gitdir:"):
        return None
    own = (worktree / line.removeprefix("gitdir:").strip()).resolve()
    try:
        common = (own / (own / "commondir").read_text(encoding="utf-8").strip()).resolve()
    except (OSError, UnicodeDecodeError):
        common = own
    return own, common


def signature(worktree: Path, branch: str, base: str) -> Signature | None:
    """What git's answers for this worktree depend on, from ``stat`` calls only; None
    when the worktree is not there any more."""
    dirs = _git_dirs(worktree)
    if dirs is None:
        return None
    own, common = dirs
    return (
        _stat(own / "HEAD"),
        _stat(own / "index"),
        _stat(common / "refs" / "heads" / branch),
        _stat(common / "refs" / "heads" / base),
        _stat(common / "packed-refs"),
    )


def read_git(
    chat: ChatSession, profile: Profile, branch: str, base: str, base_commit: str
) -> GitView:
    """Ask git, on the git dir the session recorded (blocking: call from a worker thread)."""
    try:
        worktree = git_place(chat, profile)
        assert worktree is not None  # a worktree session always has one
        repo = repository_place(worktree, profile)
        ahead, behind = ahead_behind(repo, branch, base)
        # Nothing ahead means the branch is inside its base already.
        merged = ahead == 0 or is_merged(repo, branch, base)
        dirty = bool(uncommitted(worktree))
        # Only the count is wanted: no diff text is kept. Counted as the Changes tab
        # lists them: from where the branch and its base meet, once either moved.
        since = merge_base(worktree, branch, base) or base_commit
        files = len(diff(worktree, since, max_file_bytes=0, max_total_bytes=0))
    except GitError as exc:
        return GitView(branch, base, 0, 0, 0, merged=False, dirty=False, error=exc.message)
    return GitView(branch, base, ahead, behind, files, merged=merged, dirty=dirty)


@dataclass
class _Cached:
    signature: Signature
    hint: int
    at: float
    view: GitView


class GitCache:
    """Git's view of each worktree, kept while nothing it depends on has changed."""

    def __init__(self, limit: int = GIT_WORKERS) -> None:
        self._lock = threading.Lock()
        self._kept: dict[str, _Cached] = {}
        self._limit = limit
        self._slots: dict[asyncio.AbstractEventLoop, asyncio.Semaphore] = {}
        self.reads = 0  # how many times git was asked, for the benchmark and the tests

    def _fresh(self, key: str, sig: Signature, hint: int) -> GitView | None:
        with self._lock:
            kept = self._kept.get(key)
        if kept is None or kept.signature != sig:
            return None
        age = time.monotonic() - kept.at
        if (kept.hint == hint and age < MAX_AGE_S) or age < MIN_REFRESH_S:
            return kept.view
        return None

    def _slot(self) -> asyncio.Semaphore:
        loop = asyncio.get_running_loop()
        if loop not in self._slots:
            self._slots[loop] = asyncio.Semaphore(self._limit)
        return self._slots[loop]

    async def view(self, chat: ChatSession, hint: int, profile: Profile | None) -> GitView | None:
        """The worktree's state; None when the session has no worktree (any more)."""
        if not (chat.worktree_path and chat.worktree_branch and chat.worktree_base):
            return None
        if profile is None:
            return None
        path = Path(chat.worktree_path)
        branch, base = chat.worktree_branch, chat.worktree_base
        sig = await asyncio.to_thread(signature, path, branch, base)
        if sig is None:
            return None
        got = self._fresh(chat.id, sig, hint)
        if got is not None:
            return got
        async with self._slot():
            got = self._fresh(chat.id, sig, hint)
            if got is not None:
                return got
            view = await asyncio.to_thread(
                read_git, chat, profile, branch, base, chat.worktree_base_commit or base
            )
            self.reads += 1
        with self._lock:
            self._kept[chat.id] = _Cached(sig, hint, time.monotonic(), view)
        return view

    def forget_except(self, keep: Iterable[str]) -> None:
        wanted = set(keep)
        with self._lock:
            for key in [k for k in self._kept if k not in wanted]:
                del self._kept[key]


CACHE = GitCache()


def last_line(events: EventLog, session_id: str) -> str:
    """The last non-blank line of the agent's newest answer, as plain trimmed text."""
    answers = events.list(session_id, kind="assistant_message", newest=True, limit=ANSWERS_SCANNED)
    for answer in reversed(answers):
        if answer.get("parent_tool_call_id"):
            continue
        lines = [ln.strip() for ln in str(answer.get("text") or "").splitlines() if ln.strip()]
        if lines:
            line = " ".join(lines[-1].lstrip("#>*-` ").split()) or lines[-1]
            return line if len(line) <= LINE_CHARS else line[: LINE_CHARS - 1] + "…"
    return ""


def _candidates(engine: Engine, scheduled: Iterable[str] = ()) -> list[ChatSession]:
    """Every session at work or with a scheduled continue, and the newest ``MAX_SESSIONS``
    with a worktree."""
    newest = (col(ChatSession.updated_at).desc(), col(ChatSession.id).desc())
    active = select(ChatSession).where(col(ChatSession.status).in_(ACTIVE)).order_by(*newest)
    in_worktrees = (
        select(ChatSession)
        .where(col(ChatSession.worktree_path).is_not(None), col(ChatSession.status).not_in(ACTIVE))
        .order_by(*newest)
        .limit(MAX_SESSIONS)
    )
    later = select(ChatSession).where(col(ChatSession.id).in_(list(scheduled)))
    with Session(engine) as db:
        rows = list(db.exec(active)) + list(db.exec(in_worktrees)) + list(db.exec(later))
    unique = {c.id: c for c in rows}.values()
    return sorted(unique, key=lambda c: (c.updated_at, c.id), reverse=True)


def _pending(engine: Engine, ids: list[str]) -> dict[str, list[PermissionRequest]]:
    if not ids:
        return {}
    stmt = (
        select(PermissionRequest)
        .where(
            col(PermissionRequest.status) == "pending",
            col(PermissionRequest.session_id).in_(ids),
        )
        .order_by(col(PermissionRequest.created_at), col(PermissionRequest.id))
    )
    out: dict[str, list[PermissionRequest]] = {}
    with Session(engine) as db:
        for row in db.exec(stmt):
            out.setdefault(row.session_id, []).append(row)
    return out


def _newest_seqs(engine: Engine, ids: list[str]) -> dict[str, int]:
    if not ids:
        return {}
    stmt = (
        select(col(Event.session_id), func.max(col(Event.seq)))
        .where(col(Event.session_id).in_(ids))
        .group_by(col(Event.session_id))
    )
    with Session(engine) as db:
        return {sid: int(seq or 0) for sid, seq in db.exec(stmt)}


def _profiles(engine: Engine, ids: set[str]) -> dict[str, Profile]:
    with Session(engine) as db:
        rows = db.exec(select(Profile).where(col(Profile.id).in_(sorted(ids))))
        return {p.id: p for p in rows}


async def board(engine: Engine, events: EventLog, cache: GitCache = CACHE) -> list[BoardCard]:
    """The cards, most recently active first."""
    scheduled = pending_by_session(engine)
    chats = _candidates(engine, scheduled)
    ids = [c.id for c in chats]
    pending = _pending(engine, ids)
    seqs = _newest_seqs(engine, ids)
    context = gauges(engine, ids)
    profiles = _profiles(engine, {c.profile_id for c in chats})
    views = await asyncio.gather(
        *(cache.view(c, seqs.get(c.id, 0), profiles.get(c.profile_id)) for c in chats)
    )
    cache.forget_except(ids)
    cards: list[BoardCard] = []
    for chat, view in zip(chats, views, strict=True):
        waiting = pending.get(chat.id, [])
        unfinished = view is not None and (not view.merged or view.dirty or bool(view.error))
        later = scheduled.get(chat.id)
        if chat.status not in ACTIVE and not waiting and not unfinished and later is None:
            continue
        first = waiting[0] if waiting else None
        profile = profiles.get(chat.profile_id)
        cards.append(
            BoardCard(
                id=chat.id,
                title=chat.title,
                status=chat.status,
                backend=chat.backend,
                model=chat.model or (profile.model if profile else None) or "",
                worktree=view,
                last_line=last_line(events, chat.id),
                pending=None
                if first is None
                else PendingView(first.id, first.tool, first.kind, first.title, first.input),
                pending_count=len(waiting),
                context=context[chat.id].as_dict(),
                scheduled_at=later.isoformat() if later else "",
            )
        )
    return cards
