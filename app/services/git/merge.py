"""Committing a session's work and merging its branch into the branch it started from.

A merge is built without touching any working tree: ``git merge-tree --write-tree`` gives
the merged tree (or the conflicting files, in which case nothing has changed anywhere),
``git commit-tree`` makes the commit. Only then does the target branch move: where it is
checked out (the user's own checkout, or any worktree) by ``git merge --ff-only`` run
there, so git itself refuses when that would overwrite uncommitted work, and only once no
file git does not track there is in the way (``overwrite``: git would replace an ignored
``.env`` without a word); where it is checked out nowhere by ``git update-ref`` with the
old value, so a branch that moved in the meantime is left alone.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from app.errors import ValidationFailed
from app.services.git.overwrite import untracked_in_the_way
from app.services.git.repo import (
    GitError,
    Where,
    branch_commit,
    checkout_place,
    checkouts,
    current_branch,
    is_ancestor,
    run,
    text,
)
from app.services.git.strategies import (
    STRATEGIES,
    Strategy,
    StrategyNotPossible,
    fast_forward_blocked,
)
from app.wording import counted

__all__ = [
    "APP_EMAIL",
    "APP_NAME",
    "LocalChanges",
    "MergeConflict",
    "MergeResult",
    "Strategy",
    "StrategyNotPossible",
    "UntrackedInTheWay",
    "ahead_behind",
    "commit",
    "conflicts",
    "identity_args",
    "is_merged",
    "merge",
    "merge_base",
]

# Used only when the repository names no author: commits must still be possible.
APP_NAME = "Angelia"
APP_EMAIL = "angelia@localhost"
MAX_MESSAGE_CHARS = 65_536


class MergeConflict(GitError):
    """Both sides changed the same lines; ``files`` are the ones that conflict."""

    def __init__(self, message: str, files: list[str]) -> None:
        super().__init__(message)
        self.files = files


class LocalChanges(GitError):
    """Moving the branch would overwrite uncommitted work in ``checkout``; ``files`` are it."""

    def __init__(self, message: str, checkout: Path, files: list[str], stderr: str) -> None:
        super().__init__(message, stderr=stderr)
        self.checkout = checkout
        self.files = files


class UntrackedInTheWay(LocalChanges):
    """Moving the branch would write over files ``checkout`` does not track (ignored or
    untracked ones, which git would replace for good); ``files`` are them."""

    def __init__(self, into: str, checkout: Path, files: list[str]) -> None:
        super().__init__(
            f"{into} is checked out in {checkout}, where the merge would write over "
            f"{counted(len(files), 'file')} git does not track there (ignored or untracked): "
            f"{', '.join(files)}; move them out of that checkout (or delete the ones you "
            "do not need), or have the session's branch leave them out, then merge again "
            "(nothing was changed)",
            checkout,
            files,
            "",
        )


@dataclass(frozen=True)
class MergeResult:
    commit: str  # the new tip of the target branch
    previous: str  # its tip before the merge
    strategy: Strategy
    checkout: Path | None  # the checkout where the branch was advanced, if it is checked out


def ahead_behind(repo: Where, branch: str, base: str) -> tuple[int, int]:
    """(commits on ``branch`` not on ``base``, commits on ``base`` not on ``branch``)."""
    out = run(
        ["rev-list", "--left-right", "--count", f"refs/heads/{base}...refs/heads/{branch}"],
        cwd=repo,
        what=f"counting the commits between {base} and {branch}",
    )
    behind, ahead = text(out.stdout).split()
    return int(ahead), int(behind)


def merge_base(repo: Where, branch: str, into: str) -> str | None:
    """The commit where ``branch`` and ``into`` last met: what merging ``branch`` into
    ``into`` brings is everything since it. None when either branch is gone or they
    share no history."""
    out = run(
        ["merge-base", f"refs/heads/{branch}", f"refs/heads/{into}"],
        cwd=repo,
        what=f"finding where {branch} and {into} meet",
        ok=(0, 1, 128),
    )
    found = text(out.stdout).strip()
    return found if out.returncode == 0 and found else None


def _merge_tree(repo: Where, into: str, branch: str) -> tuple[str, list[str]]:
    """The merged tree of two branches and the files that conflict (empty when none)."""
    out = run(
        [
            "merge-tree",
            "--write-tree",
            "--name-only",
            "--no-messages",
            "-z",
            f"refs/heads/{into}",
            f"refs/heads/{branch}",
        ],
        cwd=repo,
        what=f"merging {branch} into {into} (without touching any files)",
        ok=(0, 1),
    )
    tree, *rest = out.stdout.split(b"\0")
    files = list(dict.fromkeys(text(name) for name in rest if name))
    return text(tree), files if out.returncode == 1 else []


def conflicts(repo: Where, branch: str, into: str) -> list[str]:
    """The files that would conflict if ``branch`` were merged into ``into`` now."""
    return _merge_tree(repo, into, branch)[1]


def is_merged(repo: Where, branch: str, into: str) -> bool:
    """True when ``into`` already has everything ``branch`` changed (by ff, merge or squash)."""
    if is_ancestor(repo, f"refs/heads/{branch}", f"refs/heads/{into}"):
        return True
    tree, files = _merge_tree(repo, into, branch)
    return not files and tree == _tree_of(repo, f"refs/heads/{into}")


def _tree_of(repo: Where, rev: str) -> str:
    out = run(["rev-parse", f"{rev}^{{tree}}"], cwd=repo, what=f"reading the tree of {rev}")
    return text(out.stdout).strip()


def identity_args(repo: Where) -> list[str]:
    """``-c user.*`` options naming the app, for what the repository's config leaves unset."""
    args: list[str] = []
    for key, fallback in (("user.name", APP_NAME), ("user.email", APP_EMAIL)):
        got = run(["config", "--get", key], cwd=repo, what=f"reading {key}", ok=(0, 1))
        if not text(got.stdout).strip():
            args += ["-c", f"{key}={fallback}"]
    return args


