"""Lines of megabytes: parsed off the event loop with the same result as any other line.

``parse_big_json_line`` runs in a worker thread and scans a line a slice at a time; the
slice boundaries must never change what a line means (a long digit run cut in two would
otherwise reach orjson and lose its exactness). ``AgentProcess`` hands big lines to it
and must keep every message in order with the small lines around it.
"""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path

import pytest

from app.transport import AgentProcess
from app.transport.framing import (
    BIG_LINE_BYTES,
    MAX_DEPTH,
    SCAN_SLICE_BYTES,
    TOO_DEEP,
    LineFramer,
    parse_big_json_line,
    parse_json_line,
)


def padded(tail: bytes, at: int) -> bytes:
    """A JSON object line in which ``tail`` starts at byte ``at``."""
    head = b'{"pad":"'
    filler = b"x" * (at - len(head) - len(b'",'))
    return head + filler + b'",' + tail


# A 23-digit integer that starts 5 bytes before the first slice boundary, so it is cut in
# two by the slicing: it must still go to the standard module and stay an exact int.
ACROSS_BOUNDARY = padded(b'"n":12345678901234567890123}', SCAN_SLICE_BYTES - 5)
LINES = [
    ACROSS_BOUNDARY,
    b" \t\x0b\x0c" + ACROSS_BOUNDARY + b" \r\x0c",
    padded(b'"s":"\\ud83d\\ude00 \\ud800 \xc3\xa9"}', BIG_LINE_BYTES),
    padded(b'"bad":"\xff\xfe"}', BIG_LINE_BYTES),
    padded(b'"nan":NaN,"big":1e400}', BIG_LINE_BYTES),
    padded(b'"deep":' + b"[" * (MAX_DEPTH + 5) + b"]" * (MAX_DEPTH + 5) + b"}", BIG_LINE_BYTES),
    padded(b'"broken"', BIG_LINE_BYTES),
    b"[" + b"1," * BIG_LINE_BYTES + b"1]",
    b"[SandboxDebug] " + b"y" * BIG_LINE_BYTES,
    b"",
    b"   ",
]


@pytest.mark.parametrize("line", LINES, ids=range(len(LINES)))
def test_a_big_line_means_what_it_means_as_a_small_one(line: bytes) -> None:
    expected = parse_json_line(line)
    assert parse_big_json_line(line) == expected
    assert parse_big_json_line(bytearray(line)) == expected


def test_a_digit_run_across_a_slice_boundary_stays_exact() -> None:
    value = parse_big_json_line(ACROSS_BOUNDARY)
    assert value is not None and value["n"] == 12345678901234567890123


def test_nesting_beyond_the_limit_is_capped_in_a_big_line_too() -> None:
    line = padded(b'"deep":' + b"[" * (MAX_DEPTH + 5) + b"]" * (MAX_DEPTH + 5) + b"}", 2**20)
    value = parse_big_json_line(line)
    assert value is not None
    node = value["deep"]
    for _ in range(MAX_DEPTH - 1):
        node = node[0]
    assert node == TOO_DEEP


def test_a_line_gathered_from_many_chunks_comes_out_whole() -> None:
    line = padded(b'"end":true}', 3 * 2**20)
    framer = LineFramer()
    out = []
    for start in range(0, len(line), 65536):
        out += framer.push(line[start : start + 65536])
    out += framer.push(b"\nnext\n")
    assert out == [line, b"next"]


ECHO = """
import sys
for line in sys.stdin:
    sys.stdout.write(line)
    sys.stdout.flush()
"""


async def test_big_lines_come_out_in_order_with_the_small_ones(tmp_path: Path) -> None:
    script = tmp_path / "echo.py"
    script.write_text(ECHO)
    process = AgentProcess(name="echo")
    await process.start([sys.executable, str(script)], cwd=str(tmp_path), env={})
    sent = []
    for n in range(12):
        size = 3 * BIG_LINE_BYTES if n % 4 == 1 else 10
        sent.append({"n": n, "text": "é😀\\" * (size // 4)})

    async def write_all() -> None:  # beside the reading: the echo blocks on a full pipe
        for message in sent:
            await process.write_json(message)

    writer = asyncio.create_task(write_all())
    received = []
    try:
        async for message in process.messages():
            received.append(message)
            if len(received) == len(sent):
                break
        await writer
    finally:
        await process.close(timeout=2)
    assert [m["n"] for m in received] == list(range(12))
    assert received == json.loads(json.dumps(sent))
