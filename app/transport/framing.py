"""NDJSON framing for agent stdout: raw chunks in, complete lines out, JSON objects parsed.

Agent CLIs write one JSON object per line, but a single line can be many megabytes (a
tool result with an image, a large file read), and chunks from the pipe split lines
anywhere, including inside a multi-byte UTF-8 sequence. ``asyncio.StreamReader.readline``
gives up at 64 KiB and the Claude Agent SDK's reader at 1 MiB
(anthropics/claude-agent-sdk-python#98), so the transport frames lines itself.
"""

from __future__ import annotations

import json
import logging
from typing import Any

import orjson

log = logging.getLogger(__name__)

__all__ = ["DEFAULT_MAX_LINE_BYTES", "LineFramer", "parse_json_line"]

# Far above anything a CLI legitimately writes; only stops a runaway child from
# growing the buffer until the app runs out of memory.
DEFAULT_MAX_LINE_BYTES = 256 * 1024 * 1024

_PREVIEW_CHARS = 200


class LineFramer:
    """Split a byte stream into ``\\n``-terminated lines (terminator removed).

    Only the newly pushed chunk is scanned for newlines, so a line that arrives in
    thousands of chunks costs linear time. A line longer than ``max_line_bytes`` is
    dropped (and counted in ``dropped_lines``) instead of being buffered without bound.
    """

    def __init__(self, max_line_bytes: int = DEFAULT_MAX_LINE_BYTES) -> None:
        if max_line_bytes <= 0:
            raise ValueError("max_line_bytes must be positive")
        self.max_line_bytes = max_line_bytes
        self.dropped_lines = 0
        self._pending = bytearray()
        self._discarding = False

    def push(self, chunk: bytes) -> list[bytes]:
        """Add ``chunk``; return the lines it completed, in order."""
        lines: list[bytes] = []
        start = 0
        while (end := chunk.find(b"\n", start)) >= 0:
            piece = chunk[start:end]
            start = end + 1
            if self._discarding:
                self._discarding = False
                continue
            if len(self._pending) + len(piece) > self.max_line_bytes:
                self._drop(len(self._pending) + len(piece))
                continue
            if self._pending:
                self._pending += piece
                lines.append(bytes(self._pending))
                self._pending.clear()
            else:
                lines.append(piece)
        rest = chunk[start:]
        if rest and not self._discarding:
            if len(self._pending) + len(rest) > self.max_line_bytes:
                self._drop(len(self._pending) + len(rest))
                self._discarding = True
            else:
                self._pending += rest
        return lines

    def flush(self) -> bytes | None:
        """Return the unterminated last line at end of stream, if there is one."""
        self._discarding = False
        if not self._pending:
            return None
        line = bytes(self._pending)
        self._pending.clear()
        return line

    def _drop(self, size: int) -> None:
        self.dropped_lines += 1
        self._pending.clear()
        log.warning(
            "dropping an output line of more than %d bytes (limit %d)", size, self.max_line_bytes
        )


MAX_DEPTH = 64
TOO_DEEP = "[nested too deep to show]"


def parse_json_line(line: bytes) -> dict[str, Any] | None:
    """Parse one framed line into a JSON object, or return None to skip it.

    Blank lines and lines that do not start with ``{`` are skipped silently; some CLI
    builds print debug noise such as ``[SandboxDebug] ...`` to stdout
    (anthropics/claude-agent-sdk-python#347), and the caller decides whether to log it.
    A line that starts with ``{`` but is not valid JSON is logged and skipped: one bad
    line must not take down the reader for the whole session.
    """
    data = line.strip()
    if not data.startswith(b"{"):
        return None
    try:
        value = _loads(data)
    except (ValueError, RecursionError) as exc:
        # RecursionError: nesting deeper than the interpreter's stack allows, which is
        # valid JSON but still only one line to skip.
        log.warning("skipping corrupt JSON line (%s): %s", exc, _preview(data))
        return None
    if not isinstance(value, dict):
        log.warning("skipping a JSON line that is not an object: %s", _preview(data))
        return None
    # Counting brackets is cheap and bounds the depth, so ordinary lines skip the walk.
    if data.count(b"{") + data.count(b"[") > MAX_DEPTH:
        capped = _cap_depth(value, 0)
        assert isinstance(capped, dict)
        return capped
    return value


# Every digit becomes "0", everything else a space: a run of 19 zeros is a long number.
_DIGITS = bytes(48 if 48 <= b <= 57 else 32 for b in range(256))
_LONG_NUMBER = b"0" * 19


def _loads(data: bytes) -> Any:
    """``json.loads``, several times faster for the lines agents write most.

    orjson parses most lines; but it turns integers beyond 64 bits into floats and
    refuses what the standard module reads (invalid UTF-8, lone surrogates, NaN, 1e400,
    very deep nesting). Lines with a long digit run, or that orjson refuses, go to the
    standard module, so every line means exactly what it did before.
    """
    if _LONG_NUMBER not in data.translate(_DIGITS):
        try:
            return orjson.loads(data)
        except orjson.JSONDecodeError:
            pass
    return json.loads(data.decode("utf-8", errors="replace"))


def _cap_depth(value: Any, depth: int) -> Any:
    """Replace what lies deeper than ``MAX_DEPTH`` by a note.

    Such input is valid JSON, but storing and serving it would fail further up (the
    serializers have depth limits), and no real tool input needs it.
    """
    if isinstance(value, dict):
        if depth >= MAX_DEPTH:
            return TOO_DEEP
        return {k: _cap_depth(v, depth + 1) for k, v in value.items()}
    if isinstance(value, list):
        if depth >= MAX_DEPTH:
            return TOO_DEEP
        return [_cap_depth(v, depth + 1) for v in value]
    return value


def _preview(data: bytes) -> str:
    text = data.decode("utf-8", errors="replace")
    return text if len(text) <= _PREVIEW_CHARS else text[:_PREVIEW_CHARS] + "…"
