"""Running ``git``: one way in, with a clean environment, a timeout and plain-words errors.

Every call goes through :func:`run`. The environment drops what could point git at
another repository or index (``GIT_DIR``, ``GIT_INDEX_FILE``, ``GIT_WORK_TREE``… — a
server started from inside a hook or a ``git rebase -x`` would otherwise act on the wrong
repository), never prompts (no terminal, no pager, no editor), speaks C locale so
messages can be read, and takes no optional locks so a read never rewrites the user's
index behind their back. Hooks are switched off: the app's git operations are
mechanical (a scratch index, a merge built without a working tree) and must neither wait
on a prompt nor run a repository's code on their own.

A repository's own config, its ``.gitattributes`` and a ``.git`` file in a folder are
written by whoever can write the repository, which includes the agent. So git is never
asked to find the repository from a session's folder: it is handed the git dir and work
tree the app recorded (a :class:`GitPlace`, passed as ``GIT_DIR``/``GIT_WORK_TREE``), and
nothing the repository says can make it run a program: fsmonitor, signing, submodule
recursion and gc are switched off on the command line, and every clean, smudge or process
filter and merge driver the config defines is overridden to nothing (see ``run``).

Everything here blocks; call it from a worker thread, not the event loop.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import threading
import time
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from app.errors import AppError

__all__ = [
    "TIMEOUT_S",
    "GitError",
    "GitPlace",
    "GitResult",
    "NotARepository",
    "Reason",
    "Where",
    "clean_env",
    "run",
    "text",
]

TIMEOUT_S = 30.0
# How often a run that may be stopped looks whether it was.
STOP_POLL_S = 0.05
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
# Config for every call, above anything the repository's own config says: nothing that
# runs a program (hooks: a path with no files in it; fsmonitor; signing, and verifying
# signatures in a log; gc; a transport to anywhere), no recursion into submodules or nested
# repositories, and paths in messages unquoted. Given with -c, git passes it on to the git
# processes it starts itself (in a submodule, say).
FIXED_CONFIG = tuple(
    arg
    for setting in (
        "core.hooksPath=/dev/null",
        "core.fsmonitor=false",
        "core.quotePath=false",
        "core.pager=cat",
        "commit.gpgSign=false",
        "tag.gpgSign=false",
        "log.showSignature=false",
        "merge.verifySignatures=false",
        "submodule.recurse=false",
        "status.submoduleSummary=false",
        "diff.ignoreSubmodules=dirty",
        "gc.auto=0",
        "maintenance.auto=false",
        "protocol.allow=never",
    )
    for arg in ("-c", setting)
)
# The config keys that name a program git runs on a file's content (see _driver_overrides).
DRIVER_KEYS = r"^(filter|merge)\..+\.(clean|smudge|process|driver)$"

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
class GitPlace:
    """A git dir and its work tree as the app recorded them; git gets both and finds
    nothing by itself (so a ``.git`` file or folder written later into the work tree is
    never read). Shown as the work tree in messages."""

    git_dir: Path
    work_tree: Path

    def __str__(self) -> str:
        return str(self.work_tree)


# Where git runs: a recorded place, or (for the user's own folder at a session's start,
# and the user's repository) a folder git finds the repository from.
Where = Path | str | GitPlace


@dataclass(frozen=True)
class GitResult:
    returncode: int
    stdout: bytes
    stderr: str


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
    cwd: Where,
    what: str,
    input: bytes | None = None,
    env: Mapping[str, str] | None = None,
    ok: Collection[int] = (0,),
    timeout: float = TIMEOUT_S,
    nice: bool = False,
    stop: threading.Event | None = None,
) -> GitResult:
    """Run ``git -C cwd ARGS``; ``what`` names the step for the error (``"listing …"``).

    A :class:`GitPlace` ``cwd`` runs git on that git dir and work tree alone; ``nice``
    runs it at a lower priority (work done beside the user's own); setting ``stop``
    ends git early (work nobody waits for any more) with a :class:`GitError`. Exit codes
    outside ``ok`` raise :class:`GitError` carrying git's stderr.
    """
    extra = dict(env or {})
    folder = cwd
    if isinstance(cwd, GitPlace):
        extra |= {"GIT_DIR": str(cwd.git_dir), "GIT_WORK_TREE": str(cwd.work_tree)}
        folder = cwd.work_tree
    # Any command that reads the index may hash a file again (a "racy" entry; even
    # write-tree does), and hashing runs the clean filter: every call gets the overrides.
    extra |= _driver_overrides(str(folder), extra, what, timeout)
    argv = ["git", *FIXED_CONFIG, "-C", str(folder), *args]
    if nice and shutil.which("nice"):
        argv = ["nice", "-n", "10", *argv]
    done = _spawn(argv, extra, input, what, timeout, stop)
    stderr = text(done.stderr).strip()
    if done.returncode not in ok:
        said = _last_error_line(stderr) or f"git exited with status {done.returncode}"
        raise GitError(f"{what} failed: {said}", stderr=stderr)
    return GitResult(done.returncode, done.stdout, stderr)


def _driver_overrides(
    folder: str, env: Mapping[str, str], what: str, timeout: float
) -> dict[str, str]:
    """Config that switches off every filter and merge driver git's config defines now.

    A ``.gitattributes`` line names a driver and the config says which program it runs;
    the names cannot be known in advance, so they are read from the config (every file
    git would read, includes too) and each program is overridden: a filter by nothing (a
    file is then stored and checked out as it is; a filter marked required fails instead),
    a merge driver by ``false`` (its files then show as a conflict). They are passed as
    ``GIT_CONFIG_KEY_n`` pairs, which take any driver name, and reach git's children.
    """
    listed = _spawn(
        ["git", *FIXED_CONFIG, "-C", folder, "config", "--null", "--name-only"]
        + ["--get-regexp", DRIVER_KEYS],
        env,
        None,
        what,
        timeout,
    )
    if listed.returncode not in (0, 1):
        raise GitError(
            f"{what} failed: git could not read the repository's config",
            stderr=text(listed.stderr).strip(),
        )
    names = sorted({text(n) for n in listed.stdout.split(b"\0") if n})
    pairs = [(name, "false" if name.startswith("merge.") else "") for name in names]
    out = {"GIT_CONFIG_COUNT": str(len(pairs))}
    for i, (key, value) in enumerate(pairs):
        out[f"GIT_CONFIG_KEY_{i}"] = key
        out[f"GIT_CONFIG_VALUE_{i}"] = value
    return out if pairs else {}


def _spawn(
    argv: list[str],
    env: Mapping[str, str],
    input: bytes | None,
    what: str,
    timeout: float,
    stop: threading.Event | None = None,
) -> subprocess.CompletedProcess[bytes]:
    try:
        if stop is not None:
            return _stoppable(argv, env, input, what, timeout, stop)
        return subprocess.run(
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


def _stoppable(
    argv: list[str],
    env: Mapping[str, str],
    input: bytes | None,
    what: str,
    timeout: float,
    stop: threading.Event,
) -> subprocess.CompletedProcess[bytes]:
    """``subprocess.run`` that also ends git once ``stop`` is set (checked every 50 ms)."""
    with subprocess.Popen(
        argv,
        stdin=subprocess.PIPE if input is not None else subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=clean_env(env),
    ) as proc:
        deadline = time.monotonic() + timeout
        sent = input
        while True:
            try:
                out, err = proc.communicate(sent, timeout=STOP_POLL_S)
                return subprocess.CompletedProcess(argv, proc.returncode, out, err)
            except subprocess.TimeoutExpired:
                # communicate() keeps what it has read and sent; it is only called again.
                sent = None
                if time.monotonic() > deadline:
                    proc.kill()
                    proc.communicate()
                    raise
                if stop.is_set():
                    proc.kill()
                    proc.communicate()
                    raise GitError(f"{what} was stopped: nobody needs it any more") from None


def text(raw: bytes) -> str:
    """git's bytes for display: file names that are not UTF-8 get U+FFFD, never an error."""
    return raw.decode("utf-8", "replace")


def _last_error_line(stderr: str) -> str:
    lines = [ln.strip() for ln in stderr.splitlines() if ln.strip()]
    for line in reversed(lines):
        if line.startswith(("fatal:", "error:")):
            return line.split(":", 1)[1].strip()
    return lines[-1] if lines else ""
