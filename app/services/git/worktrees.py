"""A git worktree per session: made under the app's data dir, removed only when it is safe.

A session's worktree lives at ``<root>/<repository>-<id>/<slug>`` on its own branch
``angelia/<slug>``, which tracks the branch it started from (so ``git status`` there says
how far ahead it is, and the base can be found again from git alone). The folder is never
inside the user's repository or its .git. Removing one deletes that folder and that one
branch, and nothing else: not another worktree, not the user's branches or stashes.

Making and removing worktrees and their branches write the repository's shared config
(``.git/config.lock``) and worktree list; git refuses a second writer instead of waiting,
so the app's own writes to one repository take turns (``writing``), whichever thread
they run in.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import shutil
import threading
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from app.db.datadir import make_private_dir
from app.errors import ValidationFailed
from app.services.git.changes import uncommitted
from app.services.git.merge import ahead_behind, is_merged
from app.services.git.repo import (
    Checkout,
    GitError,
    branch_commit,
    checkout_place,
    checkouts,
    common_dir,
    current_branch,
    repo_root,
    run,
    text,
)
from app.wording import counted

__all__ = [
    "BRANCH_PREFIX",
    "UnsafeToDiscard",
    "Worktree",
    "check_under_root",
    "create",
    "writing",
    "find_checkout",
    "remove",
    "repo_folder",
    "slugify",
]

BRANCH_PREFIX = "angelia/"
MAX_SLUG_CHARS = 48
MAX_TRIES = 100
CHECKOUT_TIMEOUT_S = 300.0

# One lock per repository (its real common .git folder), made on first use.
_WRITERS: dict[str, threading.Lock] = {}
_WRITERS_GUARD = threading.Lock()


class UnsafeToDiscard(GitError):
    """Removing would lose work: ``unmerged`` commits and/or ``dirty`` files."""

    def __init__(self, message: str, *, unmerged: int, dirty: list[str]) -> None:
        super().__init__(message)
        self.unmerged = unmerged
        self.dirty = dirty


@dataclass(frozen=True)
class Worktree:
    path: Path
    branch: str  # angelia/<slug>
    base: str  # the branch it started from, which it merges into
    base_commit: str  # where ``base`` was when the worktree was made
    # What :func:`create` did with the ``copy`` list: not part of what a session stores.
    copied: tuple[str, ...] = ()
    skipped: tuple[tuple[str, str], ...] = ()  # (path, why it was not copied)


def slugify(slug: str) -> str:
    """A branch- and folder-safe name: lower case letters, digits and single dashes."""
    cleaned = re.sub(r"[^a-z0-9]+", "-", slug.lower()).strip("-")[:MAX_SLUG_CHARS].strip("-")
    return cleaned or "session"


def repo_folder(root: Path, top: Path) -> Path:
    """One folder per repository under ``root``: its name plus a hash of its .git."""
    common = os.path.realpath(common_dir(top))
    digest = hashlib.sha256(common.encode("utf-8", "surrogateescape")).hexdigest()[:10]
    return root / f"{slugify(top.name)}-{digest}"


@contextlib.contextmanager
def writing(top: Path) -> Iterator[None]:
    """Held while the app writes ``top``'s shared git state (branches, config, worktree
    list): one such write per repository at a time across all threads."""
    key = os.path.realpath(common_dir(top))
    with _WRITERS_GUARD:
        lock = _WRITERS.setdefault(key, threading.Lock())
    with lock:
        yield


def create(
    repo: Path | str,
    root: Path | str,
    slug: str,
    base: str | None = None,
    copy: Sequence[str] = (),
) -> Worktree:
    """Make a worktree of ``repo`` on a new branch ``angelia/<slug>`` (numbered on a clash).

    ``base`` defaults to the branch checked out in ``repo``. ``copy`` names files the
    repository ignores (``.env``…) to copy from ``repo`` into the new worktree.
    """
    top = repo_root(repo)
    base = base if base is not None else current_branch(top)
    if base is None:
        raise ValidationFailed(
            "base", f"{top} is not on a branch (detached HEAD); name the branch to start from"
        )
    if branch_commit(top, base) is None:
        raise ValidationFailed("base", f"there is no branch {base!r} with commits in {top}")
    home = Path(os.path.realpath(root))
    for guarded in (top, Path(os.path.realpath(common_dir(top)))):
        if home == guarded or guarded in home.parents:
            raise GitError(f"the worktrees folder {home} is inside {guarded}; choose another")
    parent = repo_folder(home, top)
    # Owner-only, as all of the data dir: the worktrees inside keep their own modes.
    for folder in (home, parent):
        make_private_dir(folder)
    with writing(top):
        return _add(top, parent, slugify(slug), base, copy)


def _add(top: Path, parent: Path, name: str, base: str, copy: Sequence[str]) -> Worktree:
    for n in range(1, MAX_TRIES + 1):
        candidate = name if n == 1 else f"{name}-{n}"
        branch, path = BRANCH_PREFIX + candidate, parent / candidate
        if os.path.lexists(path) or branch_commit(top, branch) is not None:
            continue
        made = run(
            [
                "worktree",
                "add",
                "--quiet",
                "--track",
                "-b",
                branch,
                str(path),
                f"refs/heads/{base}",
            ],
            cwd=top,
            what=f"making a worktree of {top} at {path}",
            ok=(0, 128),
            timeout=CHECKOUT_TIMEOUT_S,
        )
        if made.returncode != 0:
            if os.path.lexists(path) or branch_commit(top, branch) is not None:
                continue  # taken by someone else between the check and the add
            raise GitError(f"making a worktree of {top} failed: {made.stderr}", stderr=made.stderr)
        start = branch_commit(top, branch)
        assert start is not None  # the branch was just made
        copied, skipped = _copy_ignored(top, path, copy)
        return Worktree(path, branch, base, start, tuple(copied), tuple(skipped))
    raise GitError(f"no free name for a worktree {name!r} in {parent} after {MAX_TRIES} tries")


def _copy_ignored(
    top: Path, dest: Path, paths: Sequence[str]
) -> tuple[list[str], list[tuple[str, str]]]:
    copied: list[str] = []
    skipped: list[tuple[str, str]] = []
    wanted: list[str] = []
    for rel in paths:
        reason = _unsafe_relative(rel)
        if reason:
            skipped.append((rel, reason))
        elif _through_link(top, PurePosixPath(rel).parent):
            skipped.append((rel, "it is inside a folder that is a link"))
        elif not os.path.lexists(top / rel):
            skipped.append((rel, "not there"))
        else:
            wanted.append(rel)
    ignored = _ignored(top, wanted)
    real_top = os.path.realpath(top)
    git_dir = os.path.realpath(common_dir(top))
    for rel in wanted:
        source = os.path.realpath(top / rel)
        target = dest / rel
        if rel not in ignored:
            skipped.append(
                (
                    rel,
                    "git does not ignore it, so it would show as a change and be "
                    "committed; list it in .gitignore to copy it",
                )
            )
        elif not _below(source, real_top) or _below(source, git_dir):
            skipped.append((rel, "it is a link that leads outside the repository"))
        elif os.path.lexists(target):
            skipped.append((rel, "the worktree already has it"))
        elif not _mkdirs_inside(dest, PurePosixPath(rel).parent):
            skipped.append((rel, "its folder in the worktree is a link"))
        else:
            if os.path.isdir(source):
                shutil.copytree(source, target, symlinks=True)
            else:
                shutil.copy2(source, target)
            copied.append(rel)
    return copied, skipped


def _unsafe_relative(rel: str) -> str:
    if not rel or "\0" in rel:
        return "not a file name"
    pure = PurePosixPath(rel)
    if pure.is_absolute():
        return "not relative to the repository"
    if ".." in pure.parts or ".git" in pure.parts:
        return "outside the repository's working files"
    return ""


def _below(path: str, folder: str) -> bool:
    return path == folder or path.startswith(folder.rstrip("/") + "/")


def _through_link(top: Path, folder: PurePosixPath) -> bool:
    here = top
    for part in folder.parts:
        here = here / part
        if here.is_symlink():
            return True
    return False


def _mkdirs_inside(dest: Path, folder: PurePosixPath) -> bool:
    """Make ``dest/folder`` step by step, refusing any step that is a link."""
    here = dest
    for part in folder.parts:
        here = here / part
        if here.is_symlink() or (here.exists() and not here.is_dir()):
            return False
        here.mkdir(exist_ok=True)
    return True


def _ignored(worktree: Path, paths: list[str]) -> set[str]:
    if not paths:
        return set()
    out = run(
        ["check-ignore", "-z", "--stdin"],
        cwd=worktree,
        input=b"\0".join(p.encode() for p in paths) + b"\0",
        what="checking which files git ignores",
        ok=(0, 1),
    )
    return {text(p) for p in out.stdout.split(b"\0") if p}


def find_checkout(top: Path, path: Path) -> tuple[int, Checkout] | None:
    """The worktree entry (with its position; 0 is the main checkout) at ``path``."""
    wanted = os.path.realpath(path)
    for i, entry in enumerate(checkouts(top)):
        if os.path.realpath(entry.path) == wanted:
            return i, entry
    return None


def check_under_root(root: Path | str, path: Path | str) -> Path:
    """``path`` as a real path, if it is a worktree folder under ``root``; GitError if not."""
    home = os.path.realpath(root)
    real = Path(os.path.realpath(path))
    if not Path(path).is_absolute() or real.parent.parent != Path(home):
        raise GitError(f"{path} is not a session worktree under {home}; it was left alone")
    return real


def remove(
    repo: Path | str, root: Path | str, worktree: Worktree, *, confirm: bool = False
) -> None:
    """Delete the worktree's folder and its branch, and nothing else.

    Refused (UnsafeToDiscard) while it has uncommitted changes or commits its base does
    not have, unless ``confirm``.
    """
    top = repo_root(repo)
    path = check_under_root(root, worktree.path)
    if not worktree.branch.startswith(BRANCH_PREFIX):
        raise GitError(f"{worktree.branch} is not a session branch; it was left alone")
    found = find_checkout(top, path)
    if found is None and os.path.lexists(path):
        raise GitError(f"{path} is not a worktree of {top}; it was left alone")
    if found is not None:
        position, entry = found
        if position == 0:
            raise GitError(f"{path} is the repository's main checkout; it was left alone")
        if entry.branch != worktree.branch:
            raise GitError(
                f"{path} has {entry.branch or 'a detached HEAD'} checked out, not "
                f"{worktree.branch}; it was left alone"
            )
        if entry.locked:
            raise GitError(f"{path} is locked (git worktree unlock to allow it); left alone")
    has_branch = branch_commit(top, worktree.branch) is not None
    if not confirm:
        here = checkout_place(top, path) if found is not None and path.is_dir() else None
        dirty = uncommitted(here) if here is not None else []
        unmerged = _unmerged(top, worktree) if has_branch else 0
        if dirty or unmerged:
            raise UnsafeToDiscard(
                _refusal(path, unmerged, dirty, worktree.base), unmerged=unmerged, dirty=dirty
            )
    with writing(top):
        if found is not None:
            run(["worktree", "remove", "--force", str(path)], cwd=top, what=f"removing {path}")
        if has_branch:
            run(["branch", "-D", worktree.branch], cwd=top, what=f"deleting {worktree.branch}")
    with contextlib.suppress(OSError):  # the repository's folder under root, once empty
        path.parent.rmdir()


def _unmerged(top: Path, worktree: Worktree) -> int:
    """Commits on the worktree's branch that its base does not have (0 when squashed in)."""
    if branch_commit(top, worktree.base) is None:
        out = run(
            ["rev-list", "--count", f"{worktree.base_commit}..refs/heads/{worktree.branch}"],
            cwd=top,
            what=f"counting the commits of {worktree.branch}",
        )
        return int(text(out.stdout).strip())
    if is_merged(top, worktree.branch, worktree.base):
        return 0
    return ahead_behind(top, worktree.branch, worktree.base)[0]


def _refusal(path: Path, unmerged: int, dirty: list[str], base: str) -> str:
    what = []
    if unmerged:
        what.append(f"{counted(unmerged, 'commit')} not merged into {base}")
    if dirty:
        shown = ", ".join(dirty[:10]) + (f" and {len(dirty) - 10} more" if len(dirty) > 10 else "")
        what.append(f"uncommitted changes in {shown}")
    return f"{path} has {' and '.join(what)}; confirm to discard them"
