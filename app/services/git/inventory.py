"""Disk hygiene: every session worktree under the app's folder, its state and its size.

A worktree is *orphaned* when no session claims it any more (the caller says which
ones do), *dirty* with uncommitted changes, *unmerged* with commits its base lacks,
else *merged*. A folder under the root that git no longer knows as a worktree (its
repository moved or was deleted) is *stray*. Sizes count the worktree's own files, not
the object store it shares with the repository.
"""

from __future__ import annotations

import os
from collections.abc import Collection, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from app.services.git.changes import uncommitted
from app.services.git.merge import ahead_behind, is_merged
from app.services.git.repo import (
    GitError,
    GitPlace,
    Where,
    branch_commit,
    checkouts,
    current_branch,
    repo_root,
    run,
    text,
    verify_worktree,
    worktree_pointer,
)
from app.services.git.worktrees import BRANCH_PREFIX, repo_folder, writing

__all__ = ["State", "WorktreeState", "list_worktrees", "prune", "size_on_disk", "state"]

State = Literal["orphaned", "dirty", "unmerged", "merged", "stray"]


@dataclass(frozen=True)
class WorktreeState:
    path: Path
    repo: Path | None  # the repository's main checkout; None for a stray folder
    branch: str | None
    base: str | None  # the branch it tracks (started from); None when that is unknown
    state: State
    orphaned: bool
    dirty_files: int
    ahead: int  # commits on the branch its base lacks
    behind: int  # commits on the base the branch lacks
    merged: bool
    size_bytes: int


def size_on_disk(folder: Path | str) -> int:
    """Bytes the folder's files take on disk, each hard-linked file once, links not followed."""
    seen: set[tuple[int, int]] = set()
    total = 0
    stack = [str(folder)]
    while stack:
        try:
            with os.scandir(stack.pop()) as entries:
                for entry in entries:
                    try:
                        info = entry.stat(follow_symlinks=False)
                    except OSError:
                        continue
                    if (info.st_dev, info.st_ino) in seen:
                        continue
                    seen.add((info.st_dev, info.st_ino))
                    total += info.st_blocks * 512
                    if entry.is_dir(follow_symlinks=False):
                        stack.append(entry.path)
        except OSError:
            continue
    return total


def state(
    repo: Where, path: Where, *, orphaned: bool = False, base: str | None = None
) -> WorktreeState:
    """The state of one worktree of ``repo`` (best given as its recorded git dir and work
    tree); ``base`` defaults to the branch it tracks."""
    where = path
    folder = path.work_tree if isinstance(path, GitPlace) else Path(path)
    branch = current_branch(where)
    if base is None and branch is not None:
        base = _upstream(where, branch)
    dirty = len(uncommitted(where))
    ahead = behind = 0
    merged = False
    if branch is not None and base is not None and branch_commit(repo, base) is not None:
        ahead, behind = ahead_behind(repo, branch, base)
        merged = ahead == 0 or is_merged(repo, branch, base)
    label: State
    if orphaned:
        label = "orphaned"
    elif dirty:
        label = "dirty"
    else:
        label = "merged" if merged else "unmerged"
    main = checkouts(repo)[0].path
    return WorktreeState(
        path=folder,
        repo=main,
        branch=branch,
        base=base,
        state=label,
        orphaned=orphaned,
        dirty_files=dirty,
        ahead=ahead,
        behind=behind,
        merged=merged,
        size_bytes=size_on_disk(folder),
    )


def _upstream(worktree: Where, branch: str) -> str | None:
    out = run(
        ["for-each-ref", "--format=%(upstream)", f"refs/heads/{branch}"],
        cwd=worktree,
        what=f"reading the base of {branch}",
    )
    ref = text(out.stdout).strip()
    return ref.removeprefix("refs/heads/") if ref.startswith("refs/heads/") else None


def list_worktrees(
    root: Path | str, sessions: Collection[Path | str] | Mapping[str, str | None]
) -> list[WorktreeState]:
    """Every worktree folder under ``root``; ``sessions`` are the paths sessions still use
    (with the git dir each recorded, when given as a mapping)."""
    claimed = {os.path.realpath(p) for p in sessions}
    recorded = (
        {os.path.realpath(p): d for p, d in sessions.items() if d}
        if isinstance(sessions, Mapping)
        else {}
    )
    found: list[WorktreeState] = []
    home = Path(root)
    if not home.is_dir():
        return found
    for repo_dir in sorted(p for p in home.iterdir() if p.is_dir() and not p.is_symlink()):
        for folder in sorted(p for p in repo_dir.iterdir() if p.is_dir() and not p.is_symlink()):
            real = os.path.realpath(folder)
            orphaned = real not in claimed
            place = _place(folder, recorded.get(real))
            main = _main_checkout(place) if place is not None else None
            if place is None or main is None:
                found.append(_stray(folder, orphaned))
            else:
                repo = GitPlace(place.git_dir.parent.parent, main)
                found.append(state(repo, place, orphaned=orphaned))
    return found


def _place(folder: Path, recorded: str | None) -> GitPlace | None:
    """The worktree's git dir (the one its session recorded, else the one its ``.git``
    names) if it and the folder still point at each other; None when they do not."""
    admin = Path(recorded) if recorded else worktree_pointer(folder)
    if admin is None:
        return None
    place = GitPlace(admin, folder)
    try:
        verify_worktree(place)
    except GitError:
        return None
    return place


def _main_checkout(place: GitPlace) -> Path | None:
    """The repository's main checkout, if ``place`` really is one of its linked worktrees."""
    try:
        entries = checkouts(place)
    except GitError:
        return None
    real = os.path.realpath(place.work_tree)
    if not any(os.path.realpath(e.path) == real for e in entries[1:]):
        return None
    return entries[0].path


def _stray(folder: Path, orphaned: bool) -> WorktreeState:
    return WorktreeState(
        path=folder,
        repo=None,
        branch=None,
        base=None,
        state="stray",
        orphaned=orphaned,
        dirty_files=0,
        ahead=0,
        behind=0,
        merged=False,
        size_bytes=size_on_disk(folder),
    )


def prune(repo: Path | str, root: Path | str) -> list[Path]:
    """Forget ``repo``'s session worktrees under ``root`` whose folders are gone.

    Only those: the user's own stale worktrees are theirs to prune. The branches stay
    (they may hold commits); the caller removes them through ``worktrees.remove``.
    """
    top = repo_root(repo)
    mine = repo_folder(Path(os.path.realpath(root)), top)
    pruned: list[Path] = []
    for entry in checkouts(top)[1:]:
        if not entry.prunable or entry.path.parent != mine:
            continue
        if not (entry.branch or "").startswith(BRANCH_PREFIX):
            continue
        with writing(top):
            run(
                ["worktree", "remove", "--force", str(entry.path)],
                cwd=top,
                what=f"forgetting the missing worktree {entry.path}",
            )
        pruned.append(entry.path)
    return pruned
