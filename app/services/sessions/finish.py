"""Finishing a worktree session's work: commit it, merge it into its base, or discard it.

The git work is the git layer's (``app.services.git``); this module ties it to the
session: which repository and branch, whether its agent is busy, the message a commit is
suggested, and what the session records once its worktree is gone (no worktree: it stays
readable, its transcript untouched). Functions marked blocking run git; call them from a
worker thread.
"""

from __future__ import annotations

import asyncio
import textwrap
from dataclasses import dataclass
from pathlib import Path

from sqlalchemy.engine import Engine

from app.db.models import ChatSession
from app.errors import AppError, ConflictError
from app.services.git import merge as git_merge
from app.services.git import strategies, worktrees
from app.services.git.changes import uncommitted
from app.services.git.merge import Strategy
from app.services.git.repo import GitError, GitPlace, branch_commit
from app.services.sessions.closed import SessionClosed, closed_of, kept_changes, mark_closed
from app.services.sessions.manager import SessionManager
from app.services.sessions.workspace import git_place, repository_place, worktrees_root
from app.services.store import store
from app.services.store.eventlog import EventLog
from app.settings import Settings

__all__ = [
    "NoWorktree",
    "WorktreeInfo",
    "ask_to_resolve",
    "commit",
    "discard",
    "discard_with_session",
    "forget_worktree",
    "info",
    "merge",
    "places",
    "repository",
    "resolve_message",
    "suggested_message",
    "worktree_of",
]

SUBJECT_CHARS = 72
BODY_LINES = 6
BODY_CHARS = 600
# A session is mid-turn (its files may be changing) in these states.
BUSY_STATUSES = frozenset({"working", "waiting"})
# A worktree that goes with its session (deleted) leaves nothing to record.
DISCARDED_COLUMNS = {"worktree_path": None}


class NoWorktree(AppError):
    """The session works in its profile's folder, not in a worktree of its own."""

    status = 422


@dataclass(frozen=True)
class WorktreeInfo:
    path: str
    branch: str
    base: str
    base_commit: str
    ahead: int  # commits on the branch its base lacks
    behind: int  # commits on the base the branch lacks
    dirty: list[str]  # uncommitted files in the worktree (a rename once, by its new name)
    merged: bool  # the base has every change of the branch
    base_exists: bool
    committed: bool  # the branch has moved since the session started (its own commits)
    suggested_message: str
    # How the branch can be merged now and why not otherwise; empty with nothing to merge.
    strategies: list[strategies.StrategyOption]
    conflicts: list[str]  # the files a merge into the base would conflict in now


def worktree_of(chat: ChatSession) -> worktrees.Worktree:
    closed = closed_of(chat)
    if closed is not None:
        raise SessionClosed(f"{closed.summary} There is nothing left to commit, merge or discard.")
    if not (chat.worktree_path and chat.worktree_branch and chat.worktree_base):
        raise NoWorktree(
            f"Session {chat.id} has no worktree of its own: it works in its profile's folder, "
            "so there is nothing to commit, merge or discard here"
        )
    return worktrees.Worktree(
        path=Path(chat.worktree_path),
        branch=chat.worktree_branch,
        base=chat.worktree_base,
        base_commit=chat.worktree_base_commit or "",
    )


def repository(engine: Engine, chat: ChatSession) -> str:
    """The user's repository the session's worktree belongs to: its profile's folder."""
    return store.get_profile(engine, chat.profile_id).cwd


def places(engine: Engine, chat: ChatSession) -> tuple[GitPlace, GitPlace]:
    """(the session's worktree, its repository) as recorded, the worktree checked to
    still point where the app made it (blocking).

    Raises:
        WorktreeChanged: (409) its ``.git`` was re-pointed; no git was run in it.
    """
    profile = store.get_profile(engine, chat.profile_id)
    worktree = git_place(chat, profile)
    assert worktree is not None  # a worktree session always has one
    return worktree, repository_place(worktree, profile)


