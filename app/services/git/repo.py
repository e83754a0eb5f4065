"""Running ``git``: one way in, with a clean environment, a timeout and plain-words errors.

Every call goes through :func:`run`. The environment drops what could point git at
another repository or index (``GIT_DIR``, ``GIT_INDEX_FILE``, ``GIT_WORK_TREE``… — a
server started from inside a hook or a ``git rebase -x`` would otherwise act on the wrong
repository), never prompts (no terminal, no pager, no editor), speaks C locale so
messages can be read, and takes no optional locks so a read never rewrites the user's
index behind their back. Hooks are switched off: the app's git operations are
mechanical (a scratch index, a merge built without a working tree) and must neither wait
on a prompt nor run a repository's code on their own.

Everything here blocks; call it from a worker thread, not the event loop.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from app.errors import AppError

__all__ = [
    "TIMEOUT_S",
    "Checkout",
    "GitError",
    "GitResult",
    "NotARepository",
    "branch_commit",
    "checkouts",
    "common_dir",
    "current_branch",
    "head_commit",
    "is_ancestor",
    "repo_root",
    "run",
    "text",
    "uncommitted",
]

TIMEOUT_S = 30.0
# Kept from the server's environment: who the user is and which config files they chose.
# Every other GIT_* variable is dropped (see the module docstring).
KEPT_GIT_VARS = frozenset(
    {
        "GIT_AUTHOR_NAME",
        "GIT_AUTHOR_EMAIL",
        "GIT_COMMITTER_NAME",
        "GIT_COMMITTER_EMAIL",
        "GIT_CONFIG_GLOBAL",
        "GIT_CONFIG_SYSTEM",
        "GIT_CONFIG_NOSYSTEM",
    }
)
FIXED_ENV = {
    "LC_ALL": "C",
    "GIT_TERMINAL_PROMPT": "0",
    "GIT_PAGER": "cat",
    "PAGER": "cat",
    "GIT_EDITOR": "true",
    "GIT_SEQUENCE_EDITOR": "true",
    "GIT_OPTIONAL_LOCKS": "0",
}
DROPPED_VARS = ("LANGUAGE", "SSH_ASKPASS", "EDITOR", "VISUAL")
# Config for every call: no hooks (a path with no files in it), paths in messages unquoted.
FIXED_CONFIG = ("-c", "core.hooksPath=/dev/null", "-c", "core.quotePath=false")

Reason = Literal["missing", "not_a_repository", "bare", "git_dir", "untrusted", "git_missing"]


class GitError(AppError):
    """git refused or failed; ``message`` says what in plain words, ``stderr`` is git's own."""

    status = 409

    def __init__(self, message: str, *, stderr: str = "") -> None:
        super().__init__(message, detail=stderr)
        self.stderr = stderr


class NotARepository(GitError):
    """The folder cannot be used as a git working tree; ``reason`` says why."""

    status = 422

    def __init__(self, message: str, *, reason: Reason, stderr: str = "") -> None:
        super().__init__(message, stderr=stderr)
        self.reason: Reason = reason


@dataclass(frozen=True)
class GitResult:
    returncode: int
    stdout: bytes
    stderr: str


@dataclass(frozen=True)
class Checkout:
    """One entry of ``git worktree list``: the main checkout first, then linked ones."""

    path: Path
    head: str | None
    branch: str | None  # short name; None when detached (or bare)
    bare: bool = False
    locked: bool = False
    prunable: bool = False


def clean_env(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if not (k.startswith("GIT_") and k not in KEPT_GIT_VARS) and k not in DROPPED_VARS
    }
    env.update(FIXED_ENV)
    if extra:
        env.update(extra)
    return env


