"""Property tests of the NDJSON framer and the line parser (app/transport/framing.py)."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from app.transport.framing import MAX_DEPTH, LineFramer, parse_json_line

FAST = settings(max_examples=300, deadline=None, derandomize=True, database=None)


def pieces(data: bytes, cuts: list[int]) -> list[bytes]:
    points = sorted({c % (len(data) + 1) for c in cuts})
    bounds = [0, *points, len(data)]
    return [data[a:b] for a, b in zip(bounds, bounds[1:], strict=False)]


def frame(chunks: list[bytes], framer: LineFramer) -> list[bytes]:
    out: list[bytes] = []
    for chunk in chunks:
        out += framer.push(chunk)
    tail = framer.flush()
    return out + ([tail] if tail is not None else [])


def expected_lines(data: bytes) -> list[bytes]:
    parts = data.split(b"\n")
    # A trailing newline ends the last line; an empty remainder is no line at all.
    return parts[:-1] if parts[-1] == b"" else parts


cut_lists = st.lists(st.integers(min_value=0, max_value=10_000), max_size=20)


@FAST
@given(data=st.binary(max_size=2_000), cuts=cut_lists)
def test_any_bytes_any_split_gives_the_input_lines(data: bytes, cuts: list[int]) -> None:
    framer = LineFramer()
    assert frame(pieces(data, cuts), framer) == expected_lines(data)
    assert framer.dropped_lines == 0


@FAST
@given(
    data=st.binary(max_size=2_000).map(lambda b: b.replace(b"\r", b"")),
    cuts=cut_lists,
    limit=st.integers(min_value=1, max_value=64),
)
def test_the_guard_drops_exactly_the_long_lines(data: bytes, cuts: list[int], limit: int) -> None:
    framer = LineFramer(max_line_bytes=limit)
    lines = expected_lines(data)
    assert frame(pieces(data, cuts), framer) == [x for x in lines if len(x) <= limit]
    assert framer.dropped_lines == sum(len(x) > limit for x in lines)


@FAST
@given(line=st.binary(max_size=3_000))
def test_parse_never_raises_on_bytes(line: bytes) -> None:
    value = parse_json_line(line)
    assert value is None or isinstance(value, dict)


@FAST
@given(prefix=st.sampled_from([b"{", b'{"a":', b'{"type":"x","v":', b" {"]), rest=st.binary())
def test_parse_never_raises_on_json_looking_garbage(prefix: bytes, rest: bytes) -> None:
    value = parse_json_line(prefix + rest)
    assert value is None or isinstance(value, dict)


@FAST
@given(text=st.text(max_size=200), bad=st.binary(min_size=1, max_size=8), at=st.integers(0, 200))
def test_invalid_utf8_inside_a_json_string_is_not_fatal(text: str, bad: bytes, at: int) -> None:
    encoded = json.dumps({"type": "assistant", "text": text}, ensure_ascii=False).encode()
    cut = min(at, len(encoded))
    value = parse_json_line(encoded[:cut] + b"\xff" + bad + encoded[cut:])
    assert value is None or isinstance(value, dict)


def test_nesting_deeper_than_the_stack_is_skipped_not_raised() -> None:
    for depth in (1_000, 100_000):
        value = parse_json_line(b'{"a":' + b"[" * depth + b"]" * depth + b"}")
        # Kept with its depth capped where a parser can read it, else skipped.
        assert value is None or _depth(value) <= MAX_DEPTH + 1
        assert parse_json_line(b'{"a":' + b"[" * depth) is None
    assert parse_json_line(b'{"a":' + b"[" * 100_000 + b"]" * 100_000 + b"}") is None


def _depth(value: object) -> int:
    if isinstance(value, dict):
        return 1 + max((_depth(v) for v in value.values()), default=0)
    if isinstance(value, list):
        return 1 + max((_depth(v) for v in value), default=0)
    return 0


# -- valid NDJSON -----------------------------------------------------------------------

text = st.text(st.characters(exclude_categories=["Cs"]), max_size=40)
json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**63), max_value=2**63)
    | st.floats(allow_nan=False, allow_infinity=False)
    | text,
    lambda inner: st.lists(inner, max_size=5) | st.dictionaries(text, inner, max_size=5),
    max_leaves=12,
)
objects = st.dictionaries(text, json_values, max_size=5)


@settings(max_examples=100, deadline=None, derandomize=True, database=None)
@given(
    docs=st.lists(objects, min_size=1, max_size=8),
    cuts=cut_lists,
    ascii_only=st.booleans(),
    crlf=st.booleans(),
    final_newline=st.booleans(),
)
def test_valid_ndjson_survives_any_split(
    docs: list[dict[str, Any]], cuts: list[int], ascii_only: bool, crlf: bool, final_newline: bool
) -> None:
    lines = [json.dumps(d, ensure_ascii=ascii_only).encode() for d in docs]
    end = b"\r\n" if crlf else b"\n"
    data = end.join(lines) + (end if final_newline else b"")
    framed = frame(pieces(data, cuts), LineFramer())
    assert [x.rstrip(b"\r") for x in framed] == lines
    assert [parse_json_line(x) for x in framed] == docs


JSON_VALUES = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(10**40), max_value=10**40)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=20,
)


@FAST
@given(obj=st.dictionaries(st.text(), JSON_VALUES, max_size=6), ascii_only=st.booleans())
def test_a_line_means_what_the_standard_json_module_reads(
    obj: dict[str, object], ascii_only: bool
) -> None:
    """The fast parser never changes a value: big integers stay integers, floats and
    text are exact, whichever way the agent escaped its text."""
    line = json.dumps(obj, ensure_ascii=ascii_only).encode()
    expected = json.loads(line)
    if line.count(b"{") + line.count(b"[") <= MAX_DEPTH:
        assert parse_json_line(line) == expected
