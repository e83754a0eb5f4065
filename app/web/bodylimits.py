"""Caps on JSON request bodies: size, nesting depth and structure, checked before parsing.

Python's JSON parser recurses once per level, so a body nested some thousands deep ends
in a RecursionError (a 500) wherever it is parsed; a size cap keeps one request from
holding the server's memory. The middleware reads a JSON body whole, refuses it with a
JSON error (413 too large, 400 too deep), and otherwise hands the very same bytes on.
FastAPI reads a body without a content type as JSON too, so such bodies are checked alike.

Depth is found without recursion: strings are cut out (a bracket inside one is text),
the brackets left are summed as running +1/-1 by C iterators, a slice at a time, and a
slice that cannot reach the bound is skipped on a count alone. The brackets are capped
too (``MAX_JSON_MARKS``), which bounds that scan for a body of nothing but brackets.
"""

from __future__ import annotations

import json
import operator
import re
from collections.abc import Callable
from itertools import accumulate, count
from typing import Any

import anyio
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from app.errors import ValidationFailed

# Exports nest a stored event's payload inside the document: a tool's input inside an
# event inside the list, a few levels each; 64 leaves room and stays far from recursion.
MAX_JSON_DEPTH = 64
# The largest body the app expects is a message with 10 images of 5 MiB, as base64
# (about 70 MB); a long session's export is far smaller.
MAX_JSON_BYTES = 128 * 1024 * 1024
# Brackets outside strings: 8 million arrays and objects, some hundred thousand events'
# worth of export, and about a second to scan when a body is made of nothing else.
MAX_JSON_MARKS = 16 * 1024 * 1024
# Bodies larger than this are scanned in a worker thread, a slice at a time, so the event
# loop keeps serving the streams meanwhile.
_THREAD_BYTES = 1024 * 1024
_SLICE = 256 * 1024

_STRING = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"', re.DOTALL)
# An opening bracket becomes 2 and a closing one 0, so the running sum minus the count
# of brackets so far is the depth; everything else goes.
_MARKS = bytes.maketrans(b"[{]}", b"\x02\x02\x00\x00")
_NOT_MARKS = bytes(b for b in range(256) if b not in b"[]{}")


class JsonLimitError(Exception):
    """The body breaks a cap; ``status`` is the HTTP status that says so."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


def check_json(raw: bytes, depth_limit: int = MAX_JSON_DEPTH) -> None:
    """Text that is not JSON may pass or not; the parser says what is wrong with it.

    Raises:
        JsonLimitError: ``raw`` nests deeper than ``depth_limit`` (400) or holds more
            than ``MAX_JSON_MARKS`` brackets (413).
    """
    if raw.count(b"[") + raw.count(b"{") <= depth_limit:
        return
    # A quote left over opens a string that never ends: what follows is not structure.
    marks = _STRING.sub(b"", raw).split(b'"', 1)[0].translate(_MARKS, _NOT_MARKS)
    if len(marks) > MAX_JSON_MARKS:
        raise JsonLimitError(413, f"The JSON holds more than {MAX_JSON_MARKS:,} brackets")
    depth = 0
    for start in range(0, len(marks), _SLICE):
        piece = marks[start : start + _SLICE]
        opens = piece.count(2)
        if depth + opens > depth_limit:
            peak = max(map(operator.sub, accumulate(piece), count(1)))
            if depth + peak > depth_limit:
                raise JsonLimitError(400, f"The JSON nests deeper than {depth_limit} levels")
        depth += 2 * opens - len(piece)


def load_json(raw: bytes, field: str, parse: Callable[[bytes], Any] | None = None) -> Any:
    """``raw`` parsed (by ``parse`` if given), for bodies the middleware does not see (a
    file in a form), after the same caps.

    Raises:
        ValidationFailed: not JSON, or nested deeper than ``MAX_JSON_DEPTH``.
    """
    try:
        check_json(raw)
    except JsonLimitError as exc:
        raise ValidationFailed(field, exc.message) from exc
    if parse is not None:
        return parse(raw)
    try:
        return json.loads(raw)
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:
        raise ValidationFailed(field, f"not valid JSON ({exc})") from exc


def _is_json(scope: Scope) -> bool:
    for name, value in scope.get("headers", ()):
        if name == b"content-type":
            media: bytes = value.split(b";", 1)[0].strip().lower()
            return media == b"application/json" or (
                media.startswith(b"application/") and media.endswith(b"+json")
            )
    return True


class JsonBodyLimits:
    """Refuses JSON bodies over ``max_bytes`` (413) or nested over ``max_depth`` (400)."""

    def __init__(
        self, app: ASGIApp, max_bytes: int = MAX_JSON_BYTES, max_depth: int = MAX_JSON_DEPTH
    ) -> None:
        self.app = app
        self.max_bytes = max_bytes
        self.max_depth = max_depth

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] in ("GET", "HEAD") or not _is_json(scope):
            await self.app(scope, receive, send)
            return
        too_big = f"The JSON body is larger than {self.max_bytes // (1024 * 1024)} MiB"
        if _declared_length(scope) > self.max_bytes:
            await _refuse(send, 413, too_big)
            return
        chunks: list[bytes] = []
        size = 0
        while True:
            message = await receive()
            if message["type"] != "http.request":
                return  # the client left before the body was in
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > self.max_bytes:
                await _refuse(send, 413, too_big)
                return
            chunks.append(chunk)
            if not message.get("more_body", False):
                break
        body = b"".join(chunks)
        try:
            if len(body) > _THREAD_BYTES:
                await anyio.to_thread.run_sync(check_json, body, self.max_depth)
            else:
                check_json(body, self.max_depth)
        except JsonLimitError as exc:
            await _refuse(send, exc.status, exc.message)
            return
        replayed = False

        async def replay() -> Message:
            nonlocal replayed
            if replayed:
                return await receive()
            replayed = True
            return {"type": "http.request", "body": body, "more_body": False}

        await self.app(scope, replay, send)


def _declared_length(scope: Scope) -> int:
    for name, value in scope.get("headers", ()):
        if name == b"content-length":
            return int(value) if value.isdigit() else 0
    return 0


async def _refuse(send: Send, status: int, message: str) -> None:
    body = json.dumps({"detail": message}).encode()
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})
