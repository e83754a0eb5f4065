"""One agent CLI child process: JSON lines over stdin/stdout, stderr kept for diagnostics.

The transport only does raw I/O and process lifetime; protocol layers build on
``write_json`` / ``messages``. Three things about the child's lifetime matter:

* It runs in its own session (process group), so stopping it also stops whatever it
  spawned (MCP servers, shell commands), and a later run of the app can find the group
  by the recorded pid.
* On Linux it gets ``PR_SET_PDEATHSIG(SIGKILL)``, so it dies with the app even when
  the app is killed without a chance to clean up.
* ``close()`` lets it finish on stdin EOF before escalating: CLIs flush their session
  files after EOF, and a SIGTERM sent too early loses the last message
  (anthropics/claude-agent-sdk-python#625).
* Its exit is noticed on its own. ``asyncio``'s ``Process.wait()`` also waits for every
  pipe to close, and a grandchild that inherited stdout would hold that open for ever;
  so once the child itself is gone, what is left of its group is stopped, which closes
  the pipes and ends ``messages()``.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import ctypes
import json
import logging
import os
import signal
import sys
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from typing import Any

from app.errors import AgentNotFoundError, BrainError, BrainStartError
from app.transport.framing import DEFAULT_MAX_LINE_BYTES, LineFramer
from app.transport.reading import READ_CHUNK, message_batches

log = logging.getLogger(__name__)

__all__ = ["AgentProcess", "ProcessNotRunningError", "build_env", "describe_exit"]

DEFAULT_STDERR_LIMIT = 64 * 1024
# After the child exits, how long what it left in its group gets after SIGTERM (and
# then after SIGKILL) before the pipes are closed from this side.
ORPHAN_GRACE_S = 1.0

_PR_SET_PDEATHSIG = 1


def _load_prctl() -> Callable[..., int] | None:
    if not sys.platform.startswith("linux"):
        return None
    try:
        # Resolved now, in the parent: loading a library between fork and exec is unsafe.
        prctl: Callable[..., int] = ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None
    return prctl


_PRCTL = _load_prctl()


def _make_preexec() -> Callable[[], None] | None:
    prctl = _PRCTL
    if prctl is None:
        return None
    parent = os.getpid()

    def preexec() -> None:
        # The death signal fires when the thread that forked us exits; that is the event
        # loop thread, which lives as long as the app.
        prctl(_PR_SET_PDEATHSIG, ctypes.c_ulong(signal.SIGKILL), 0, 0, 0)
        if os.getppid() != parent:
            # The parent died before prctl took effect; nobody is left to talk to.
            os._exit(1)

    return preexec


def describe_exit(returncode: int | None) -> str:
    """How a process ended, in words: "stopped", "exited with code 1", "was killed by SIGKILL"."""
    if returncode is None:
        return "stopped"
    if returncode < 0:
        try:
            name = signal.Signals(-returncode).name
        except ValueError:
            name = f"signal {-returncode}"
        return f"was killed by {name}"
    return f"exited with code {returncode}"


def build_env(base: Mapping[str, str], overrides: Mapping[str, str]) -> dict[str, str]:
    """The child's environment: ``base`` without ``CLAUDECODE``, then ``overrides``.

    ``CLAUDECODE`` is set inside a Claude Code session; a child that inherits it
    refuses to start (anthropics/claude-agent-sdk-python#573).
    """
    env = {key: value for key, value in base.items() if key != "CLAUDECODE"}
    env.update(overrides)
    return env


class ProcessNotRunningError(BrainError):
    """The agent process is not running (never started, exited or closed)."""


class _Protocol(asyncio.subprocess.SubprocessStreamProtocol):
    """The stock stream protocol plus events for "child exited" and "pipes closed".

    ``Process.wait()`` cannot stand in for either: called before the exit it also waits
    for the pipes, called after it returns at once.
    """

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        super().__init__(limit=READ_CHUNK, loop=loop)
        self.exited = asyncio.Event()
        self.finished = asyncio.Event()

    def process_exited(self) -> None:
        super().process_exited()
        self.exited.set()

    def connection_lost(self, exc: Exception | None) -> None:
        super().connection_lost(exc)
        self.finished.set()


_LIVE: set[AgentProcess] = set()


@atexit.register
def _kill_live_children() -> None:
    # Last resort for an interpreter exit that skipped the graceful shutdown path.
    for process in list(_LIVE):
        process.kill()


class AgentProcess:
    """An agent CLI child speaking newline-delimited JSON on stdin/stdout.

    Args:
        name: What the user calls the agent, used in error messages.
        install_hint: How to install the executable (e.g. an npm command).
        stderr_limit: How many trailing bytes of stderr to keep.
        max_line_bytes: Guard against a single absurdly long stdout line.
    """

    def __init__(
        self,
        *,
        name: str = "The agent",
        install_hint: str = "",
        stderr_limit: int = DEFAULT_STDERR_LIMIT,
        max_line_bytes: int = DEFAULT_MAX_LINE_BYTES,
    ) -> None:
        self.name = name
        self.install_hint = install_hint
        self._stderr_limit = stderr_limit
        self._max_line_bytes = max_line_bytes
        self._proc: asyncio.subprocess.Process | None = None
        self._exited = asyncio.Event()
        self._finished = asyncio.Event()
        self._stderr = bytearray()
        self._stderr_task: asyncio.Task[None] | None = None
        self._reaper: asyncio.Task[None] | None = None
        self._closing: asyncio.Future[int | None] | None = None
        self._reading = False

    # -- state ---------------------------------------------------------------------
    @property
    def pid(self) -> int | None:
        """The child's pid, which is also its process-group id."""
        return self._proc.pid if self._proc is not None else None

    @property
    def returncode(self) -> int | None:
        """Exit status once reaped; negative for death by signal."""
        return self._proc.returncode if self._proc is not None else None

    @property
    def running(self) -> bool:
        return self._proc is not None and self._proc.returncode is None

    def stderr_tail(self) -> str:
        """The last ``stderr_limit`` bytes the child wrote to stderr, decoded leniently."""
        return self._stderr.decode("utf-8", errors="replace")

    # -- lifecycle -------------------------------------------------------------------
    async def start(
        self,
        argv: Sequence[str],
        *,
        cwd: str,
        env: Mapping[str, str],
        install_hint: str | None = None,
    ) -> None:
        """Spawn the child in its own process group with piped stdio.

        Raises:
            AgentNotFoundError: The executable does not exist or cannot be executed;
                the message says what to install.
            BrainStartError: ``cwd`` is not a directory or the spawn failed otherwise.
        """
        if self._proc is not None:
            raise RuntimeError("AgentProcess.start() called twice")
        if not argv:
            raise ValueError("argv must not be empty")
        hint = install_hint if install_hint is not None else self.install_hint
        if not os.path.isdir(cwd):
            raise BrainStartError(
                f"{self.name} cannot start: the working directory {cwd} does not exist."
            )
        loop = asyncio.get_running_loop()
        try:
            # What create_subprocess_exec does, keeping the protocol to see the exit.
            transport, protocol = await loop.subprocess_exec(
                lambda: _Protocol(loop),
                *argv,
                stdin=asyncio.subprocess.PIPE,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE,
                cwd=cwd,
                env=dict(env),
                start_new_session=True,
                preexec_fn=_make_preexec(),
            )
        except (FileNotFoundError, PermissionError) as exc:
            if exc.filename == cwd:
                raise BrainStartError(
                    f"{self.name} cannot start: cannot enter {cwd} ({exc.strerror}).",
                    detail=str(exc),
                ) from exc
            problem = "was not found" if isinstance(exc, FileNotFoundError) else "is not executable"
            install = f" Install it with: {hint}" if hint else ""
            raise AgentNotFoundError(
                f"{self.name} cannot start: {argv[0]!r} {problem}.{install}", detail=str(exc)
            ) from exc
        except OSError as exc:
            raise BrainStartError(f"{self.name} cannot start: {exc}", detail=str(exc)) from exc
        self._exited = protocol.exited
        self._finished = protocol.finished
        self._proc = asyncio.subprocess.Process(transport, protocol, loop)
        _LIVE.add(self)
        self._stderr_task = asyncio.create_task(self._drain_stderr())
        self._reaper = asyncio.create_task(self._reap_after_exit(self._proc.pid, transport))
        log.debug("started %s pid=%s: %s", self.name, self._proc.pid, list(argv))

    async def wait(self) -> int:
        """Wait for the child to exit and its pipes to close; return the exit status."""
        proc = self._require()
        await self._exited.wait()
        await self._settled()
        code = proc.returncode
        assert code is not None
        return code

    async def close(self, timeout: float = 5.0) -> int | None:
        """Stop the child gracefully; idempotent and safe to call concurrently.

        Closes stdin and waits ``timeout`` seconds, then SIGTERMs the process group and
        waits again, then SIGKILLs it. Whatever is left of the group after the child
        exits is stopped too. Returns the exit status (None if never started).
        """
        if self._proc is None:
            return None
        if self._closing is None:
            self._closing = asyncio.ensure_future(self._close(self._proc, timeout))
        # Shielded: a cancelled caller must not leave the child half-stopped.
        return await asyncio.shield(self._closing)

    def kill(self) -> None:
        """SIGKILL the whole process group now, without waiting."""
        self._signal_group(signal.SIGKILL)

    async def _close(self, proc: asyncio.subprocess.Process, timeout: float) -> int | None:
        self._close_stdin()
        if not await _within(self._exited.wait(), timeout):
            log.info("%s pid=%s ignored stdin EOF; sending SIGTERM", self.name, proc.pid)
            self._signal_group(signal.SIGTERM)
            if not await _within(self._exited.wait(), timeout):
                log.warning("%s pid=%s ignored SIGTERM; sending SIGKILL", self.name, proc.pid)
                self._signal_group(signal.SIGKILL)
                await self._exited.wait()
        await self._settled()
        return proc.returncode

    async def _reap_after_exit(self, pid: int, transport: asyncio.SubprocessTransport) -> None:
        await self._exited.wait()
        _LIVE.discard(self)
        # Children the agent left behind (background shells, MCP servers) are orphans
        # now, and any of them may hold the stdout/stderr pipes open.
        self._signal_group(signal.SIGTERM)
        if await _within(self._finished.wait(), ORPHAN_GRACE_S):
            self._signal_group(signal.SIGKILL)
            return
        self._signal_group(signal.SIGKILL)
        if not await _within(self._finished.wait(), ORPHAN_GRACE_S):
            # Something escaped the group and still holds a pipe; stop listening to it.
            log.warning("%s pid=%s: closing pipes held by an escaped process", self.name, pid)
            transport.close()

    async def _settled(self) -> None:
        """Wait until the post-exit cleanup is done and stderr has been read to the end."""
        for task in (self._reaper, self._stderr_task):
            if task is not None:
                await asyncio.shield(task)

    def _close_stdin(self) -> None:
        stdin = self._proc.stdin if self._proc is not None else None
        if stdin is not None and not stdin.is_closing():
            with contextlib.suppress(OSError):
                stdin.close()

    def _signal_group(self, sig: signal.Signals) -> None:
        if self._proc is None:
            return
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self._proc.pid, sig)

    # -- I/O ---------------------------------------------------------------------------
    async def write_line(self, line: str) -> None:
        """Write one line (a newline is added if missing) and wait for the pipe to drain.

        Raises:
            ProcessNotRunningError: The child is gone or its stdin is closed.
        """
        proc = self._require()
        stdin = proc.stdin
        if stdin is None or stdin.is_closing() or proc.returncode is not None:
            raise ProcessNotRunningError(f"{self.name} is not running.")
        data = line if line.endswith("\n") else line + "\n"
        try:
            # A single write keeps lines from concurrent writers whole.
            stdin.write(data.encode("utf-8"))
            await stdin.drain()
        except (BrokenPipeError, ConnectionResetError) as exc:
            raise ProcessNotRunningError(f"{self.name} is not running.") from exc

    async def write_json(self, obj: Mapping[str, Any]) -> None:
        """Write ``obj`` as one compact JSON line."""
        await self.write_line(json.dumps(obj, ensure_ascii=False, separators=(",", ":")))

    async def messages(self) -> AsyncIterator[dict[str, Any]]:
        """Yield each JSON object the child writes to stdout, until stdout closes.

        Non-JSON noise and corrupt lines are logged and skipped. Only one consumer may
        iterate at a time.
        """
        async for batch in self.message_batches():
            for message in batch:
                yield message

    async def message_batches(self) -> AsyncIterator[list[dict[str, Any]]]:
        """``messages``, a list at a time (at least one message); see ``reading`` for how
        a big read, a big line and an agent writing flat out are kept from holding up
        every other session."""
        proc = self._require()
        if self._reading:
            raise RuntimeError("messages() already has a consumer")
        self._reading = True
        assert proc.stdout is not None
        framer = LineFramer(self._max_line_bytes)
        async for batch in message_batches(proc.stdout, framer, self.name):
            yield batch

    async def _drain_stderr(self) -> None:
        # Always drained: a child blocks once the pipe buffer (~64 KiB) is full
        # (anthropics/claude-agent-sdk-python PR #103).
        assert self._proc is not None and self._proc.stderr is not None
        stderr = self._proc.stderr
        while chunk := await stderr.read(READ_CHUNK):
            self._stderr += chunk
            if len(self._stderr) > self._stderr_limit:
                del self._stderr[: len(self._stderr) - self._stderr_limit]

    def _require(self) -> asyncio.subprocess.Process:
        if self._proc is None:
            raise ProcessNotRunningError(f"{self.name} has not been started.")
        return self._proc


async def _within(awaitable: Awaitable[object], timeout: float) -> bool:
    """Whether ``awaitable`` finished within ``timeout`` seconds (it is cancelled if not)."""
    try:
        await asyncio.wait_for(awaitable, timeout)
    except TimeoutError:
        return False
    return True
