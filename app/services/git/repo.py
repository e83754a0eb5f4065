"""The repository behind a folder: its top, its .git, its branches and checkouts, and
whether a linked worktree still points where git made it.

git itself runs through :mod:`app.services.git.command` (re-exported here, as the rest of
the app has always imported it from this module). Everything here blocks; call it from a
worker thread, not the event loop.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import overload

from app.services.git.command import (
    TIMEOUT_S,
    GitError,
    GitPlace,
    GitResult,
    NotARepository,
    Where,
    run,
    text,
)

__all__ = [
    "TIMEOUT_S",
    "Checkout",
    "GitError",
    "GitPlace",
    "GitResult",
    "NotARepository",
    "Where",
    "WorktreeChanged",
    "branch_commit",
    "checkout_place",
    "checkouts",
    "common_dir",
    "current_branch",
    "git_dir",
    "head_commit",
    "is_ancestor",
    "repo_root",
    "run",
    "text",
    "uncommitted",
    "verify_worktree",
    "worktree_admin_dir",
    "worktree_pointer",
]

# The longest .git file or back-pointer read when checking a worktree.
MAX_POINTER_BYTES = 4096


class WorktreeChanged(GitError):
    """A worktree's ``.git`` (or its admin folder) no longer points where the app made it."""


@dataclass(frozen=True)
class Checkout:
    """One entry of ``git worktree list``: the main checkout first, then linked ones."""

    path: Path
    head: str | None
    branch: str | None  # short name; None when detached (or bare)
    bare: bool = False
    locked: bool = False
    prunable: bool = False


@overload
def repo_root(folder: GitPlace) -> GitPlace: ...
@overload
def repo_root(folder: Path | str) -> Path: ...
def repo_root(folder: Where) -> Path | GitPlace:
    """The top of the working tree that holds ``folder``; NotARepository says why not.

    A recorded place is its own top: it is returned as it is once its work tree is there.
    """
    if isinstance(folder, GitPlace):
        if not folder.work_tree.is_dir():
            raise NotARepository(
                f"{folder.work_tree} does not exist or is not a folder", reason="missing"
            )
        return folder
    path = Path(folder)
    if not path.is_dir():
        raise NotARepository(f"{folder} does not exist or is not a folder", reason="missing")
    where = f"looking for a git repository at {folder}"
    probe = run(
        ["rev-parse", "--is-bare-repository", "--is-inside-git-dir"],
        cwd=path,
        what=where,
        ok=(0, 128),
    )
    if probe.returncode != 0:
        if "dubious ownership" in probe.stderr:
            raise NotARepository(
                f"{folder} is in a git repository owned by another user, which git will not "
                "work in (see git config safe.directory)",
                reason="untrusted",
                stderr=probe.stderr,
            )
        raise NotARepository(
            f"{folder} is not inside a git repository",
            reason="not_a_repository",
            stderr=probe.stderr,
        )
    bare, inside_git_dir = text(probe.stdout).split()
    if bare == "true":
        raise NotARepository(
            f"{folder} is a bare git repository: it has no working tree to run a session in",
            reason="bare",
        )
    if inside_git_dir == "true":
        raise NotARepository(
            f"{folder} is inside a repository's .git folder, not its working tree",
            reason="git_dir",
        )
    top = run(["rev-parse", "--show-toplevel"], cwd=path, what=where)
    return Path(text(top.stdout).rstrip("\n"))


def common_dir(repo: Where) -> Path:
    """The repository's shared .git folder (the same for all its worktrees)."""
    out = run(
        ["rev-parse", "--path-format=absolute", "--git-common-dir"],
        cwd=repo,
        what=f"finding the .git folder of {repo}",
    )
    return Path(text(out.stdout).rstrip("\n"))


def current_branch(repo: Where) -> str | None:
    """The branch checked out in ``repo``; None when HEAD is detached."""
    return _answer_or_none(repo, ["symbolic-ref", "--quiet", "--short", "HEAD"], "HEAD's branch")


def head_commit(repo: Where) -> str | None:
    """The commit HEAD points at; None in a repository with no commits yet."""
    return _commit_of(repo, "HEAD")


def branch_commit(repo: Where, branch: str) -> str | None:
    """The commit a local branch points at; None when there is no such branch."""
    return _commit_of(repo, f"refs/heads/{branch}")


def _commit_of(repo: Where, rev: str) -> str | None:
    args = ["rev-parse", "--verify", "--quiet", "--end-of-options", f"{rev}^{{commit}}"]
    return _answer_or_none(repo, args, rev)


def _answer_or_none(repo: Where, args: list[str], what: str) -> str | None:
    """git's one-line answer, or None where it exits 1 (no such thing)."""
    out = run(args, cwd=repo, what=f"reading {what} in {repo}", ok=(0, 1))
    if out.returncode != 0:
        return None
    return text(out.stdout).strip() or None


def is_ancestor(repo: Where, older: str, newer: str) -> bool:
    out = run(
        ["merge-base", "--is-ancestor", older, newer],
        cwd=repo,
        what=f"comparing {older} with {newer}",
        ok=(0, 1),
    )
    return out.returncode == 0


