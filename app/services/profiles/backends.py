"""Which backends this machine can run: executable found, version, and what each enforces."""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import time
from dataclasses import dataclass
from typing import Any

from app.brains import available_backends, conformance
from app.brains.base import Brain

VERSION_TIMEOUT_S = 3.0
CACHE_TTL_S = 300.0


@dataclass
class _Cached:
    at: float
    path: str | None
    version: str | None
    error: str | None
    # Found on PATH but the OS refused to start it (bad interpreter, no permission).
    spawn_failed: bool = False


def install_steps(cls: type[Brain]) -> dict[str, str]:
    """``install_command``, a shell command to copy ("" when there is none to run), and
    ``install_note``, what else to do, shown beside it and never copied."""
    if not cls.executable:
        # The generic ACP backend: the setup is the profile's command, not an install.
        return {"install_command": "", "install_note": cls.install_hint}
    if cls.install_command:
        return {"install_command": cls.install_command, "install_note": cls.install_note}
    return {"install_command": cls.install_hint, "install_note": ""}


class BackendDetector:
    """Finds each backend's executable and asks it for ``--version`` (cached)."""

    def __init__(self, *, timeout_s: float = VERSION_TIMEOUT_S, path: str | None = None) -> None:
        self.timeout_s = timeout_s
        self.path = path
        self._cache: dict[str, _Cached] = {}

    async def describe_all(self) -> list[dict[str, Any]]:
        backends = sorted(available_backends().items())
        infos = await asyncio.gather(*(self.describe(cls) for _, cls in backends))
        return list(infos)

    async def describe(self, cls: type[Brain]) -> dict[str, Any]:
        return await self.probe(cls.executable) | {
            "name": cls.name,
            "label": cls.label,
            "executable": cls.executable,
            "install_hint": cls.install_hint,
            **install_steps(cls),
            "instructions_file": cls.instructions_file,
            "notice": cls.notice,
            # Which login a new profile would use (read afresh: the user may log in meanwhile).
            "login": cls.login_note({}),
            "permission_modes": list(cls.permission_modes),
            "capabilities": sorted(str(c) for c in cls.capabilities),
            "conformance": _conformance(cls.name),
            "facts": {
                "resume": cls.facts.resume,
                "permission_prompt": cls.facts.permission_prompt,
                "process_lifetime": cls.facts.process_lifetime,
            },
        }

    async def probe(self, executable: str) -> dict[str, Any]:
        """Where ``executable`` is (a name looked up on PATH, or a path) and its version.

        ``runs`` is False when it is missing or the OS would not start it; a version
        that times out or fails still counts as runnable, since some CLIs lack the flag.
        """
        probe = await self._probe(executable)
        return {
            "found": probe.path is not None,
            "runs": probe.path is not None and not probe.spawn_failed,
            "path": probe.path,
            "version": probe.version,
            "version_error": probe.error,
        }

    async def detected(self) -> list[str]:
        """Names of the backends whose executable is on PATH."""
        return [b["name"] for b in await self.describe_all() if b["found"]]

    async def _probe(self, executable: str) -> _Cached:
        cached = self._cache.get(executable)
        if cached is not None and time.monotonic() - cached.at < CACHE_TTL_S:
            return cached
        if not executable:
            # The generic ACP backend has no executable of its own (the profile names it).
            result = _Cached(time.monotonic(), None, None, "set by the profile's command")
            self._cache[executable] = result
            return result
        path = shutil.which(executable, path=self.path or os.environ.get("PATH"))
        version: str | None = None
        error: str | None = None
        spawn_failed = False
        if path is not None:
            version, error, spawn_failed = await self._version(path)
        result = _Cached(time.monotonic(), path, version, error, spawn_failed)
        self._cache[executable] = result
        return result

    async def _version(self, path: str) -> tuple[str | None, str | None, bool]:
        """(version, why there is none, whether the OS refused to start it)."""
        try:
            proc = await asyncio.create_subprocess_exec(
                path,
                "--version",
                stdin=asyncio.subprocess.DEVNULL,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.STDOUT,
                start_new_session=True,
            )
        except OSError as exc:
            return None, f"cannot run it: {exc.strerror or exc}", True
        try:
            out, _ = await asyncio.wait_for(proc.communicate(), timeout=self.timeout_s)
        except TimeoutError:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, 9)
            with contextlib.suppress(Exception):
                await proc.wait()
            return None, f"`--version` did not answer within {self.timeout_s:g} s", False
        text = out.decode("utf-8", "replace").strip().splitlines()
        if proc.returncode != 0:
            return None, f"`--version` exited with {proc.returncode}", False
        return (text[0][:200] if text else ""), None, False


def _conformance(backend: str) -> dict[str, Any]:
    """The conformance table's row for ``backend`` (empty cells: never run in the suite)."""
    row = conformance.table().get(backend)
    cells = row.cells if row is not None else ()
    return {
        "tested_with": row.version if row is not None else None,
        "summary": conformance.summary(backend),
        "cells": [
            {"feature": c.feature, "label": c.label, "result": c.result, "mark": c.mark}
            for c in cells
        ],
    }