def _check_message(message: str) -> str:
    cleaned = message.strip()
    if not cleaned:
        raise ValidationFailed("message", "is empty; say what the commit does")
    if "\0" in cleaned:
        raise ValidationFailed("message", "contains a NUL character, which git cannot store")
    if len(cleaned) > MAX_MESSAGE_CHARS:
        raise ValidationFailed(
            "message", f"is {len(cleaned):,} characters long; at most {MAX_MESSAGE_CHARS:,}"
        )
    return cleaned


def commit(worktree: Where, message: str, *, branch: str | None = None) -> str:
    """Commit everything in ``worktree`` (edits, deletions, new files) onto ``branch``
    (by default the branch checked out there); the new commit.

    Built from plumbing so that only that branch moves, by compare-and-swap from the
    commit it was at: HEAD is never asked where to commit, and a worktree whose HEAD
    names another branch is refused, so no other checkout's branch can be moved.
    """
    cleaned = _check_message(message)
    held = current_branch(worktree)
    branch = held if branch is None else branch
    if branch is None or held != branch:
        raise GitError(
            f"{worktree} has {held or 'a detached HEAD'} checked out, not {branch}; "
            "nothing was committed"
        )
    parent = branch_commit(worktree, branch)
    run(["add", "-A"], cwd=worktree, what=f"staging the changes in {worktree}")
    tree = text(run(["write-tree"], cwd=worktree, what="recording what is staged").stdout).strip()
    if parent is not None and tree == _tree_of(worktree, parent):
        raise GitError(f"there is nothing to commit in {worktree}: it has no changes")
    # Tidied as ``git commit -F`` would (trailing spaces, blank lines, a final newline).
    tidy = run(["stripspace"], cwd=worktree, input=cleaned.encode(), what="tidying the message")
    made = run(
        [*identity_args(worktree), "commit-tree", tree, *(["-p", parent] if parent else [])],
        cwd=worktree,
        input=tidy.stdout,
        what=f"committing in {worktree}",
    )
    new = text(made.stdout).strip()
    run(
        ["update-ref", "-m", f"commit: {cleaned.splitlines()[0]}", f"refs/heads/{branch}", new]
        + [parent or "0" * len(new)],
        cwd=worktree,
        what=f"moving {branch} to the new commit (it changed meanwhile if this fails; try again)",
    )
    return new


