"""Claude Code's context figures and compaction, parsed from lines shaped as the real CLI
2.1.332 wrote them (measured against the fake model server; docs/backends.md)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from app.brains.claude.protocol import ClaudeStreamParser
from app.brains.events import Compacted, Usage


def stream(event: dict[str, Any], parent: str | None = None) -> dict[str, Any]:
    return {"type": "stream_event", "event": event, "parent_tool_use_id": parent}


def start(message_id: str, usage: dict[str, Any], parent: str | None = None) -> dict[str, Any]:
    message = {"id": message_id, "model": "claude-opus-5-5", "usage": usage}
    return stream({"type": "message_start", "message": message}, parent)


def result(window: int | None = 1_000_000) -> dict[str, Any]:
    figures = {"inputTokens": 43_685, "outputTokens": 12, "contextWindow": window}
    return {
        "type": "result",
        "subtype": "success",
        "usage": {"input_tokens": 0, "output_tokens": 0},
        "modelUsage": {"claude-opus-5-5": figures},
    }


def usage_of(parser: ClaudeStreamParser, *lines: dict[str, Any]) -> list[Usage]:
    return [item for line in lines for item in parser.parse(line) if isinstance(item, Usage)]


def test_used_is_what_the_newest_main_call_read_and_wrote() -> None:
    parser = ClaudeStreamParser()
    first = {
        "input_tokens": 3,
        "cache_read_input_tokens": 13_000,
        "cache_creation_input_tokens": 400,
    }
    second = {
        "input_tokens": 5,
        "cache_read_input_tokens": 13_500,
        "cache_creation_input_tokens": 0,
    }
    got = usage_of(
        parser,
        start("msg_1", {**first, "output_tokens": 1}),
        stream({"type": "message_delta", "usage": {"output_tokens": 40}}),
        start("msg_2", {**second, "output_tokens": 1}),
        # A subagent's call runs in a context of its own.
        start("msg_sub", {"input_tokens": 90_000}, parent="toolu_1"),
        stream({"type": "message_delta", "usage": {"output_tokens": 7}}),
        result(),
    )
    assert got == [Usage(used=5 + 13_500 + 7, size=1_000_000)]


def test_no_window_reported_gives_no_figures() -> None:
    parser = ClaudeStreamParser()
    got = usage_of(parser, start("msg_1", {"input_tokens": 10}), result(window=None))
    assert got == []
    assert usage_of(ClaudeStreamParser(), result()) == []


def test_compact_boundary_is_one_event_and_the_summary_becomes_the_context() -> None:
    parser = ClaudeStreamParser()
    usage_of(parser, start("msg_1", {"input_tokens": 13_436}), result())
    metadata = {"trigger": "manual", "pre_tokens": 13_440, "post_tokens": 2_541, "duration_ms": 92}
    boundary = {"type": "system", "subtype": "compact_boundary", "compact_metadata": metadata}
    assert parser.parse(boundary) == [Compacted(trigger="manual", before=13_440, after=2_541)]
    assert usage_of(parser, result()) == [Usage(used=2_541, size=1_000_000)]
    odd = {"type": "system", "subtype": "compact_boundary", "compact_metadata": {"pre_tokens": -1}}
    assert parser.parse(odd) == [Compacted(trigger="", before=None, after=None)]


@pytest.mark.parametrize(
    "line",
    [
        '{"type":"result","modelUsage":[1,2]}',
        '{"type":"result","modelUsage":{"m":"x"}}',
        '{"type":"result","modelUsage":{"m":{"contextWindow":1e400}}}',
        '{"type":"result","modelUsage":{"m":{"contextWindow":%s}}}' % ("9" * 400),
        '{"type":"result","modelUsage":{"m":{"contextWindow":-5}}}',
        '{"type":"system","subtype":"compact_boundary","compact_metadata":"x"}',
        '{"type":"stream_event","event":{"type":"message_start","message":{"usage":"x"}}}',
        '{"type":"stream_event","event":{"type":"message_delta","usage":{"output_tokens":1e400}}}',
    ],
)
def test_odd_figures_are_ignored_not_raised(line: str) -> None:
    parser = ClaudeStreamParser()
    usage_of(parser, start("msg_1", {"input_tokens": 10, "cache_read_input_tokens": "many"}))
    for item in parser.parse(json.loads(line)):
        assert not isinstance(item, Usage) or (item.size > 0 and 0 <= item.used < 2**53)
    # A later sane result still reports the call's figures.
    assert usage_of(parser, result()) == [Usage(used=10, size=1_000_000)]
