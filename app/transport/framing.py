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
import time
from collections.abc import Callable, Iterator
from typing import Any

import orjson

log = logging.getLogger(__name__)

__all__ = [
    "BIG_LINE_BYTES",
    "DEFAULT_MAX_LINE_BYTES",
    "LineFramer",
    "parse_big_json_line",
    "parse_json_line",
]

# From this size on a line is parsed off the event loop (``parse_big_json_line``).
BIG_LINE_BYTES = 1024 * 1024
# The checks before a big line's parse run over slices of this size, letting go of the
# interpreter lock between them (a slice takes well under a millisecond).
SCAN_SLICE_BYTES = 1024 * 1024

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

    def push(self, chunk: bytes) -> list[bytes | bytearray]:
        """Add ``chunk``; return the lines it completed, in order.

        A line that spanned chunks is the buffer it was gathered in, handed over rather
        than copied: for a line of many megabytes the copy alone held the loop for ms.
        """
        lines: list[bytes | bytearray] = []
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
                lines.append(self._pending)
                self._pending = bytearray()
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


Line = bytes | bytearray | memoryview
Pause = Callable[[], None] | None


def parse_json_line(line: bytes | bytearray) -> dict[str, Any] | None:
    """Parse one framed line into a JSON object, or return None to skip it.

    Blank lines and lines that do not start with ``{`` are skipped silently; some CLI
    builds print debug noise such as ``[SandboxDebug] ...`` to stdout
    (anthropics/claude-agent-sdk-python#347), and the caller decides whether to log it.
    A line that starts with ``{`` but is not valid JSON is logged and skipped: one bad
    line must not take down the reader for the whole session.
    """
    return _parse(line.strip(), None)


def parse_big_json_line(line: bytes | bytearray) -> dict[str, Any] | None:
    """``parse_json_line`` for a worker thread, with the same result for every line.

    The scans before the parse go over the line a slice at a time, and the thread lets
    go of the interpreter lock after each, so the event loop runs in between; nothing
    is copied whole. The parse itself is one call that keeps the lock (orjson about
    1 ms per MB here).
    """
    return _parse(_strip_view(line), _pause)


def _pause() -> None:
    time.sleep(0)  # lets go of the interpreter lock: a waiting thread takes it


_WHITESPACE = b" \t\n\r\x0b\x0c"  # what bytes.strip() removes


def _strip_view(line: bytes | bytearray) -> memoryview:
    """``line.strip()`` as a view into ``line`` (no copy)."""
    start, end = 0, len(line)
    while start < end and line[start] in _WHITESPACE:
        start += 1
    while end > start and line[end - 1] in _WHITESPACE:
        end -= 1
    return memoryview(line)[start:end]


def _parse(data: Line, pause: Pause) -> dict[str, Any] | None:
    if data[:1] != b"{":
        return None
    try:
        value = _loads(data, pause)
    except (ValueError, RecursionError) as exc:
        # RecursionError: nesting deeper than the interpreter's stack allows, which is
        # valid JSON but still only one line to skip.
        log.warning("skipping corrupt JSON line (%s): %s", exc, _preview(data))
        return None
    if not isinstance(value, dict):
        log.warning("skipping a JSON line that is not an object: %s", _preview(data))
        return None
    # Counting brackets is cheap and bounds the depth, so ordinary lines skip the walk.
    if _brackets(data, pause) > MAX_DEPTH:
        capped = _cap_depth(value, 0)
        assert isinstance(capped, dict)
        return capped
    return value


# Every digit becomes "0", everything else a space: a run of 19 zeros is a long number.
_DIGITS = bytes(48 if 48 <= b <= 57 else 32 for b in range(256))
_LONG_NUMBER = b"0" * 19


def _slices(data: Line, pause: Pause, overlap: int = 0) -> Iterator[bytes]:
    """``data`` whole, or with ``pause`` a slice at a time (each ``overlap`` bytes longer,
    so that what crosses a boundary is seen whole in one slice)."""
    if pause is None and not isinstance(data, memoryview):
        yield bytes(data) if isinstance(data, bytearray) else data
        return
    for start in range(0, len(data), SCAN_SLICE_BYTES):
        yield bytes(data[start : start + SCAN_SLICE_BYTES + overlap])
        if pause is not None:
            pause()


def _brackets(data: Line, pause: Pause) -> int:
    if pause is None and not isinstance(data, memoryview):
        return data.count(b"{") + data.count(b"[")
    return sum(piece.count(b"{") + piece.count(b"[") for piece in _slices(data, pause))


def _has_long_number(data: Line, pause: Pause) -> bool:
    if pause is None and not isinstance(data, memoryview):
        return _LONG_NUMBER in data.translate(_DIGITS)
    overlap = len(_LONG_NUMBER) - 1
    return any(_LONG_NUMBER in p.translate(_DIGITS) for p in _slices(data, pause, overlap))


def _loads(data: Line, pause: Pause) -> Any:
    """``json.loads``, several times faster for the lines agents write most.

    orjson parses most lines; but it turns integers beyond 64 bits into floats and
    refuses what the standard module reads (invalid UTF-8, lone surrogates, NaN, 1e400,
    very deep nesting). Lines with a long digit run, or that orjson refuses, go to the
    standard module, so every line means exactly what it did before.
    """
    if not _has_long_number(data, pause):
        try:
            return orjson.loads(data)
        except orjson.JSONDecodeError:
            pass
    return json.loads(str(data, "utf-8", errors="replace"))


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


def _preview(data: Line) -> str:
    # A character is at most 4 bytes: decoding this much gives the preview's characters
    # without decoding a line of many megabytes.
    head = _PREVIEW_CHARS * 4
    text = str(data[: head + 1], "utf-8", errors="replace")
    return text if len(text) <= _PREVIEW_CHARS else text[:_PREVIEW_CHARS] + "…"
