"""Payloads of megabytes (a ``cat`` of a big file, a long tool result), encoded before the
event writer sees them.

Every session's events pass through the one writer thread, so whatever the writer spends
on one session's event every other session waits for. Encoding 20 MB of text took it
40 ms alone, and a few hundred with the event loop competing for the interpreter lock.
The ``Preparer`` does it on a thread of its own instead: an event too big to encode on
the loop goes there, and so does everything its session appends until it has passed,
so each session's events still reach the writer in order while other sessions' go
straight on. Long strings are encoded a slice at a time with the lock let go between
slices, so neither the loop nor the writer is held up for the whole encoding.
"""

from __future__ import annotations

import json
import logging
import queue
import threading
import time
from collections import Counter
from collections.abc import Callable
from typing import Any

from app.services.store.records import StoredEvent

log = logging.getLogger(__name__)

# A payload holding more text than this is encoded by the preparer, in slices this long.
BIG_PAYLOAD_CHARS = 512 * 1024
SLICE_CHARS = 1024 * 1024
# Past this many values a payload counts as big without looking further.
WALK_LIMIT = 5000


def is_big(payload: object) -> bool:
    """Whether ``payload`` holds more than ``BIG_PAYLOAD_CHARS`` of text (or is too
    large to tell cheaply)."""
    size = 0
    stack = [payload]
    for _ in range(WALK_LIMIT):
        if not stack:
            return False
        value = stack.pop()
        if isinstance(value, str):
            size += len(value)
            if size > BIG_PAYLOAD_CHARS:
                return True
        elif isinstance(value, dict):
            stack.extend(value.values())
        elif isinstance(value, list | tuple):
            stack.extend(value)
    return bool(stack)


def encode_gently(payload: dict[str, Any], pause: Callable[[], None]) -> str:
    """Exactly ``records.encode_payload(payload)``, with long strings encoded a slice at
    a time and ``pause`` called between slices."""
    parts: list[str] = []
    _encode(payload, parts, pause)
    return "".join(parts)


def _encode(value: object, parts: list[str], pause: Callable[[], None]) -> None:
    if type(value) is str and len(value) > SLICE_CHARS:
        # A slice boundary never splits an escape: each character is escaped on its own.
        parts.append('"')
        for start in range(0, len(value), SLICE_CHARS):
            parts.append(json.dumps(value[start : start + SLICE_CHARS])[1:-1])
            pause()
        parts.append('"')
    elif type(value) is dict and _holds_long_text(value) and all(type(k) is str for k in value):
        parts.append("{")
        for n, (key, item) in enumerate(value.items()):
            parts.append(("," if n else "") + json.dumps(key) + ":")
            _encode(item, parts, pause)
        parts.append("}")
    elif type(value) in (list, tuple) and _holds_long_text(value):
        assert isinstance(value, list | tuple)
        parts.append("[")
        for n, item in enumerate(value):
            if n:
                parts.append(",")
            _encode(item, parts, pause)
        parts.append("]")
    else:
        parts.append(json.dumps(value, separators=(",", ":")))


def _holds_long_text(value: object) -> bool:
    if type(value) is str:
        return len(value) > SLICE_CHARS
    if isinstance(value, dict):
        return any(_holds_long_text(v) for v in value.values())
    if isinstance(value, list | tuple):
        return any(_holds_long_text(v) for v in value)
    return False


def _yield_lock() -> None:
    time.sleep(0)  # lets go of the interpreter lock, so the other threads can take it


def encode_record(record: StoredEvent) -> None:
    """Encode a payload the event loop left unencoded. (Its API JSON is not made here: a
    stream sends a big event as a stand-in, and the whole event is read back by seq.)"""
    try:
        record.payload_json = encode_gently(record.payload, _yield_lock)
    except (TypeError, ValueError, RecursionError) as exc:
        # Its seq is taken: store a note in its place rather than leave a gap.
        log.error("event %s #%d cannot be encoded: %s", record.session_id, record.seq, exc)
        record.payload_json = json.dumps({"unstorable": str(exc)})


_STOP = object()


class Preparer:
    """A thread that encodes big payloads and hands every item it took to ``forward``
    (the writer's queue) in the order it took them."""

    def __init__(
        self,
        forward: Callable[[object], None],
        encode: Callable[[StoredEvent], None] = encode_record,
    ) -> None:
        self._forward = forward
        self._encode = encode
        self._queue: queue.SimpleQueue[object] = queue.SimpleQueue()
        # Held while deciding where an item goes and while handing one on, so an item
        # never overtakes one of its session's that is still here.
        self._lock = threading.Lock()
        self._sessions: Counter[str] = Counter()  # a session's events here
        self._items = 0  # everything here, barriers included
        self._thread: threading.Thread | None = None

    def take(self, record: StoredEvent) -> bool:
        """Take ``record`` if it is not encoded yet or its session has an event here;
        False: nothing of its session is here, it can go straight to the writer."""
        with self._lock:
            if record.payload_json and not self._sessions[record.session_id]:
                return False
            self._sessions[record.session_id] += 1
            self._put(record)
            return True

    def take_barrier(self, item: object) -> bool:
        """Take a mark that must reach the writer after everything here; False if
        nothing is here (it can go straight to the writer)."""
        with self._lock:
            if not self._items:
                return False
            self._put(item)
            return True

    def close(self, timeout: float) -> None:
        """Hand on what is here, then end the thread (blocks the caller)."""
        thread = self._thread
        if thread is not None:
            self._queue.put(_STOP)
            thread.join(timeout)

    def _put(self, item: object) -> None:
        self._items += 1
        if self._thread is None:
            self._thread = threading.Thread(
                target=self._run, name="angelia-event-preparer", daemon=True
            )
            self._thread.start()
        self._queue.put(item)

    def _run(self) -> None:
        while True:
            item = self._queue.get()
            if item is _STOP:
                return
            if isinstance(item, StoredEvent) and not item.payload_json:
                try:
                    self._encode(item)
                except Exception:  # never let one event end the thread, or hold the rest
                    log.exception("preparing event %s #%d failed", item.session_id, item.seq)
                    item.payload_json = json.dumps({"unstorable": "could not be encoded"})
            with self._lock:
                self._forward(item)
                self._items -= 1
                if isinstance(item, StoredEvent):
                    self._sessions[item.session_id] -= 1
                    if not self._sessions[item.session_id]:
                        del self._sessions[item.session_id]
