"""``angelia doctor``: what Angelia needs from this machine, checked without starting it.

Here: the ``Report``, the backend checks (the binary each backend would run, and the
default backend a chat starts with) and the report as text or JSON. The data dir, SQLite
and stored-profile checks live in ``storage_checks`` and are named here as well.

The command and the welcome page read the same ``Report``, so a terminal and a browser
tab cannot disagree. Nothing here creates the database or runs migrations: a check that
repaired the data dir while looking at it would hide the problem it was asked about.
"""

from __future__ import annotations

import asyncio
import json
import re
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Protocol

from app import __version__
from app.brains import available_backends, conformance
from app.services.profiles.backends import BackendDetector, ProfileCommand
from app.services.profiles.firstrun import split_backends, suggested_backend
from app.services.profiles.storage_checks import (
    DataDirCheck,
    SqliteCheck,
    StoredProfile,
    check_data_dir,
    check_sqlite,
    oldest_profile,
)
from app.services.sessions import disk
from app.settings import Settings

__all__ = [
    "BackendCheck",
    "DataDirCheck",
    "DefaultBackend",
    "Fact",
    "Report",
    "ProfileFacts",
    "SqliteCheck",
    "StoredProfile",
    "check_data_dir",
    "check_sqlite",
    "diagnose",
    "oldest_profile",
    "render_text",
    "run",
]

# A CLI's version line goes to a terminal: an escape sequence in it could rewrite the
# screen, so control characters are shown as "?".
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")


class ProfileFacts(ProfileCommand, Protocol):
    """What the checks read of a profile: a stored ``Profile`` or a ``StoredProfile``."""

    @property
    def cwd(self) -> str: ...


@dataclass(frozen=True)
class BackendCheck:
    """A backend and the binary it would run (``executable`` is empty for the generic
    ACP backend, whose profile names the command)."""

    name: str
    label: str
    executable: str
    found: bool
    runs: bool
    path: str | None
    version: str | None
    version_error: str | None
    install_hint: str
    # What the conformance table says the backend does (``conformance.summary``).
    features: str = ""
    # What a user must know before choosing it (``Brain.notice``), e.g. who can sign in.
    notice: str = ""


@dataclass(frozen=True)
class DefaultBackend:
    """The backend a chat would start with, how it was chosen, and whether it can run."""

    name: str
    why: str
    binary: BackendCheck | None
    problem: str | None

    @property
    def runs(self) -> bool:
        return self.problem is None


@dataclass(frozen=True)
class Fact:
    """One line of the report: ``key`` and ``value`` are plain text for any output."""

    key: str
    value: str
    problem: bool = False


@dataclass(frozen=True)
class Report:
    angelia: str
    data_dir: DataDirCheck
    sqlite: SqliteCheck
    backends: list[BackendCheck]
    default: DefaultBackend

    @property
    def ok(self) -> bool:
        """Whether ``angelia serve`` can work: the default backend runs, the data dir
        takes writes and SQLite has FTS5 (the exit code says this)."""
        return self.default.runs and self.data_dir.writable and self.sqlite.fts5

    def facts(self) -> list[Fact]:
        d, s, dflt = self.data_dir, self.sqlite, self.default
        facts = [
            Fact("angelia", self.angelia),
            Fact("data dir", d.path),
            Fact("data dir writable", d.detail, problem=not d.writable),
            Fact("database", d.database if d.database_exists else "not created yet"),
            Fact("data dir private", _privacy(d), problem=bool(d.too_open)),
            Fact("session worktrees", disk.describe(Path(d.path))),
            Fact("folder snapshots", disk.describe(Path(d.path), "snapshots")),
            Fact("sqlite", s.version),
            Fact(
                "fts5",
                "available"
                if s.fts5
                else f"missing ({s.error}): Angelia cannot set up its search index without it",
                problem=not s.fts5,
            ),
        ]
        for b in self.backends:
            facts += [Fact(f"backend {b.name}", _binary(b)), Fact("  features", b.features)]
            if b.notice:
                facts.append(Fact("  note", b.notice))
        facts.append(Fact("default backend", f"{dflt.name} ({dflt.why})"))
        if dflt.problem is not None:
            facts.append(Fact("default can run", f"no: {dflt.problem}", problem=True))
        elif dflt.binary is not None:
            facts.append(Fact("default can run", f"yes: {_binary(dflt.binary)}"))
        return [Fact(f.key, _CONTROL.sub("?", f.value), f.problem) for f in facts]

    def to_json(self) -> dict[str, Any]:
        return {
            "ok": self.ok,
            "angelia": self.angelia,
            "data_dir": asdict(self.data_dir),
            "sqlite": asdict(self.sqlite),
            "backends": [asdict(b) for b in self.backends],
            "default_backend": asdict(self.default) | {"runs": self.default.runs},
            "session_worktrees": disk.counted(Path(self.data_dir.path)),
            "folder_snapshots": disk.counted(Path(self.data_dir.path), "snapshots"),
        }


