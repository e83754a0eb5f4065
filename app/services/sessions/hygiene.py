"""Disk hygiene for session worktrees: what is under ``<data dir>/worktrees`` and clean-up.

Clean-up removes the worktrees that hold nothing the user could still want from the app:
*merged* ones (their base has every change, nothing uncommitted) and *orphaned* ones
(their session was deleted, so nothing in the app can merge them any more). Each goes
through ``worktrees.remove``: its folder and its one branch, nothing else. *Stray* folders
(git no longer knows them: their repository moved or was deleted) are listed, never
removed. Afterwards ``git worktree prune`` runs, for the session worktrees only, in each
repository a session worktree belongs to. Blocking functions run git: call them in a
worker thread.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from sqlalchemy.engine import Engine
from sqlmodel import Session, select

from app.db.datadir import WORKTREES_DIR
from app.db.models import ChatSession, Profile
from app.services.git import inventory, worktrees
from app.services.git.repo import GitError
from app.services.sessions.closed import kept_changes, mark_closed
from app.services.sessions.finish import BUSY_STATUSES
from app.services.store.eventlog import EventLog

__all__ = ["Listed", "Tidied", "clean_up", "listing"]

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Listed:
    """One worktree folder, with the session that uses it (None when orphaned)."""

    state: inventory.WorktreeState
    session_id: str | None
    session_title: str | None

    @property
    def removable(self) -> bool:
        """Whether clean-up takes it (see the module docstring)."""
        return self.state.state in ("merged", "orphaned") and self.state.repo is not None

    @property
    def loses_work(self) -> bool:
        """An orphaned worktree that clean-up takes with unmerged commits or dirty files."""
        s = self.state
        return s.orphaned and s.repo is not None and (s.dirty_files > 0 or not s.merged)


@dataclass
class Tidied:
    removed: list[Path] = field(default_factory=list)
    failed: list[tuple[Path, str]] = field(default_factory=list)
    pruned: list[Path] = field(default_factory=list)


def _sessions(engine: Engine) -> list[tuple[ChatSession, str]]:
    """Every session with a worktree, with its repository (its profile's folder)."""
    with Session(engine) as db:
        rows = db.exec(
            select(ChatSession, Profile.cwd)
            .join(Profile, Profile.id == ChatSession.profile_id)  # type: ignore[arg-type]
            .where(ChatSession.worktree_path.is_not(None))  # type: ignore[union-attr]
        ).all()
    return [(chat, cwd) for chat, cwd in rows]


def listing(engine: Engine, data_dir: Path) -> list[Listed]:
    """Every folder under the worktrees root with its state, size and session (blocking)."""
    sessions = {os.path.realpath(c.worktree_path or ""): c for c, _ in _sessions(engine)}
    recorded = {path: c.git_dir for path, c in sessions.items()}
    found = inventory.list_worktrees(data_dir / WORKTREES_DIR, recorded)
    listed = []
    for s in found:
        chat = sessions.get(os.path.realpath(s.path))
        listed.append(Listed(s, chat.id if chat else None, (chat.title if chat else None) or None))
    return listed


def clean_up(engine: Engine, events: EventLog, data_dir: Path, busy: Iterable[str] = ()) -> Tidied:
    """Remove the merged and orphaned worktrees, then prune (blocking).

    Sessions in ``busy`` (a turn running) keep theirs; a session whose worktree goes
    records that it was cleaned up, with the changes it held (its Changes tab shows them).
    """
    root = data_dir / WORKTREES_DIR
    skip = set(busy)
    by_path = {os.path.realpath(c.worktree_path or ""): c for c, _ in _sessions(engine)}
    done = Tidied()
    repos: set[str] = set()
    for item in listing(engine, data_dir):
        s = item.state
        chat = by_path.get(os.path.realpath(s.path))
        if not item.removable or s.repo is None or s.branch is None:
            continue
        if chat is not None and (chat.id in skip or chat.status in BUSY_STATUSES):
            continue
        made = worktrees.Worktree(
            path=s.path,
            branch=s.branch,
            base=s.base or (chat.worktree_base if chat else None) or "",
            base_commit=(chat.worktree_base_commit if chat else None) or "",
        )
        kept = kept_changes(engine, chat) if chat is not None else {}
        try:
            # Orphans go even with work in them: no session is left to merge it from.
            worktrees.remove(s.repo, root, made, confirm=item.state.orphaned)
        except GitError as exc:
            done.failed.append((s.path, exc.message))
            continue
        done.removed.append(s.path)
        if chat is not None:
            mark_closed(engine, events, chat.id, "cleaned_up", kept)
        repos.add(str(s.repo))
    # Sessions whose folder vanished (deleted by hand) leave git an entry to forget.
    done.pruned = _prune(repos | {cwd for _, cwd in _sessions(engine)}, root)
    return done


def _prune(repos: Iterable[str], root: Path) -> list[Path]:
    pruned: list[Path] = []
    for repo in sorted(set(repos)):
        try:
            pruned += inventory.prune(repo, root)
        except GitError as exc:  # a profile folder that is no repository any more
            log.info("not pruned: %s", exc.message)
    return pruned
