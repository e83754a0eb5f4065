"""Claude Code sessions started in a terminal: the transcripts written lately.

Claude Code writes every session to ``<projects>/<folder>/<uuid>.jsonl`` as it goes. A
file written in the last few minutes is a session someone is (or was just) running; the
ones Angelia itself runs are left out (their first stored event is the app's own, not an
import). Whether the CLI still runs is read from ``/proc`` where there is one: a
``claude`` process whose working folder is the session's, other than the agents the app
runs itself (their process groups are left out). Elsewhere it is unknown (None).
"""

from __future__ import annotations

import json
import os
from collections.abc import Collection
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from sqlalchemy.engine import Engine
from sqlmodel import Session, col, select

from app.db.models import ChatSession
from app.services.store.eventlog import EventLog

__all__ = ["TerminalSession", "claude_folders", "is_imported", "recent_sessions", "transcript_cwd"]

# How far into a transcript to look for its folder and first prompt.
HEAD_LINES = 200
PROC = Path("/proc")


@dataclass(frozen=True)
class TerminalSession:
    backend_session_id: str
    path: str
    cwd: str
    title: str
    modified_at: str
    size: int
    # Whether a claude process still runs in that folder (None: this system cannot tell).
    running: bool | None
    # The app's session holding an import of it, if there is one.
    session_id: str | None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _head(path: Path) -> tuple[str, str]:
    """(working folder, first prompt) from the start of a transcript; bad lines skipped."""
    cwd = title = ""
    try:
        with path.open("rb") as f:
            for n, raw in enumerate(f):
                if n >= HEAD_LINES or (cwd and title):
                    break
                try:
                    entry = json.loads(raw)
                except ValueError:
                    continue  # a half-written or broken line
                if not isinstance(entry, dict):
                    continue
                if not cwd and isinstance(entry.get("cwd"), str):
                    cwd = entry["cwd"]
                message = entry.get("message")
                if not title and entry.get("type") == "user" and isinstance(message, dict):
                    content = message.get("content")
                    if isinstance(content, str) and not content.startswith("<"):
                        title = content.strip().splitlines()[0][:120] if content.strip() else ""
    except OSError:
        pass
    return cwd, title


def transcript_cwd(path: Path) -> str:
    """The working folder a transcript names near its start ("" if none)."""
    return _head(path)[0]


def claude_folders(proc: Path = PROC, *, own_groups: Collection[int] = ()) -> set[str] | None:
    """The working folders of running ``claude`` processes (None: no /proc to read).

    Processes in ``own_groups`` are the app's own agents, not a terminal's CLI: a session
    of the same folder running here must not pass for one still running there.
    """
    if not proc.is_dir():
        return None
    found: set[str] = set()
    for entry in proc.iterdir():
        if not entry.name.isdigit():
            continue
        try:
            argv = (entry / "cmdline").read_bytes().split(b"\0")
            if not any(_is_claude(arg.decode("utf-8", "replace")) for arg in argv[:3]):
                continue
            if own_groups and _group(entry) in own_groups:
                continue
            found.add(os.readlink(entry / "cwd"))
        except (OSError, ValueError, IndexError):
            continue  # gone meanwhile, or not ours to read
    return found


def _group(entry: Path) -> int:
    """The process group of ``/proc/<pid>``; its name may hold spaces or brackets, so the
    fields are counted from the last ``)`` (then: state, parent, group)."""
    return int((entry / "stat").read_text().rsplit(")", 1)[1].split()[2])


def _is_claude(arg: str) -> bool:
    name = os.path.basename(arg)
    return name == "claude" or arg.endswith(("claude-code/cli.js", "claude-code/cli.mjs"))


def recent_sessions(
    engine: Engine,
    events: EventLog,
    projects: Path,
    *,
    minutes: int,
    now: datetime | None = None,
    proc: Path = PROC,
    own_groups: Collection[int] = (),
) -> list[TerminalSession]:
    """Transcripts under ``projects`` written in the last ``minutes``, newest first.

    ``own_groups``: the process groups of the agents the app runs (``claude_folders``).
    """
    if not projects.is_dir():
        return []
    cutoff = (now or datetime.now(UTC)).timestamp() - minutes * 60
    recent = _written_since(projects, cutoff)
    if not recent:
        return []
    with Session(engine) as db:
        stmt = select(ChatSession).where(
            col(ChatSession.backend_session_id).in_([p.stem for p, _ in recent])
        )
        chats = {c.backend_session_id: c for c in db.exec(stmt)}
    running = claude_folders(proc, own_groups=own_groups)
    out = []
    for path, stat in sorted(recent, key=lambda r: -r[1].st_mtime):
        chat = chats.get(path.stem)
        if chat is not None and not is_imported(events, chat.id):
            continue  # a session Angelia runs itself
        cwd, title = _head(path)
        out.append(
            TerminalSession(
                backend_session_id=path.stem,
                path=str(path),
                cwd=cwd,
                title=title,
                modified_at=datetime.fromtimestamp(stat.st_mtime, UTC).isoformat(),
                size=stat.st_size,
                running=None if running is None else bool(cwd) and cwd in running,
                session_id=chat.id if chat is not None else None,
            )
        )
    return out


def _written_since(projects: Path, cutoff: float) -> list[tuple[Path, os.stat_result]]:
    """The transcripts ``<projects>/<folder>/<id>.jsonl`` modified since ``cutoff``.

    One ``stat`` per file through ``scandir``: the History page runs this on every load,
    and a projects folder holds thousands of transcripts after a few months.
    """
    found = []
    for folder in _scan(projects):
        if not folder.is_dir():
            continue
        for entry in _scan(Path(folder.path)):
            # Subagent transcripts (agent-*.jsonl) are not conversations of their own.
            if not entry.name.endswith(".jsonl") or entry.name.startswith("agent-"):
                continue
            try:
                stat = entry.stat()
            except OSError:
                continue  # removed meanwhile
            if stat.st_mtime >= cutoff and entry.is_file():
                found.append((Path(entry.path), stat))
    return found


def _scan(folder: Path) -> list[os.DirEntry[str]]:
    try:
        with os.scandir(folder) as entries:
            return list(entries)
    except OSError:
        return []


def is_imported(events: EventLog, session_id: str) -> bool:
    """Whether the session began as an import (its first event is imported, or it has none)."""
    first = events.list(session_id, limit=1)
    return not first or bool(first[0].get("imported"))
