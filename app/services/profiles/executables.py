"""Running an agent's executable to ask its version, and checking a path the user typed.

The wizard's "I have it elsewhere" takes a path from the browser and runs it, so the path
is hostile input: it is never given to a shell, only an absolute path to a regular
executable file is run, with ``--version`` alone, no stdin, a small environment, a time
limit and a cap on what is read back. The detector's probes of names found on PATH go
through the same runner.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import stat
from collections.abc import Mapping
from dataclasses import dataclass

from app.errors import AppError

VERSION_TIMEOUT_S = 3.0
# A version is one short line; a program that prints more is cut off here and stopped.
MAX_OUTPUT_BYTES = 8192
MAX_PATH_CHARS = 4096
MAX_VERSION_CHARS = 200
# What a version probe inherits: enough for a script's interpreter and its locale, and
# none of the server's other variables (tokens, API keys).
KEPT_VARS = ("HOME", "USER", "LOGNAME", "LANG", "LC_ALL", "LC_CTYPE", "TMPDIR")


class ExecutableRefused(AppError):
    """A typed path that cannot be used as the agent; the message says why."""

    status = 422


@dataclass(frozen=True)
class VersionAnswer:
    """What ``--version`` gave: the first line it printed, or why there is none."""

    version: str | None
    error: str | None
    # The OS refused to start it (bad interpreter, no permission, not a program).
    spawn_failed: bool = False
    timed_out: bool = False
    # It printed more than a version line and was stopped.
    flooded: bool = False
    exit_status: int | None = 0


@dataclass(frozen=True)
class CheckedExecutable:
    path: str
    version: str


def probe_env(executable: str, path: str | None = None) -> dict[str, str]:
    """The environment a version probe runs in: a few of the server's variables, and a
    PATH that starts with the executable's own folder, where a ``#!/usr/bin/env node``
    script installed by a version manager finds its interpreter, then ``path`` (the
    one it was found on), then the server's."""
    env = {k: os.environ[k] for k in KEPT_VARS if k in os.environ}
    folders = [os.path.dirname(executable)]
    for search in (path, os.environ.get("PATH", os.defpath)):
        folders += (search or "").split(os.pathsep)
    env["PATH"] = os.pathsep.join(dict.fromkeys(f for f in folders if f))
    env["NO_COLOR"] = "1"
    return env


async def ask_version(
    executable: str, *, timeout_s: float, env: Mapping[str, str] | None = None
) -> VersionAnswer:
    """Run ``executable --version`` (no shell) and read at most ``MAX_OUTPUT_BYTES``.

    The child gets a session of its own, so a timeout or a flood of output stops it and
    whatever it started."""
    try:
        proc = await asyncio.create_subprocess_exec(
            executable,
            "--version",
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.STDOUT,
            start_new_session=True,
            env=dict(env) if env is not None else None,
        )
    except OSError as exc:
        return VersionAnswer(None, f"cannot run it: {exc.strerror or exc}", spawn_failed=True)
    assert proc.stdout is not None
    try:
        async with asyncio.timeout(timeout_s):
            out = await _read_at_most(proc.stdout, MAX_OUTPUT_BYTES)
            flooded = len(out) >= MAX_OUTPUT_BYTES
            if flooded:
                _stop(proc.pid)
                # Read what was already in the pipe (bounded: the program is dead) so the
                # paused pipe sees its end; until then the process does not count as done.
                while await proc.stdout.read(65536):
                    pass
            await proc.wait()
    except TimeoutError:
        _stop(proc.pid)
        # Bounded too: a child that left the process group may still hold the pipe.
        with contextlib.suppress(Exception):
            await asyncio.wait_for(proc.wait(), 1.0)
        return VersionAnswer(
            None,
            f"`--version` did not answer within {timeout_s:g} s",
            timed_out=True,
            exit_status=None,
        )
    if flooded:
        error = f"`--version` printed more than {MAX_OUTPUT_BYTES} bytes"
        return VersionAnswer(None, error, flooded=True, exit_status=None)
    lines = out.decode("utf-8", "replace").strip().splitlines()
    first = lines[0].strip() if lines else ""
    if proc.returncode != 0:
        return VersionAnswer(
            None, f"`--version` exited with {proc.returncode}", exit_status=proc.returncode
        )
    return VersionAnswer(first[:MAX_VERSION_CHARS], None)