def run(
    args: Sequence[str],
    *,
    cwd: Path | str,
    what: str,
    input: bytes | None = None,
    env: Mapping[str, str] | None = None,
    ok: Collection[int] = (0,),
    timeout: float = TIMEOUT_S,
) -> GitResult:
    """Run ``git -C cwd ARGS``; ``what`` names the step for the error (``"listing …"``).

    Exit codes outside ``ok`` raise :class:`GitError` carrying git's stderr.
    """
    argv = ["git", *FIXED_CONFIG, "-C", str(cwd), *args]
    try:
        done = subprocess.run(
            argv,
            input=input,
            stdin=None if input is not None else subprocess.DEVNULL,
            capture_output=True,
            env=clean_env(env),
            timeout=timeout,
            check=False,
        )
    except FileNotFoundError:
        raise NotARepository(
            f"{what} failed: git is not installed (no 'git' on PATH)", reason="git_missing"
        ) from None
    except subprocess.TimeoutExpired:
        raise GitError(f"{what} took longer than {timeout:g} s and was stopped") from None
    stderr = text(done.stderr).strip()
    if done.returncode not in ok:
        said = _last_error_line(stderr) or f"git exited with status {done.returncode}"
        raise GitError(f"{what} failed: {said}", stderr=stderr)
    return GitResult(done.returncode, done.stdout, stderr)


def text(raw: bytes) -> str:
    """git's bytes for display: file names that are not UTF-8 get U+FFFD, never an error."""
    return raw.decode("utf-8", "replace")


def _last_error_line(stderr: str) -> str:
    lines = [ln.strip() for ln in stderr.splitlines() if ln.strip()]
    for line in reversed(lines):
        if line.startswith(("fatal:", "error:")):
            return line.split(":", 1)[1].strip()
    return lines[-1] if lines else ""


def repo_root(folder: Path | str) -> Path:
    """The top of the working tree that holds ``folder``; NotARepository says why not."""
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


def common_dir(repo: Path | str) -> Path:
    """The repository's shared .git folder (the same for all its worktrees)."""
    out = run(
        ["rev-parse", "--path-format=absolute", "--git-common-dir"],
        cwd=repo,
        what=f"finding the .git folder of {repo}",
    )
    return Path(text(out.stdout).rstrip("\n"))


def current_branch(repo: Path | str) -> str | None:
    """The branch checked out in ``repo``; None when HEAD is detached."""
    return _answer_or_none(repo, ["symbolic-ref", "--quiet", "--short", "HEAD"], "HEAD's branch")


def head_commit(repo: Path | str) -> str | None:
    """The commit HEAD points at; None in a repository with no commits yet."""
    return _commit_of(repo, "HEAD")


def branch_commit(repo: Path | str, branch: str) -> str | None:
    """The commit a local branch points at; None when there is no such branch."""
    return _commit_of(repo, f"refs/heads/{branch}")


def _commit_of(repo: Path | str, rev: str) -> str | None:
    args = ["rev-parse", "--verify", "--quiet", "--end-of-options", f"{rev}^{{commit}}"]
    return _answer_or_none(repo, args, rev)


def _answer_or_none(repo: Path | str, args: list[str], what: str) -> str | None:
    """git's one-line answer, or None where it exits 1 (no such thing)."""
    out = run(args, cwd=repo, what=f"reading {what} in {repo}", ok=(0, 1))
    if out.returncode != 0:
        return None
    return text(out.stdout).strip() or None


def is_ancestor(repo: Path | str, older: str, newer: str) -> bool:
    out = run(
        ["merge-base", "--is-ancestor", older, newer],
        cwd=repo,
        what=f"comparing {older} with {newer}",
        ok=(0, 1),
    )
    return out.returncode == 0


def checkouts(repo: Path | str) -> list[Checkout]:
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


def uncommitted(worktree: Path | str) -> list[str]:
    """Files with changes not committed in ``worktree``: edited, staged, new (not ignored)."""
    out = run(
        ["status", "--porcelain=v1", "-z", "--untracked-files=normal", "--no-renames"],
        cwd=worktree,
        what=f"reading the status of {worktree}",
    )
    return [text(entry[3:]) for entry in out.stdout.split(b"\0") if len(entry) > 3]