def merge(
    repo: Where,
    branch: str,
    into: str,
    strategy: Strategy,
    *,
    message: str | None = None,
) -> MergeResult:
    """Merge ``branch`` into ``into``; raises and changes nothing on a conflict or refusal."""
    if strategy not in STRATEGIES:
        raise ValidationFailed("strategy", f"must be one of {', '.join(STRATEGIES)}")
    old = branch_commit(repo, into)
    tip = branch_commit(repo, branch)
    for name, sha in ((into, old), (branch, tip)):
        if sha is None:
            raise GitError(f"there is no branch {name} in {repo}")
    assert old is not None and tip is not None
    if is_merged(repo, branch, into):
        raise GitError(f"nothing to merge: {into} already has every change of {branch}")
    if strategy == "ff":
        if not is_ancestor(repo, old, tip):
            behind = ahead_behind(repo, branch, into)[1]
            raise StrategyNotPossible(
                "ff",
                f"{into} cannot be fast-forwarded to {branch}: "
                f"{fast_forward_blocked(into, behind)}; merge or squash instead "
                "(nothing was changed)",
            )
        new = tip
    else:
        tree, files = _merge_tree(repo, into, branch)
        if files:
            raise MergeConflict(
                f"{branch} conflicts with {into} in {counted(len(files), 'file')}: "
                f"{', '.join(files)}; nothing was changed",
                files,
            )
        new = _commit_tree(repo, tree, old, tip, branch, into, strategy, message)
    where = _advance(repo, into, old, new)
    return MergeResult(commit=new, previous=old, strategy=strategy, checkout=where)


def _commit_tree(
    repo: Where,
    tree: str,
    old: str,
    tip: str,
    branch: str,
    into: str,
    strategy: Strategy,
    message: str | None,
) -> str:
    parents = ["-p", old] if strategy == "squash" else ["-p", old, "-p", tip]
    if message is None:
        message = _default_message(repo, old, tip, branch, into, strategy)
    out = run(
        [*identity_args(repo), "commit-tree", tree, *parents],
        cwd=repo,
        input=_check_message(message).encode(),
        what=f"making the merge commit of {branch} into {into}",
    )
    return text(out.stdout).strip()


def _default_message(
    repo: Where, old: str, tip: str, branch: str, into: str, strategy: Strategy
) -> str:
    if strategy == "merge":
        return f"Merge branch '{branch}' into {into}"
    out = run(
        ["log", "--reverse", "--format=%s", f"{old}..{tip}"],
        cwd=repo,
        what=f"reading the commits of {branch}",
    )
    subjects = [f"* {s}" for s in text(out.stdout).splitlines() if s.strip()]
    return "\n".join([f"Squashed commits of branch '{branch}'", "", *subjects])


def _advance(repo: Where, into: str, old: str, new: str) -> Path | None:
    """Move ``into`` from ``old`` to ``new`` without losing anyone's work; where it was out."""
    holder = next((c for c in checkouts(repo) if c.branch == into and not c.bare), None)
    if holder is None:
        run(
            ["update-ref", "-m", f"angelia: merge into {into}", f"refs/heads/{into}", new, old],
            cwd=repo,
            what=f"moving {into} to the merge (it changed meanwhile if this fails; try again)",
        )
        return None
    if holder.prunable or not holder.path.is_dir():
        raise GitError(
            f"{into} is checked out in {holder.path}, which no longer exists; "
            "run 'git worktree prune' there and try again"
        )
    place = checkout_place(repo, holder.path)
    in_the_way = untracked_in_the_way(place, old, new)
    if in_the_way:
        raise UntrackedInTheWay(into, holder.path, in_the_way)
    moved = run(
        ["merge", "--ff-only", "--no-autostash", "--quiet", "--no-stat", new],
        cwd=place,
        what=f"updating {into} in {holder.path}",
        ok=(0, 1, 128),
    )
    if moved.returncode != 0:
        files = [ln.strip() for ln in moved.stderr.splitlines() if ln.startswith("\t")]
        if files:
            raise LocalChanges(
                f"{into} is checked out in {holder.path} with uncommitted changes the merge "
                f"would overwrite: {', '.join(files)}; commit or stash them there, then merge "
                "again (nothing was changed)",
                holder.path,
                files,
                moved.stderr,
            )
        raise GitError(
            f"{into} could not be updated in {holder.path} (nothing was changed): "
            f"{moved.stderr.splitlines()[-1] if moved.stderr else 'git refused'}",
            stderr=moved.stderr,
        )
    return holder.path
