"""The checks of ``angelia doctor`` that look at this machine's files: the data dir, the
SQLite library and the profiles already stored, each read without changing anything.

They need neither the ORM nor the backends, so ``angelia doctor`` starts without
SQLModel and SQLAlchemy; ``doctor`` puts them in its ``Report``.
"""

from __future__ import annotations

import contextlib
import json
import os
import sqlite3
import tempfile
from dataclasses import dataclass
from pathlib import Path

from app.db.datadir import too_open

__all__ = [
    "DataDirCheck",
    "SqliteCheck",
    "StoredProfile",
    "check_data_dir",
    "check_sqlite",
    "oldest_profile",
]

# The search index is made with these options (migration 0003). ``remove_diacritics 2``
# needs a newer SQLite than FTS5 itself, so a bare ``fts5`` probe could pass where the
# migration fails.
_FTS5_PROBE = (
    "CREATE VIRTUAL TABLE doctor_probe USING fts5(body, tokenize = 'unicode61 remove_diacritics 2')"
)


@dataclass(frozen=True)
class StoredProfile:
    """A profile's row as ``oldest_profile`` reads it, without the ORM: ``angelia doctor``
    then starts without importing SQLModel and SQLAlchemy."""

    name: str
    backend: str
    cwd: str
    command: list[str] | None
    env: dict[str, str]


@dataclass(frozen=True)
class DataDirCheck:
    path: str
    exists: bool
    writable: bool
    detail: str
    database: str
    database_exists: bool
    # Folders and files in it that other users could read (``path (mode)``), if any.
    too_open: tuple[str, ...] = ()


@dataclass(frozen=True)
class SqliteCheck:
    version: str
    fts5: bool
    error: str | None


def check_data_dir(data_dir: Path) -> DataDirCheck:
    """Whether Angelia could write in ``data_dir``, found out with a probe file.

    A missing directory is made the way ``angelia serve`` would make it, probed and taken
    away again, so "could be created" is a fact and not a guess from permission bits
    (which root ignores anyway)."""
    path = data_dir.expanduser().absolute()
    database = path / "angelia.db"
    exists = path.is_dir()
    if exists:
        error = _probe_write(path)
        detail = "yes" if error is None else f"no: {error}"
    elif path.exists():
        error = "it is not a directory"
        detail = f"no: {error}"
    else:
        error = _probe_create(path)
        detail = (
            "yes (it does not exist yet; angelia serve creates it)"
            if error is None
            else f"no: it does not exist and cannot be created: {error}"
        )
    return DataDirCheck(
        path=str(path),
        exists=exists,
        writable=error is None,
        detail=detail,
        database=str(database),
        database_exists=database.is_file(),
        too_open=tuple(too_open(path).too_open) if exists else (),
    )


def _probe_write(directory: Path) -> str | None:
    try:
        fd, name = tempfile.mkstemp(prefix=".doctor-", dir=directory)
        try:
            os.write(fd, b"ok")
        finally:
            os.close(fd)
            os.unlink(name)
    except OSError as exc:
        return exc.strerror or str(exc)
    return None


def _probe_create(path: Path) -> str | None:
    missing: list[Path] = []
    parent = path
    while not parent.exists() and parent != parent.parent:
        missing.append(parent)
        parent = parent.parent
    made: list[Path] = []
    try:
        for directory in reversed(missing):
            directory.mkdir()
            made.append(directory)
        return _probe_write(path)
    except OSError as exc:
        return exc.strerror or str(exc)
    finally:
        for directory in reversed(made):
            with contextlib.suppress(OSError):
                directory.rmdir()


def check_sqlite() -> SqliteCheck:
    """The SQLite library Python links, and whether it can build Angelia's search index."""
    with contextlib.closing(sqlite3.connect(":memory:")) as conn:
        try:
            conn.execute(_FTS5_PROBE)
        except sqlite3.Error as exc:
            return SqliteCheck(sqlite3.sqlite_version, False, str(exc))
    return SqliteCheck(sqlite3.sqlite_version, True, None)


def oldest_profile(db_path: Path) -> tuple[StoredProfile | None, str | None]:
    """(the first profile made, why it could not be read), reading without writing.

    The app's engine turns on WAL and migrates on connect; a read-only connection leaves
    the file as it is, so checking never changes what is checked."""
    if not db_path.is_file():
        return None, None
    uri = f"{db_path.absolute().as_uri()}?mode=ro"
    try:
        with contextlib.closing(sqlite3.connect(uri, uri=True, timeout=5)) as conn:
            row = conn.execute(
                "SELECT name, backend, cwd, command, env FROM profile ORDER BY created_at LIMIT 1"
            ).fetchone()
        if row is None:
            return None, None
        name, backend, cwd, command, env = row
        profile = StoredProfile(
            name=name,
            backend=backend,
            cwd=cwd,
            command=json.loads(command) if command else None,
            env=json.loads(env) if env else {},
        )
    except (sqlite3.Error, ValueError) as exc:
        return None, f"cannot read the profiles in {db_path}: {exc}"
    return profile, None