def suggested_message(events: EventLog, chat: ChatSession) -> str:
    """What the session was asked to do: its title as the subject (the first line of its
    first message while the title is only that message), the rest of that message as a
    short body.

    The task, not the agent's last answer: by the time the work is committed that answer
    is as likely to be a reply to a review comment as a summary of the work.
    """
    first = events.list(chat.id, kind="user_message", limit=1)
    task = str(first[0].get("text") or "").strip() if first else ""
    title = " ".join((chat.title or "").split())
    head, _, rest = task.partition("\n")
    if title and title != store.title_from_message(task):
        subject, told = title, task  # a title chosen for it: the whole task below
    else:
        subject, told = " ".join(head.split()), rest
    subject = subject or "Work from an Angelia session"
    if len(subject) > SUBJECT_CHARS:
        subject, told = subject[: SUBJECT_CHARS - 1].rstrip() + "…", task
    if " ".join(told.split()) in ("", subject):
        return subject
    body = _short_body(told.strip())
    return f"{subject}\n\n{body}" if body else subject


def _short_body(task: str) -> str:
    """The task's first lines, wrapped as git's log shows them best; "…" where cut."""
    lines: list[str] = []
    for raw in task[:BODY_CHARS].splitlines():
        if not raw.strip():
            if lines and lines[-1]:
                lines.append("")  # no blank line first and none doubled
            continue
        lines += textwrap.wrap(raw.strip(), SUBJECT_CHARS) or [""]
    cut = len(lines) > BODY_LINES or len(task) > BODY_CHARS
    lines = lines[:BODY_LINES]
    while lines and not lines[-1]:
        lines.pop()
    if cut and lines:
        lines[-1] = lines[-1][: SUBJECT_CHARS - 1].rstrip() + "…"
    return "\n".join(lines)


def info(engine: Engine, events: EventLog, chat: ChatSession) -> WorktreeInfo:
    """Where the session's branch stands against its base (blocking)."""
    made = worktree_of(chat)
    place, top = places(engine, chat)
    base_exists = branch_commit(top, made.base) is not None
    ahead = behind = 0
    merged = False
    conflicts: list[str] = []
    tip = branch_commit(top, made.branch)
    if base_exists and tip is not None:
        ahead, behind = git_merge.ahead_behind(top, made.branch, made.base)
        merged = ahead == 0 or git_merge.is_merged(top, made.branch, made.base)
        if behind and not merged:  # a base that has not moved cannot conflict
            conflicts = git_merge.conflicts(top, made.branch, made.base)
    nothing = merged or not base_exists or tip is None
    ways = [] if nothing else strategies.options(made.base, behind, conflicts)
    dirty = uncommitted(place) if made.path.is_dir() else []
    return WorktreeInfo(
        path=str(made.path),
        branch=made.branch,
        base=made.base,
        base_commit=made.base_commit,
        ahead=ahead,
        behind=behind,
        dirty=dirty,
        merged=merged,
        base_exists=base_exists,
        committed=tip is not None and tip != made.base_commit,
        suggested_message=suggested_message(events, chat),
        strategies=ways,
        conflicts=conflicts,
    )


def refuse_if_busy(manager: SessionManager, chat: ChatSession, doing: str) -> None:
    if manager.busy(chat.id) or chat.status in BUSY_STATUSES:
        raise ConflictError(
            f"The session's agent is in the middle of a turn; wait for it to finish (or stop "
            f"it) before you {doing}"
        )


async def commit(engine: Engine, manager: SessionManager, chat: ChatSession, message: str) -> str:
    """Commit everything in the session's worktree onto its own branch; the new commit.

    Only that branch moves (compare-and-swap), through the git dir recorded for the
    worktree: never another checkout's branch or the user's index.
    """
    made = worktree_of(chat)
    refuse_if_busy(manager, chat, "commit")
    if not made.branch.startswith(worktrees.BRANCH_PREFIX):
        raise GitError(f"{made.branch} is not a session branch; nothing was committed")
    place, _ = await asyncio.to_thread(places, engine, chat)
    return await asyncio.to_thread(git_merge.commit, place, message, branch=made.branch)