def checkouts(repo: Where) -> list[Checkout]:
    """Every working tree of the repository, as ``git worktree list`` has them."""
    out = run(
        ["worktree", "list", "--porcelain", "-z"], cwd=repo, what=f"listing the worktrees of {repo}"
    )
    found: list[Checkout] = []
    for record in out.stdout.split(b"\0\0"):
        fields: dict[str, str] = {}
        for line in record.split(b"\0"):
            key, _, value = text(line).partition(" ")
            if key:
                fields[key] = value
        if "worktree" not in fields:
            continue
        branch = fields.get("branch")
        found.append(
            Checkout(
                path=Path(fields["worktree"]),
                head=fields.get("HEAD"),
                branch=branch.removeprefix("refs/heads/") if branch else None,
                bare="bare" in fields,
                locked="locked" in fields,
                prunable="prunable" in fields,
            )
        )
    return found


def uncommitted(worktree: Where) -> list[str]:
    """Files with changes not committed in ``worktree``: edited, staged, new (not ignored)."""
    out = run(
        [
            "status",
            "--porcelain=v1",
            "-z",
            "--untracked-files=normal",
            "--no-renames",
            # A nested repository's own files are its business: reading them would run
            # git in it, under its own config.
            "--ignore-submodules=dirty",
        ],
        cwd=worktree,
        what=f"reading the status of {worktree}",
    )
    return [text(entry[3:]) for entry in out.stdout.split(b"\0") if len(entry) > 3]


def git_dir(top: Path | str) -> Path:
    """The git dir of the working tree at ``top`` (its ``.git``, or a linked worktree's
    admin folder), as git finds it now: what a session records when it starts."""
    out = run(["rev-parse", "--absolute-git-dir"], cwd=top, what=f"finding the .git of {top}")
    return Path(text(out.stdout).rstrip("\n"))


def worktree_admin_dir(common: Path, path: Path) -> Path | None:
    """The admin folder (``<common>/worktrees/<name>``) whose back-pointer names the
    linked worktree at ``path``; None when the repository has none for it."""
    wanted = os.path.realpath(path / ".git")
    try:
        entries = sorted((common / "worktrees").iterdir())
    except OSError:
        return None
    for admin in entries:
        back = _pointer(admin / "gitdir")
        if back is not None and os.path.realpath(_resolve(admin, back)) == wanted:
            return admin
    return None


def worktree_pointer(work_tree: Path) -> Path | None:
    """The git dir a linked worktree's ``.git`` file names; None when it is not such a
    file (a folder, a link, missing). Read from the file: nothing is trusted by this."""
    dot_git = work_tree / ".git"
    line = None if dot_git.is_symlink() else _pointer(dot_git)
    if line is None or not line.startswith("gitdir:"):
        return None
    return _resolve(work_tree, line.removeprefix("gitdir:").strip())


def checkout_place(repo: Where, path: Path) -> GitPlace:
    """The git dir and work tree of ``repo``'s checkout at ``path``: its main checkout
    (the shared .git) or a linked worktree (its admin folder, checked like a session's)."""
    common = Path(os.path.realpath(common_dir(repo)))
    admin = worktree_admin_dir(common, path)
    if admin is not None:
        place = GitPlace(admin, path)
        verify_worktree(place)
        return place
    entries = checkouts(repo)
    if entries and os.path.realpath(entries[0].path) == os.path.realpath(path):
        return GitPlace(common, path)
    raise GitError(f"{path} is not a checkout of {repo}; nothing was changed there")


def verify_worktree(place: GitPlace) -> None:
    """Refuse (:class:`WorktreeChanged`, 409) a linked worktree whose ``.git`` file, or whose
    admin folder's ``gitdir`` and ``commondir``, no longer say what git wrote when the app
    made it: someone re-pointed it, and git would read another repository's config."""
    dot_git = place.work_tree / ".git"
    admin = place.git_dir
    target = worktree_pointer(place.work_tree)
    if target is None:
        raise WorktreeChanged(
            f"the worktree's .git was changed: {dot_git} is no longer the file that points "
            f"to {admin}; the app runs no git in it"
        )
    if os.path.realpath(target) != os.path.realpath(admin):
        raise WorktreeChanged(
            f"the worktree's .git was changed: it points to {target} instead of {admin}; "
            "the app runs no git in it"
        )
    back = _pointer(admin / "gitdir")
    named = _resolve(admin, back) if back else None
    if named is None or os.path.realpath(named) != os.path.realpath(dot_git):
        raise WorktreeChanged(
            f"the worktree's admin folder {admin} was changed: it names {named or 'nothing'} "
            f"instead of {dot_git}; the app runs no git in it"
        )
    common = _pointer(admin / "commondir")
    shared = _resolve(admin, common) if common else None
    if shared is None or os.path.realpath(shared) != os.path.realpath(admin.parent.parent):
        raise WorktreeChanged(
            f"the worktree's admin folder {admin} was changed: its repository is "
            f"{shared or 'missing'} instead of {admin.parent.parent}; the app runs no git in it"
        )


def _pointer(path: Path) -> str | None:
    """The one line of a small pointer file git wrote; None when it is not such a file."""
    try:
        if path.is_symlink() or not path.is_file():
            return None
        with path.open("rb") as f:
            raw = f.read(MAX_POINTER_BYTES + 1)
    except OSError:
        return None
    if len(raw) > MAX_POINTER_BYTES or b"\0" in raw:
        return None
    return raw.decode("utf-8", "surrogateescape").strip() or None


def _resolve(base: Path, named: str) -> Path:
    return Path(os.path.normpath(base / named))
