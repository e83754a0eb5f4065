"""Reading Claude Code's transcript files: whole, or what was added since the last read.

One JSON object per line (see ``claude_transcripts`` for what the lines mean). Lines that
are not JSON objects are counted, never fatal; a line of a type the app does not know is
kept as it is, to be shown raw. Nothing here touches the database.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

JsonDict = dict[str, Any]

# Claude Code names a transcript after its session id, a UUID. The shape is checked
# before an id goes into a glob or a path: ``*`` would match any transcript, ``**`` is
# not even a valid pattern, and ``..`` or ``/`` would leave the projects folder.
_SESSION_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]{0,127}")


def is_session_id(text: str) -> bool:
    """Whether ``text`` has the shape of a Claude Code session id (letters, digits, ``-``
    and ``_``: a UUID, or a name like it), so it can name a transcript file."""
    return _SESSION_ID.fullmatch(text) is not None


_ENTRY_TYPES = frozenset({"user", "assistant", "progress", "system", "attachment"})
# Lines the CLI writes for its own bookkeeping (titles, queue, request records, costs):
# nothing in them is shown. A type in neither set is shown raw (measured with 2.1.332).
_BOOKKEEPING = frozenset(
    {
        "summary", "custom-title", "ai-title", "tag", "agent-name", "agent-color",
        "agent-setting", "last-prompt", "queue-operation", "file-history-snapshot",
        "atis-latch", "api-request", "api-request-shape", "api-request-blob", "cost-state",
        "tools-used", "pr-link", "mode", "worktree-state", "content-replacement",
        "attribution-snapshot", "marble-origami-commit", "marble-origami-snapshot",
        "speculation-accept", "isolation-latch", "session-owner", "derived-from",
    }
)  # fmt: skip


@dataclass(frozen=True)
class RawLine:
    """A line of a type the app does not know, kept to be shown as it is."""

    line: int
    type: str
    text: str

    @property
    def key(self) -> str:
        # Such lines carry no uuid; their text identifies them for a later import.
        return "line:" + hashlib.sha1(self.text.encode(), usedforsecurity=False).hexdigest()[:20]


@dataclass
class Transcript:
    """One parsed file: its conversation entries in file order plus what titles it."""

    session_id: str
    entries: list[JsonDict] = field(default_factory=list)
    lines: int = 0
    malformed: int = 0
    custom_title: str = ""
    ai_title: str = ""
    summary: str = ""
    # Where each entry is in the file (by uuid), and the lines of unknown types.
    line_of: dict[str, int] = field(default_factory=dict)
    unknown: list[RawLine] = field(default_factory=list)

    @property
    def cwd(self) -> str:
        return next((e["cwd"] for e in self.entries if isinstance(e.get("cwd"), str)), "")


class TranscriptReader:
    """Reads a transcript file, and then what the CLI has added to it since.

    With ``complete_only`` a last line without its newline is left for the next read:
    the CLI may be half-way through writing it.
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        self.transcript = Transcript(session_id=path.stem)
        self._offset = 0

    def read(self, *, complete_only: bool = False) -> int:
        """Parse the lines added since the last read; returns how many there were."""
        with self.path.open("rb") as f:
            if os.fstat(f.fileno()).st_size < self._offset:
                # Rewritten rather than appended to: start again (imports skip what they hold).
                self.transcript, self._offset = Transcript(session_id=self.path.stem), 0
            before = self.transcript.lines
            f.seek(self._offset)
            for raw in f:
                if complete_only and not raw.endswith(b"\n"):
                    break
                self._offset += len(raw)
                if raw.strip():
                    self._add(raw)
        return self.transcript.lines - before

    def _add(self, raw: bytes) -> None:
        out = self.transcript
        out.lines += 1
        try:
            obj = json.loads(raw)
        except ValueError:
            obj = None
        if not isinstance(obj, dict):
            out.malformed += 1
            return
        for key, attr in (("customTitle", "custom_title"), ("aiTitle", "ai_title")):
            if isinstance(obj.get(key), str) and obj[key].strip():
                setattr(out, attr, obj[key].strip())
        kind = obj.get("type")
        if kind == "summary" and isinstance(obj.get("summary"), str):
            out.summary = obj["summary"].strip() or out.summary
        uuid = obj.get("uuid")
        if kind in _ENTRY_TYPES:
            # A repeated uuid would put one entry in the thread twice; the first one counts.
            if isinstance(uuid, str) and uuid not in out.line_of:
                out.line_of[uuid] = out.lines
                out.entries.append(obj)
        elif kind not in _BOOKKEEPING:
            text = raw.decode("utf-8", "replace").strip()
            out.unknown.append(RawLine(out.lines, kind if isinstance(kind, str) else "", text))