async def merge(
    engine: Engine, manager: SessionManager, chat: ChatSession, strategy: Strategy
) -> git_merge.MergeResult:
    """Merge the session's branch into its base; on a conflict or a refusal nothing changes.

    Raises:
        MergeConflict: (409) the branches conflict; ``files`` names them.
        LocalChanges: (409) the base is checked out with uncommitted work in the way, or
            (``UntrackedInTheWay``) with ignored or untracked files the merge would replace.
    """
    made = worktree_of(chat)
    refuse_if_busy(manager, chat, "merge")
    _, top = await asyncio.to_thread(places, engine, chat)
    return await asyncio.to_thread(git_merge.merge, top, made.branch, made.base, strategy)


def resolve_message(branch: str, base: str, files: list[str]) -> str:
    listed = "\n".join(f"- {f}" for f in files)
    return (
        f"Merging this worktree's branch {branch} into {base} conflicts in "
        f"{len(files)} file{'s' if len(files) != 1 else ''}:\n{listed}\n\n"
        f"Please merge {base} into {branch} here in this worktree (git merge {base}), "
        "resolve the conflicts in those files keeping both sides' intent, check that the "
        "result still works, and commit the merge. Do not touch any other checkout."
    )


async def ask_to_resolve(engine: Engine, manager: SessionManager, chat: ChatSession) -> list[str]:
    """Send the session's agent the files that conflict and what to do; those files."""
    made = worktree_of(chat)
    _, top = await asyncio.to_thread(places, engine, chat)
    files = await asyncio.to_thread(git_merge.conflicts, top, made.branch, made.base)
    if not files:
        raise ConflictError(
            f"{made.branch} merges into {made.base} without conflicts now; there is nothing "
            "for the agent to resolve"
        )
    await manager.send_message(chat.id, resolve_message(made.branch, made.base, files))
    return files


def forget_worktree(engine: Engine, session_id: str) -> None:
    """The session records it has no worktree any more (its transcript stays)."""
    store.update_session(engine, session_id, **DISCARDED_COLUMNS)


async def discard(
    engine: Engine,
    manager: SessionManager,
    data_dir: Path,
    chat: ChatSession,
    *,
    confirm: bool = False,
) -> None:
    """Remove the session's worktree folder and its branch, and nothing else.

    Raises:
        UnsafeToDiscard: (409) unmerged commits or uncommitted files, without ``confirm``.
    """
    made = worktree_of(chat)
    refuse_if_busy(manager, chat, "discard its work")
    # An idle agent still has the folder as its working directory: it goes first. A
    # refusal below only means it starts again (resuming) with the next message.
    await manager.stop_brain(chat.id)
    # Read before the folder and branch go: the Changes tab shows them afterwards.
    kept = await asyncio.to_thread(kept_changes, engine, chat)
    root = worktrees_root(data_dir)
    await asyncio.to_thread(worktrees.remove, repository(engine, chat), root, made, confirm=confirm)
    mark_closed(engine, manager.events, chat.id, "discarded", kept)


async def discard_with_session(
    engine: Engine, manager: SessionManager, settings: Settings, session_id: str
) -> None:
    """Before a session is deleted: its worktree and branch go, work in them or not (the
    user asked for both at once); a session without one has nothing to discard."""
    chat = store.get_session(engine, session_id)
    if not chat.worktree_path:
        return
    made = worktree_of(chat)
    # The session goes anyway, so a running turn is stopped rather than waited for.
    await manager.stop_brain(session_id)
    root = worktrees_root(settings.data_dir)
    await asyncio.to_thread(worktrees.remove, repository(engine, chat), root, made, confirm=True)
    forget_worktree(engine, session_id)
