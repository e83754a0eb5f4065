"""Where a session's agent works: its profile's folder, or a git worktree of its own.

A session in a worktree runs its agent, its folder rules and its Changes view in that
worktree (under ``<data dir>/worktrees``, never inside the repository), so two sessions
of one repository never write the same files. A session without one, in a git folder,
keeps a snapshot of the folder's tree as it started, which its changes are read against.
In a folder outside git that snapshot is kept in a private git dir of the session's
under the data dir (``app.services.git.folder_snapshot``), when the folder is small
enough; the session's ``snapshot_note`` says why when it is not.

Either way the session records the git dir and work tree it started with, and the app's
own git only ever runs on those (:func:`git_place`): an agent that re-points the
worktree's ``.git`` file at another repository, or writes a ``.git`` of its own, cannot
make the Changes view, a commit or a merge read or write anything else.
The git work is blocking: callers run these functions in a worker thread.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from pathlib import Path

from sqlalchemy.engine import Engine

from app.db.datadir import WORKTREES_DIR
from app.db.models import ChatSession, Profile, new_id
from app.errors import ValidationFailed
from app.services.git import folder_snapshot, worktrees
from app.services.git.changes import snapshot
from app.services.git.repo import (
    GitError,
    GitPlace,
    NotARepository,
    common_dir,
    git_dir,
    repo_root,
    verify_worktree,
    worktree_admin_dir,
)
from app.services.sessions import folder_files
from app.services.store import store

__all__ = [
    "Workspace",
    "close_workspace",
    "create_session",
    "git_place",
    "git_place_of",
    "repository_place",
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
    snapshot_note: str | None = None
    git_dir: str | None = None
    git_work_tree: str | None = None


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
        open_workspace,
        profile,
        data_dir,
        slug=slug,
        worktree=worktree,
        base=base,
        session_id=session_id,
    )
    try:
        chat = store.create_session(
            engine,
            profile_id=profile_id,
            title=title,
            session_id=session_id,
            workspace=asdict(place) | dict(links or {}),
        )
    except BaseException:
        made = ChatSession(id=session_id, profile_id=profile_id, backend=profile.backend)
        for column, value in asdict(place).items():
            setattr(made, column, value)
        await asyncio.to_thread(close_workspace, made, profile, data_dir)
        raise
    # The folder's files for the composer's "@", listed in the background from now on.
    folder = Path(store.session_profile(engine, chat).cwd)
    folder_files.warm(chat.id, folder, lambda: git_place(chat, profile))
    return chat


def worktrees_root(data_dir: Path) -> Path:
    return data_dir / WORKTREES_DIR


def open_workspace(
    profile: Profile,
    data_dir: Path,
    *,
    slug: str,
    worktree: bool | None,
    base: str | None,
    session_id: str,
) -> Workspace:
    """Where a new session of ``profile`` works.

    ``worktree`` None follows the profile's ``worktree_default``. A folder outside git is
    snapshotted under ``data_dir`` for the session ``session_id``.

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
        return _plain_workspace(profile.cwd, data_dir, session_id)
    top = worktree_repository(profile, "A session can only get a worktree of a git repository")
    made = worktrees.create(
        top, worktrees_root(data_dir), slug, base=base, copy=profile.worktree_copy
    )
    for path, why in made.skipped:
        log.info("not copied into %s: %s (%s)", made.path, path, why)
    # Just made by git, before any agent ran in it: its admin folder is the one to keep.
    admin = worktree_admin_dir(Path(os.path.realpath(common_dir(top))), made.path)
    return Workspace(
        worktree_path=str(made.path),
        worktree_branch=made.branch,
        worktree_base=made.base,
        worktree_base_commit=made.base_commit,
        git_dir=str(admin) if admin is not None else None,
        git_work_tree=str(made.path),
    )


