"""Where a session's agent works: its profile's folder, or a git worktree of its own.

A session in a worktree runs its agent, its folder rules and its Changes view in that
worktree (under ``<data dir>/worktrees``, never inside the repository), so two sessions
of one repository never write the same files. A session without one, in a git folder,
keeps a snapshot of the folder's tree as it started, which its changes are read against.
The git work is blocking: callers run these functions in a worker thread.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from pathlib import Path

from sqlalchemy.engine import Engine

from app.db.datadir import WORKTREES_DIR
from app.db.models import ChatSession, Profile, new_id
from app.errors import ValidationFailed
from app.services.git import worktrees
from app.services.git.changes import snapshot
from app.services.git.repo import GitError, NotARepository, repo_root
from app.services.store import store

__all__ = [
    "Workspace",
    "close_workspace",
    "create_session",
    "open_workspace",
    "worktree_repository",
    "worktrees_root",
]

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Workspace:
    """The session columns that say where its agent works."""

    worktree_path: str | None = None
    worktree_branch: str | None = None
    worktree_base: str | None = None
    worktree_base_commit: str | None = None
    snapshot_tree: str | None = None


async def create_session(
    engine: Engine,
    data_dir: Path,
    *,
    profile_id: str,
    title: str | None,
    worktree: bool | None = None,
    base: str | None = None,
    links: Mapping[str, str] | None = None,
) -> ChatSession:
    """A new session of the profile, in a worktree of its own when asked (or when the
    profile says so by default); see :func:`open_workspace` for what can go wrong.
    ``links`` are the columns that tie it to the session it forks or continues."""
    profile = store.get_profile(engine, profile_id)
    session_id = new_id()
    # Readable first, and unique enough that two sessions of one title rarely need the
    # numbered suffix worktrees.create adds on a clash.
    words = worktrees.slugify(title or "session")[:32].strip("-")
    slug = f"{words}-{worktrees.slugify(session_id[:6])}"
    place = await asyncio.to_thread(
        open_workspace, profile, data_dir, slug=slug, worktree=worktree, base=base
    )
    try:
        return store.create_session(
            engine,
            profile_id=profile_id,
            title=title,
            session_id=session_id,
            workspace=asdict(place) | dict(links or {}),
        )
    except BaseException:
        made = ChatSession(profile_id=profile_id, backend=profile.backend)
        for column, value in asdict(place).items():
            setattr(made, column, value)
        await asyncio.to_thread(close_workspace, made, profile, data_dir)
        raise


def worktrees_root(data_dir: Path) -> Path:
    return data_dir / WORKTREES_DIR


def open_workspace(
    profile: Profile,
    data_dir: Path,
    *,
    slug: str,
    worktree: bool | None,
    base: str | None,
) -> Workspace:
    """Where a new session of ``profile`` works.

    ``worktree`` None follows the profile's ``worktree_default``.

    Raises:
        NotARepository: a worktree was asked for a folder that is not a git working tree
            (422, with the reason).
        ValidationFailed: ``base`` without a worktree, or a base branch that is not there.
        GitError: git refused to make the worktree.
    """
    wanted = profile.worktree_default if worktree is None else worktree
    if not wanted:
        if base is not None:
            raise ValidationFailed("base", "a base branch only applies to a session in a worktree")
        return Workspace(snapshot_tree=_snapshot_or_none(profile.cwd))
    top = worktree_repository(profile, "A session can only get a worktree of a git repository")
    made = worktrees.create(
        top, worktrees_root(data_dir), slug, base=base, copy=profile.worktree_copy
    )
    for path, why in made.skipped:
        log.info("not copied into %s: %s (%s)", made.path, path, why)
    return Workspace(
        worktree_path=str(made.path),
        worktree_branch=made.branch,
        worktree_base=made.base,
        worktree_base_commit=made.base_commit,
    )


def worktree_repository(profile: Profile, why: str) -> Path:
    """The repository a worktree of the profile's folder belongs to.

    Raises:
        NotARepository: the folder is not a git working tree (422), its reason after ``why``.
    """
    try:
        return repo_root(profile.cwd)
    except NotARepository as exc:
        raise NotARepository(f"{why}: {exc.message}", reason=exc.reason, stderr=exc.stderr) from exc


def close_workspace(chat: ChatSession, profile: Profile, data_dir: Path) -> None:
    """Undo ``open_workspace`` for a session that could not be stored: its new worktree
    and branch go (nothing else of the repository is touched)."""
    if not chat.worktree_path or not chat.worktree_branch:
        return
    made = worktrees.Worktree(
        path=Path(chat.worktree_path),
        branch=chat.worktree_branch,
        base=chat.worktree_base or "",
        base_commit=chat.worktree_base_commit or "",
    )
    with contextlib.suppress(GitError):
        worktrees.remove(profile.cwd, worktrees_root(data_dir), made, confirm=True)


def _snapshot_or_none(folder: str) -> str | None:
    """The folder's tree now, or None outside git (its changes then come from the tools)."""
    try:
        return snapshot(folder)
    except NotARepository:
        return None
    except GitError as exc:
        # A repository git cannot read right now (a lock, a broken object): the session
        # still starts, its Changes view falls back to what its tools did.
        log.warning("no snapshot of %s: %s", folder, exc.message)
        return None
