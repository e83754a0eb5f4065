"""Unit tests of the NDJSON framer and the line parser."""

from __future__ import annotations

import json
import logging
import random

import pytest

from app.transport import LineFramer, parse_json_line

LINES = [
    b'{"type":"system","subtype":"init"}',
    '{"type":"assistant","text":"caf\u00e9 \u2014 \U0001f600"}'.encode(),
    b"",
    b'{"type":"result","n":3}',
]
STREAM = b"\n".join(LINES) + b"\n"


def _frame(pieces: list[bytes], framer: LineFramer | None = None) -> list[bytes]:
    framer = framer or LineFramer()
    out: list[bytes] = []
    for piece in pieces:
        out += framer.push(piece)
    tail = framer.flush()
    return out + ([tail] if tail is not None else [])


def test_every_single_split_point_gives_the_same_lines() -> None:
    # Includes splits inside the multi-byte UTF-8 sequences of the second line.
    for i in range(len(STREAM) + 1):
        assert _frame([STREAM[:i], STREAM[i:]]) == LINES, i


def test_random_multi_splits_and_byte_by_byte() -> None:
    rng = random.Random(7)
    for _ in range(200):
        cuts = sorted(rng.sample(range(1, len(STREAM)), rng.randint(1, 12)))
        pieces = [STREAM[a:b] for a, b in zip([0, *cuts], [*cuts, len(STREAM)], strict=True)]
        assert _frame(pieces) == LINES
    assert _frame([bytes([b]) for b in STREAM]) == LINES


def test_many_lines_in_one_chunk_and_empty_pushes() -> None:
    framer = LineFramer()
    assert framer.push(b"") == []
    assert framer.push(STREAM * 3) == LINES * 3
    assert framer.flush() is None


def test_unterminated_last_line_comes_out_of_flush() -> None:
    framer = LineFramer()
    assert framer.push(b'{"a":1}\n{"b":') == [b'{"a":1}']
    assert framer.push(b"2}") == []
    assert framer.flush() == b'{"b":2}'
    assert framer.flush() is None


def test_ten_megabyte_line_in_64k_chunks() -> None:
    payload = {"type": "assistant", "text": "x" * (10 * 1024 * 1024)}
    data = json.dumps(payload).encode() + b"\n" + b'{"type":"result"}\n'
    framer = LineFramer()
    lines: list[bytes] = []
    for i in range(0, len(data), 65536):
        lines += framer.push(data[i : i + 65536])
    assert len(lines) == 2
    assert parse_json_line(lines[0]) == payload
    assert parse_json_line(lines[1]) == {"type": "result"}


def test_guard_drops_only_the_oversized_line() -> None:
    framer = LineFramer(max_line_bytes=16)
    # Oversized inside one chunk, then oversized across chunks; neighbours survive.
    assert framer.push(b'{"a":1}\n' + b"y" * 40 + b'\n{"b":2}\n') == [b'{"a":1}', b'{"b":2}']
    assert framer.push(b"z" * 10) == []
    assert framer.push(b"z" * 10) == []
    assert framer.push(b"z" * 100 + b'\n{"c":3}\n') == [b'{"c":3}']
    assert framer.dropped_lines == 2
    assert framer.flush() is None


def test_default_guard_is_far_above_ten_megabytes() -> None:
    assert LineFramer().max_line_bytes >= 256 * 1024 * 1024
    with pytest.raises(ValueError):
        LineFramer(max_line_bytes=0)


def test_invalid_utf8_is_replaced_not_fatal() -> None:
    line = b'{"type":"assistant","text":"ok \xff\xfe bad"}'
    parsed = parse_json_line(line)
    assert parsed is not None and parsed["text"] == "ok \ufffd\ufffd bad"


@pytest.mark.parametrize(
    "line",
    [b"", b"   ", b"\r", b"[SandboxDebug] loading", b"Warning: something", b"[1, 2]", b'"str"'],
)
def test_blank_and_noise_lines_are_skipped(line: bytes) -> None:
    assert parse_json_line(line) is None


def test_crlf_and_surrounding_space_are_tolerated() -> None:
    assert parse_json_line(b'  {"a": 1}\r') == {"a": 1}


def test_corrupt_json_is_logged_and_skipped(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="app.transport.framing"):
        assert parse_json_line(b'{"type": "assistant", broken') is None
    assert any("corrupt JSON" in r.getMessage() for r in caplog.records)


def test_deep_nesting_is_capped_and_shallow_lines_are_untouched() -> None:
    from app.transport.framing import MAX_DEPTH, TOO_DEEP

    deep = '{"a":' * 300 + "1" + "}" * 300
    value = parse_json_line(deep.encode())
    assert value is not None
    depth, node = 0, value
    while isinstance(node, dict):
        node, depth = node["a"], depth + 1
    assert node == TOO_DEEP and depth == MAX_DEPTH
    shallow = {"type": "assistant", "message": {"content": [{"type": "text", "text": "{[{"}]}}
    import json

    assert parse_json_line(json.dumps(shallow).encode()) == shallow