def git_place(chat: ChatSession, profile: Profile) -> GitPlace | None:
    """Where the app's git runs for the session's folder: the git dir and work tree it
    recorded; None outside git. Blocking.

    A worktree is checked first: its ``.git`` file and its admin folder must still point
    at each other as git made them.

    Raises:
        WorktreeChanged: (409) the worktree's ``.git`` was re-pointed; nothing was run.
        NotARepository: the session is in a worktree whose repository cannot be found.
    """
    if chat.worktree_path:
        path = Path(chat.worktree_path)
        admin = chat.git_dir or _admin_of_older_session(profile, path)
        place = GitPlace(Path(admin), Path(chat.git_work_tree or path))
        if os.path.lexists(path):  # a folder deleted by hand has nothing to run git in
            verify_worktree(place)
        return place
    if chat.git_dir and chat.git_work_tree:
        return GitPlace(Path(chat.git_dir), Path(chat.git_work_tree))
    # A session from before the app recorded its git dir: found as git finds it.
    try:
        top = repo_root(profile.cwd)
    except NotARepository:
        return None
    return GitPlace(git_dir(top), top)


def git_place_of(engine: Engine, chat: ChatSession) -> GitPlace | None:
    """:func:`git_place` of a stored session, with its profile read from the store."""
    return git_place(chat, store.get_profile(engine, chat.profile_id))


def repository_place(worktree: GitPlace, profile: Profile) -> GitPlace:
    """The repository a worktree session's branch lives in (refs, merges): the one its
    recorded admin folder belongs to, with the profile's folder's checkout as work tree."""
    return GitPlace(worktree.git_dir.parent.parent, repo_root(profile.cwd))


def _admin_of_older_session(profile: Profile, path: Path) -> str:
    """The admin folder of a worktree made before the app recorded it: the one in the
    profile's repository whose back-pointer names the worktree."""
    top = repo_root(profile.cwd)
    common = Path(os.path.realpath(common_dir(top)))
    admin = worktree_admin_dir(common, path)
    if admin is None and not os.path.lexists(path):
        # Deleted by hand and pruned: no git runs in it, only its repository is needed.
        return str(common / "worktrees" / path.name)
    if admin is None:
        raise NotARepository(
            f"{path} is not a worktree of {top} any more; the app runs no git in it",
            reason="not_a_repository",
        )
    return str(admin)


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
    and branch go (nothing else of the repository is touched), or its folder's snapshot."""
    folder_snapshot.remove(data_dir, chat.id)
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


def _plain_workspace(folder: str, data_dir: Path, session_id: str) -> Workspace:
    """A session in the profile's folder: its repository's git dir and top as they are
    now, and the tree it starts from; outside git, the private snapshot's (or why there
    is none: its changes then come from the tools)."""
    try:
        top = repo_root(folder)
        place = GitPlace(git_dir(top), top)
    except NotARepository as exc:
        if exc.reason == "not_a_repository":
            return _outside_git(Path(folder), data_dir, session_id)
        return Workspace()
    except GitError as exc:
        log.warning("no snapshot of %s: %s", folder, exc.message)
        return Workspace()
    return Workspace(
        snapshot_tree=_snapshot_or_none(place),
        git_dir=str(place.git_dir),
        git_work_tree=str(place.work_tree),
    )


def _snapshot_or_none(place: GitPlace) -> str | None:
    """The folder's tree now, or None when git cannot read it."""
    try:
        return snapshot(place)
    except NotARepository:
        return None
    except GitError as exc:
        # A repository git cannot read right now (a lock, a broken object): the session
        # still starts, its Changes view falls back to what its tools did.
        log.warning("no snapshot of %s: %s", place, exc.message)
        return None


def _outside_git(folder: Path, data_dir: Path, session_id: str) -> Workspace:
    """A folder outside git: snapshotted in a private git dir, if it is small enough.
    Never one inside the data dir (the app's own files, not the user's)."""
    if Path(os.path.realpath(folder)).is_relative_to(os.path.realpath(data_dir)):
        return Workspace()
    taken = folder_snapshot.take(folder, data_dir, session_id)
    if taken.git_dir is None or taken.tree is None:
        log.info("no snapshot of %s: %s", folder, taken.note)
        return Workspace(snapshot_note=taken.note)
    return Workspace(
        snapshot_tree=taken.tree, git_dir=str(taken.git_dir), git_work_tree=str(folder)
    )
