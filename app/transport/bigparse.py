"""Lines of megabytes parsed in a process of their own.

Parsing a 20 MB tool-result line takes orjson 40-260 ms here, and orjson holds the
interpreter lock all along: wherever in this process it runs, no session's stream moves
and no request is answered until it is done (docs/performance.md, "A big line parsed
elsewhere"). So a big line goes to one child process, started on the first and kept: it
parses the line with ``parse_big_json_line`` (the same result as ever, every check
included) and sends back the value, pickled. Unpickling even a 20 MB string is a copy.

The child is this module's ``serve``, in Python's isolated mode: no agent, no secret, no
shell. It has a session of its own, so a Ctrl-C at the terminal stops the app, not it; it
ends when its input closes, which is when the app exits, however it exits. If it is gone
(killed, out of memory) the line is parsed here as before, and the next one starts a new
child.
"""

from __future__ import annotations

import atexit
import contextlib
import logging
import pickle
import struct
import subprocess
import sys
import threading
from pathlib import Path
from typing import IO, Any

from app.transport.framing import parse_big_json_line

__all__ = ["BigLineParser", "parse_big_line", "serve"]

log = logging.getLogger(__name__)
# What the parse logs (a corrupt line, say) is logged again here under the same name.
FRAMING_LOG = "app.transport.framing"
_SIZE = struct.Struct(">Q")
# The folder that holds the ``app`` package, and what the child runs.
ROOT = Path(__file__).resolve().parents[2]
CHILD = (
    "import sys; sys.path.insert(0, sys.argv[1]); from app.transport.bigparse import serve; serve()"
)

Result = tuple[dict[str, Any] | None, list[tuple[int, str]]]


class BigLineParser:
    """One child process that parses lines one at a time, for any thread."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._proc: subprocess.Popen[bytes] | None = None

    @property
    def pid(self) -> int | None:
        """The child's process id, once it runs."""
        return self._proc.pid if self._proc is not None else None

    def parse(self, line: bytes | bytearray) -> dict[str, Any] | None:
        """``parse_big_json_line(line)``, worked out in the child. Blocks: call it from a
        worker thread."""
        with self._lock:
            try:
                value, notes = self._ask(line)
            except (OSError, EOFError, ValueError, pickle.UnpicklingError) as exc:
                log.warning("the big-line parser stopped (%s); parsing here", exc)
                self._stop()
                return parse_big_json_line(line)
        for level, message in notes:
            logging.getLogger(FRAMING_LOG).log(level, "%s", message)
        return value

    def close(self) -> None:
        with self._lock:
            self._stop()

    def _ask(self, line: bytes | bytearray) -> Result:
        proc = self._proc
        if proc is None or proc.poll() is not None:
            # -I: nothing from the working folder or the environment is imported; the
            # app's own folder is put on the path by hand.
            proc = self._proc = subprocess.Popen(
                [sys.executable, "-I", "-c", CHILD, str(ROOT)],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                start_new_session=True,
            )
        assert proc.stdin is not None and proc.stdout is not None
        proc.stdin.write(_SIZE.pack(len(line)))
        proc.stdin.write(line)
        proc.stdin.flush()
        answer: Result = pickle.loads(_read_exactly(proc.stdout, _read_size(proc.stdout)))
        return answer

    def _stop(self) -> None:
        proc, self._proc = self._proc, None
        if proc is None:
            return
        with contextlib.suppress(OSError):
            assert proc.stdin is not None
            proc.stdin.close()  # the child's input ends: it exits
        try:
            proc.wait(timeout=1)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        if proc.stdout is not None:
            proc.stdout.close()


def _read_size(stream: IO[bytes]) -> int:
    (size,) = _SIZE.unpack(_read_exactly(stream, _SIZE.size))
    return int(size)


def _read_exactly(stream: IO[bytes], size: int) -> bytes:
    data = stream.read(size)
    if data is None or len(data) < size:
        raise EOFError(f"the parser's answer ended after {len(data or b'')} of {size} bytes")
    return data


_parser = BigLineParser()
atexit.register(_parser.close)


def parse_big_line(line: bytes | bytearray) -> dict[str, Any] | None:
    """``parse_big_json_line(line)`` in the app's parser process (see the module's doc)."""
    return _parser.parse(line)


def serve() -> None:
    """The child: a line in, its value and what the parse logged out, until input ends."""
    inp, out = sys.stdin.buffer, sys.stdout.buffer
    notes: list[tuple[int, str]] = []

    class Keep(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            notes.append((record.levelno, record.getMessage()))

    framing_log = logging.getLogger(FRAMING_LOG)
    framing_log.addHandler(Keep())
    framing_log.setLevel(logging.DEBUG)
    framing_log.propagate = False
    while header := inp.read(_SIZE.size):
        (size,) = _SIZE.unpack(header)
        line = _read_exactly(inp, size)
        notes.clear()
        answer = pickle.dumps((parse_big_json_line(line), list(notes)), pickle.HIGHEST_PROTOCOL)
        out.write(_SIZE.pack(len(answer)))
        out.write(answer)
        out.flush()
