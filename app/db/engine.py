"""SQLite engine (WAL) and Alembic migrations applied at start-up."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

from alembic import command
from alembic.config import Config
from sqlalchemy import event
from sqlalchemy.engine import Engine
from sqlmodel import create_engine

from app.db.datadir import DataDirError, create_private_file, make_private_dir, unwritable
from app.resources import MissingResources, migrations_dir

AUTOCHECKPOINT_PAGES = 10_000

__all__ = ["DataDirError", "configure_connection", "make_engine", "migrate", "open_database"]


def make_engine(db_path: Path) -> Engine:
    """An engine for the SQLite file, with WAL and a busy timeout on every connection."""
    engine = create_engine(
        f"sqlite:///{db_path}",
        connect_args={"check_same_thread": False, "timeout": 30},
    )

    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_conn: sqlite3.Connection, _record: Any) -> None:
        configure_connection(dbapi_conn)

    return engine


def configure_connection(conn: sqlite3.Connection, busy_timeout_s: float = 30.0) -> None:
    """The settings every connection to the database uses (the engine's and the event
    writer's own): WAL, durable across app crashes, foreign keys, a busy timeout."""
    cur = conn.cursor()
    cur.execute("PRAGMA journal_mode=WAL")
    # NORMAL is durable across app crashes in WAL mode (only an OS crash can lose
    # the newest transactions), and much faster for per-token event writes.
    cur.execute("PRAGMA synchronous=NORMAL")
    cur.execute("PRAGMA foreign_keys=ON")
    # Checkpoints run on a thread of their own (app.services.store.checkpoint); a commit
    # only runs one itself if the log grows ten times past SQLite's default.
    cur.execute(f"PRAGMA wal_autocheckpoint={AUTOCHECKPOINT_PAGES}")
    cur.execute(f"PRAGMA busy_timeout={int(busy_timeout_s * 1000)}")
    cur.close()


def migrate(engine: Engine) -> None:
    """Bring the database to the newest schema (a fresh file and an old one alike)."""
    try:
        script_location = migrations_dir()
    except MissingResources as exc:
        # Raised as the error `angelia serve` reports in one line, not as a traceback.
        raise DataDirError(exc.message) from exc
    cfg = Config()
    cfg.set_main_option("script_location", str(script_location))
    with engine.begin() as conn:
        cfg.attributes["connection"] = conn
        command.upgrade(cfg, "head")


def open_database(data_dir: Path) -> Engine:
    """Create the data dir if needed, open the database and migrate it.

    Raises ``DataDirError`` with a plain-language message when the directory is not
    writable or the disk is full, instead of a traceback.
    """
    try:
        make_private_dir(data_dir)
        probe = data_dir / ".write-test"
        probe.write_text("ok")
        probe.unlink()
        # SQLite gives the -wal and -shm files the database file's mode.
        create_private_file(data_dir / "angelia.db")
    except OSError as exc:
        raise unwritable(data_dir, exc) from exc
    engine = make_engine(data_dir / "angelia.db")
    try:
        migrate(engine)
    except Exception as exc:  # sqlite3 / SQLAlchemy errors of every kind
        if isinstance(exc, DataDirError):
            raise
        raise DataDirError(
            f"Cannot open or upgrade the database in {data_dir}: {exc}. "
            "Check free disk space and permissions."
        ) from exc
    return engine
