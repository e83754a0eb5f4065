"""Which backends this machine can run: executable found, version, and what each enforces.

A backend's executable is looked for under its default name on PATH; a profile that
names a command of its own is looked for by that command instead, so an agent installed
off PATH and given to a profile shows as found.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from app.brains import available_backends, conformance
from app.brains.base import Brain
from app.services.profiles.executables import VERSION_TIMEOUT_S, ask_version, probe_env

CACHE_TTL_S = 300.0


class ProfileCommand(Protocol):
    """What detection reads of a profile: its backend, its command and its PATH."""

    @property
    def name(self) -> str: ...
    @property
    def backend(self) -> str: ...
    @property
    def command(self) -> list[str] | None: ...
    @property
    def env(self) -> dict[str, str]: ...


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
        self._cache: dict[tuple[str, str | None], _Cached] = {}

    async def describe_all(self, profiles: Sequence[ProfileCommand] = ()) -> list[dict[str, Any]]:
        """Every backend; one missing from PATH is found through the first of ``profiles``
        whose command for it runs (``via_profile`` names that profile)."""
        backends = sorted(available_backends().items())
        infos = await asyncio.gather(*(self._describe_any(cls, profiles) for _, cls in backends))
        return list(infos)

    async def _describe_any(
        self, cls: type[Brain], profiles: Sequence[ProfileCommand]
    ) -> dict[str, Any]:
        info = await self.describe(cls)
        if info["found"]:
            return info
        for profile in profiles:
            if profile.backend == cls.name and profile.command:
                own = await self.describe(cls, profile)
                if own["found"]:
                    return own | {"via_profile": profile.name}
        return info

    async def describe(
        self, cls: type[Brain], profile: ProfileCommand | None = None
    ) -> dict[str, Any]:
        """``cls`` as this machine has it: by ``profile``'s command when it names one
        (``source`` is then "command"; the profile's PATH is the one searched), else
        by the backend's executable on PATH."""
        command = profile.command if profile is not None else None
        if command:
            search = profile.env.get("PATH") if profile is not None else None
            found = await self.probe(command[0], path=search)
            source = {"source": "command", "command": command[0]}
        else:
            found = await self.probe(cls.executable)
            source = {"source": "path", "command": cls.executable}
        return (
            found
            | source
            | {"via_profile": None}
            | {
                "name": cls.name,
                "label": cls.label,
                "executable": cls.executable,
                "install_hint": cls.install_hint,
                **install_steps(cls),
                "instructions_file": cls.instructions_file,
                "notice": cls.notice,
                # Which login a new profile would use (read afresh: the user may log in
                # meanwhile).
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
        )

    async def probe(self, executable: str, *, path: str | None = None) -> dict[str, Any]:
        """Where ``executable`` is (a name looked up on ``path`` or PATH, or a path) and
        its version.

        ``runs`` is False when it is missing or the OS would not start it; a version
        that times out or fails still counts as runnable, since some CLIs lack the flag.
        """
        probe = await self._probe(executable, path or self.path)
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

    async def _probe(self, executable: str, search: str | None) -> _Cached:
        key = (executable, search)
        cached = self._cache.get(key)
        if cached is not None and time.monotonic() - cached.at < CACHE_TTL_S:
            return cached
        if not executable:
            # The generic ACP backend has no executable of its own (the profile names it).
            result = _Cached(time.monotonic(), None, None, "set by the profile's command")
            self._cache[key] = result
            return result
        search = search or os.environ.get("PATH")
        path = shutil.which(executable, path=search)
        version: str | None = None
        error: str | None = None
        spawn_failed = False
        if path is not None:
            answer = await ask_version(path, timeout_s=self.timeout_s, env=probe_env(path, search))
            version, error, spawn_failed = answer.version, answer.error, answer.spawn_failed
        result = _Cached(time.monotonic(), path, version, error, spawn_failed)
        self._cache[key] = result
        return result


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