async def check_executable(
    typed: str, *, timeout_s: float = VERSION_TIMEOUT_S
) -> CheckedExecutable:
    """The typed path and its version, when it is an executable that answers ``--version``.

    Raises:
        ExecutableRefused: with a message that says what is wrong with the path.
    """
    path = _checked_path(typed)
    try:
        info = os.stat(path)
    except FileNotFoundError:
        raise ExecutableRefused(f"Not found: there is no file at {path}.") from None
    except OSError as exc:
        raise ExecutableRefused(f"Not found: {path} cannot be read ({exc.strerror}).") from None
    if stat.S_ISDIR(info.st_mode):
        raise ExecutableRefused(f"Not executable: {path} is a folder; give the program in it.")
    if not stat.S_ISREG(info.st_mode):
        raise ExecutableRefused(f"Not executable: {path} is not a regular file.")
    if not os.access(path, os.X_OK):
        raise ExecutableRefused(
            f"Not executable: {path} has no execute permission (chmod +x, or give the "
            "program itself)."
        )
    answer = await ask_version(path, timeout_s=timeout_s, env=probe_env(path))
    if answer.spawn_failed:
        reason = (answer.error or "").removeprefix("cannot run it: ")
        raise ExecutableRefused(f"Not executable: the system would not start {path} ({reason}).")
    if answer.timed_out:
        raise ExecutableRefused(
            f"Did not answer: `{path} --version` printed nothing within {timeout_s:g} s."
        )
    if answer.flooded:
        raise ExecutableRefused(
            f"Printed no version: `{path} --version` printed more than "
            f"{MAX_OUTPUT_BYTES} bytes without stopping."
        )
    if answer.exit_status != 0:
        raise ExecutableRefused(
            f"Printed no version: `{path} --version` exited with status {answer.exit_status}."
        )
    # What a typed program printed goes back to a page: without terminal escapes.
    version = _printable(answer.version or "")
    if not any(c.isdigit() for c in version):
        said = f'printed "{version}", which has no version number' if version else "printed nothing"
        raise ExecutableRefused(f"Printed no version: `{path} --version` {said}.")
    return CheckedExecutable(path, version)


def _checked_path(typed: str) -> str:
    if not typed:
        raise ExecutableRefused("Type the full path of the agent's executable.")
    if "\0" in typed:
        raise ExecutableRefused("The path contains a NUL character; no file is named so.")
    try:
        typed.encode()
    except UnicodeEncodeError:
        # A lone surrogate (JSON allows "\ud800"): no file name on disk is spelt so.
        raise ExecutableRefused("The path is not valid text (a lone surrogate).") from None
    if len(typed) > MAX_PATH_CHARS:
        raise ExecutableRefused(f"The path is longer than {MAX_PATH_CHARS} characters.")
    if typed.startswith("~"):
        raise ExecutableRefused(
            "Give the full path: a path starting with ~ is not expanded (write /home/… instead)."
        )
    if not os.path.isabs(typed):
        raise ExecutableRefused(
            f"Give the full path, starting with /: {typed!r} is relative, and Angelia "
            "does not look it up anywhere."
        )
    return typed


async def _read_at_most(stream: asyncio.StreamReader, limit: int) -> bytes:
    out = bytearray()
    while len(out) < limit:
        chunk = await stream.read(limit - len(out))
        if not chunk:
            break
        out += chunk
    return bytes(out)


def _stop(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGKILL)


def _printable(line: str) -> str:
    """The line without control characters (terminal escapes), spaces trimmed."""
    return "".join(c for c in line if c.isprintable()).strip()