def _privacy(d: DataDirCheck) -> str:
    if not d.exists:
        return "yes (angelia serve creates it readable by you only)"
    if not d.too_open:
        return "yes: folders 0700, files 0600, readable by you only"
    shown = ", ".join(d.too_open[:3]) + (
        f" and {len(d.too_open) - 3} more" if len(d.too_open) > 3 else ""
    )
    return f"no: other users can read {shown}; angelia serve makes them private at its next start"


def _binary(b: BackendCheck) -> str:
    if not b.executable:
        return "no executable of its own: the profile's command says what to run"
    if not b.found:
        return f"not found ({b.executable} is not on PATH) · install: {b.install_hint}"
    if not b.runs:
        return f"{b.path} · {b.version_error}"
    if b.version:
        return f"{b.path} · {b.version}"
    return f"{b.path} · version unknown: {b.version_error or '`--version` printed nothing'}"


# -- the checks --------------------------------------------------------------------------


async def diagnose(
    settings: Settings,
    detector: BackendDetector,
    *,
    profile: ProfileFacts | None,
    profile_error: str | None = None,
) -> Report:
    """Every check; ``profile`` is the oldest one (``None``: there is none yet).

    The file checks run in a thread and the version probes are the detector's (async,
    with its timeout), so a page can await this without stalling other requests."""
    files = asyncio.gather(
        asyncio.to_thread(check_data_dir, settings.data_dir), asyncio.to_thread(check_sqlite)
    )
    described = await detector.describe_all()
    data_dir, sqlite = await files
    backends = sorted(
        (_backend_check(b) for b in described),
        key=lambda b: (b.name != "claude", not b.executable, b.label.casefold()),
    )
    default = await _default_backend(detector, described, profile, profile_error)
    return Report(__version__, data_dir, sqlite, backends, default)


def _backend_check(info: dict[str, Any]) -> BackendCheck:
    fields = {f: info[f] for f in BackendCheck.__dataclass_fields__ if f != "features"}
    return BackendCheck(**fields, features=info["conformance"]["summary"])


async def _default_backend(
    detector: BackendDetector,
    described: list[dict[str, Any]],
    profile: ProfileFacts | None,
    profile_error: str | None,
) -> DefaultBackend:
    if profile is not None:
        name = profile.backend
        why = f'the backend of the profile "{profile.name}", the first one made'
    else:
        found = [b["name"] for b in split_backends(described)[0]]
        name = suggested_backend(found)
        if len(found) == 1:
            why = "the only agent found: first run suggests it"
        elif found:
            why = f"first run suggests it among the {len(found)} agents found"
        else:
            why = "first run suggests it; no agent was found"
        if profile_error is not None:
            why += f"; {profile_error}"
    cls = available_backends().get(name)
    if cls is None:
        known = ", ".join(sorted(available_backends()))
        return DefaultBackend(name, why, None, f"no backend is called {name!r} (known: {known})")
    # The profile's command replaces the backend's own, and a PATH in its environment is
    # the one the agent's process is started with.
    command = profile.command if profile is not None else None
    executable = command[0] if command else cls.executable
    if profile is not None and "PATH" in profile.env:
        detector = BackendDetector(timeout_s=detector.timeout_s, path=profile.env["PATH"])
    info = await detector.probe(executable) if executable else {}
    binary = BackendCheck(
        name=cls.name,
        label=cls.label,
        executable=executable,
        found=bool(info.get("found")),
        runs=bool(info.get("runs")),
        path=info.get("path"),
        version=info.get("version"),
        version_error=info.get("version_error"),
        install_hint=cls.install_hint,
        features=conformance.summary(cls.name),
        notice=cls.notice,
    )
    problem: str | None = None
    if not executable:
        problem = f"{cls.label} has no command: set the profile's command ({cls.install_hint})"
    elif not binary.found:
        problem = f"{executable} is not on PATH · install: {cls.install_hint}"
    elif not binary.runs:
        problem = f"{binary.path} · {binary.version_error}"
    elif profile is not None and not Path(profile.cwd).is_dir():
        problem = f'the folder of the profile "{profile.name}", {profile.cwd}, does not exist'
    return DefaultBackend(name, why, binary, problem)


# -- output --------------------------------------------------------------------------------


def render_text(report: Report) -> str:
    """One fact a line, the values in one column."""
    facts = report.facts()
    width = max(len(f.key) for f in facts)
    return "\n".join(f"{f.key.ljust(width)}  {f.value}" for f in facts)


def run(data_dir: Path | None, *, as_json: bool = False) -> tuple[int, str]:
    """(exit code, text) for ``angelia doctor``: 1 when ``serve`` could not work."""
    settings = Settings(data_dir=data_dir.expanduser().resolve()) if data_dir else Settings()
    profile, error = oldest_profile(settings.db_path)
    report = asyncio.run(
        diagnose(settings, BackendDetector(), profile=profile, profile_error=error)
    )
    text = json.dumps(report.to_json(), indent=2) if as_json else render_text(report)
    return (0 if report.ok else 1), text
