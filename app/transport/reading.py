"""Reading an agent's stdout: JSON objects a batch at a time, without stalling the loop.

Two things keep one agent's output from holding up everyone else (other sessions'
streams, HTTP requests, approvals), all on the one event loop:

* A big read is handed on in slices of about ``SLICE_S`` of parsing each, with a turn
  for the rest of the loop in between.
* A line of ``BIG_LINE_BYTES`` or more (a long tool result, an image) is parsed in a
  process of its own (``bigparse``), waited for in a worker thread, in order with the
  lines around it.

(Pausing an agent that writes flat out after each full read, for as long as handling
the read took, was measured too: with 19 paced sessions beside it, their latency did not
improve and the busy session's rate fell by a quarter.)
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator
from typing import Any

from app.transport.bigparse import parse_big_line
from app.transport.framing import BIG_LINE_BYTES, LineFramer, parse_json_line

log = logging.getLogger(__name__)

READ_CHUNK = 65536
# Parsing time after which a big read is handed on in pieces.
SLICE_S = 0.001


async def message_batches(
    stdout: asyncio.StreamReader, framer: LineFramer, name: str
) -> AsyncIterator[list[dict[str, Any]]]:
    """Each JSON object in ``stdout``, a list at a time (at least one), until it closes."""
    clock = asyncio.get_running_loop().time
    while chunk := await stdout.read(READ_CHUNK):
        batch: list[dict[str, Any]] = []
        pause_at = clock() + SLICE_S
        for line in framer.push(chunk):
            if len(line) >= BIG_LINE_BYTES:
                if batch:  # what came before it need not wait for its parse
                    yield batch
                    batch = []
                message = await asyncio.to_thread(parse_line, line, name, big=True)
            else:
                message = parse_line(line, name)
            if message is not None:
                batch.append(message)
            if batch and clock() > pause_at:
                yield batch
                batch = []
                await asyncio.sleep(0)
                pause_at = clock() + SLICE_S
        if batch:
            yield batch
    last = framer.flush()
    if last is not None:
        if len(last) >= BIG_LINE_BYTES:
            message = await asyncio.to_thread(parse_line, last, name, big=True)
        else:
            message = parse_line(last, name)
        if message is not None:
            yield [message]


def parse_line(line: bytes | bytearray, name: str, *, big: bool = False) -> dict[str, Any] | None:
    """One line's JSON object (None to skip it); noise that is not JSON is logged. A
    ``big`` one is parsed in the parser process (``bigparse``): call that in a thread."""
    message = parse_big_line(line) if big else parse_json_line(line)
    if message is None:
        head = line[:4096].lstrip()
        if head and not head.startswith(b"{"):
            log.info("%s wrote a non-JSON line: %r", name, line[:200])
    return message
