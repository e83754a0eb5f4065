"""Property tests of Claude Code's stream-json parser (app/brains/claude/protocol.py).

Whatever a stdout line holds, ``ClaudeStreamParser.parse`` returns a list of known items
and never raises, and every event it yields can be stored (JSON without NaN/Infinity).
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from app.brains.claude.protocol import (
    ClaudeStreamParser,
    ControlReply,
    Outgoing,
    PermissionPrompt,
    SessionReported,
)
from app.brains.events import BrainEvent
from app.transport.framing import parse_json_line

PROPS = settings(max_examples=200, deadline=None, derandomize=True, database=None)
STREAMS = settings(max_examples=60, deadline=None, derandomize=True, database=None)

text = st.text(st.characters(exclude_categories=["Cs"]), max_size=30)
scalars = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**63), max_value=2**63 - 1)
    | st.floats(allow_nan=False, allow_infinity=False)
    | text
)
values = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(text, inner, max_size=4),
    max_leaves=8,
)

# Mostly flat values for fields (fast to generate), with the fully recursive ones mixed in.
loose = (
    scalars | st.lists(scalars, max_size=3) | st.dictionaries(text, scalars, max_size=3) | values
)
numbers = (
    st.integers(min_value=-(2**63), max_value=2**63 - 1)
    | st.floats(allow_nan=False, allow_infinity=False)
    | loose
)


def w(good: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    """Mostly ``good``; sometimes a value of any other shape."""
    return st.integers(0, 4).flatmap(lambda i: good if i else loose)


word = st.text(st.characters(exclude_categories=["Cs"]), min_size=1, max_size=12)


def obj(required: dict[str, Any], **optional: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    """A message shape: pinned keys plus any subset of optional ones (values of any type)."""
    fixed = {k: v if isinstance(v, st.SearchStrategy) else st.just(v) for k, v in required.items()}
    return st.fixed_dictionaries(fixed, optional=optional)


block = st.one_of(
    obj({"type": st.sampled_from(["text", "x"]), "text": w(word)}),
    obj({"type": "thinking", "thinking": w(word)}, signature=w(word)),
    obj(
        {
            "type": st.sampled_from(["tool_use", "server_tool_use"]),
            "id": w(word),
            "name": w(word),
            "input": w(st.dictionaries(text, loose, max_size=4)),
        }
    ),
    obj({"type": "image"}, source=loose),
)
result_block = obj(
    {
        "type": st.sampled_from(["tool_result", "text"]),
        "tool_use_id": w(word),
        "content": st.one_of(text, w(st.lists(block, max_size=3))),
    },
    is_error=w(st.booleans()),
)
SHAPES: dict[str, st.SearchStrategy[Any]] = {
    "assistant": obj(
        {
            "type": "assistant",
            "message": w(obj({"content": w(st.lists(block, max_size=4))}, id=w(word))),
        }
    ),
    "user": obj(
        {
            "type": "user",
            "message": w(obj({"content": w(st.lists(result_block, max_size=3))})),
        }
    ),
    "stream_event": obj(
        {
            "type": "stream_event",
            "event": w(
                obj(
                    {
                        "type": st.sampled_from(["message_start", "content_block_delta", "x"]),
                        "delta": w(
                            obj({"type": st.sampled_from(["text_delta", "x"]), "text": w(word)})
                        ),
                        "message": w(obj({"id": w(word)})),
                    }
                )
            ),
        },
        parent_tool_use_id=st.integers(0, 4).flatmap(lambda i: w(word) if i == 0 else st.none()),
    ),
    "result": obj(
        {"type": "result"},
        subtype=w(word),
        is_error=w(st.booleans()),
        total_cost_usd=numbers,
        duration_ms=numbers,
        usage=w(st.dictionaries(text, numbers, max_size=3)),
        result=w(word),
        errors=w(st.lists(loose, max_size=3)),
        session_id=w(word),
        terminal_reason=w(word),
    ),
    "system": obj(
        {"type": "system", "subtype": w(st.sampled_from(["init", "status", "x"]))},
        session_id=w(word),
        model=w(word),
        permissionMode=w(word),
        apiKeySource=w(word),
        claude_code_version=w(word),
        tools=w(st.lists(w(word), max_size=3)),
        slash_commands=w(st.lists(w(word), max_size=3)),
    ),
    "control_request": obj(
        {
            "type": "control_request",
            "request_id": w(word),
            "request": w(
                obj(
                    {"subtype": w(st.sampled_from(["can_use_tool", "hook_callback", "x"]))},
                    tool_name=w(word),
                    input=w(st.dictionaries(text, loose, max_size=4)),
                    tool_use_id=w(word),
                    title=w(word),
                    description=w(word),
                    decision_reason=w(word),
                    blocked_path=w(word),
                    permission_suggestions=w(st.lists(loose, max_size=3)),
                    suppress_always_allow_rule=w(st.booleans()),
                )
            ),
        }
    ),
    "control_response": obj(
        {
            "type": "control_response",
            "response": w(
                obj(
                    {
                        "subtype": w(st.sampled_from(["success", "error"])),
                        "request_id": w(word),
                    },
                    response=loose,
                    error=w(word),
                )
            ),
        }
    ),
    "control_cancel_request": obj({"type": "control_cancel_request", "request_id": w(word)}),
    "anything": st.dictionaries(text, loose, max_size=5),
}
messages = st.one_of(*SHAPES.values())
KNOWN = (BrainEvent, ControlReply, Outgoing, PermissionPrompt, SessionReported)


def check(items: object) -> None:
    assert isinstance(items, list)
    for item in items:
        assert isinstance(item, KNOWN), item
        event = item.event if isinstance(item, PermissionPrompt) else item
        if isinstance(event, BrainEvent):
            json.dumps(event.payload(), allow_nan=False)
        if isinstance(item, Outgoing):
            json.dumps(item.message, allow_nan=False)


@PROPS
@given(message=st.dictionaries(text, values, max_size=8))
def test_arbitrary_dicts(message: dict[str, Any]) -> None:
    check(ClaudeStreamParser().parse(message))


@PROPS
@given(message=values)
def test_arbitrary_json_values(message: Any) -> None:
    """The parser is typed for dicts, but the transport only promises JSON."""
    check(ClaudeStreamParser().parse(message if isinstance(message, dict) else {"v": message}))


@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_each_message_shape(shape: str) -> None:
    @STREAMS
    @given(message=SHAPES[shape])
    def run(message: dict[str, Any]) -> None:
        check(ClaudeStreamParser().parse(message))

    run()


@STREAMS
@given(stream=st.lists(messages, min_size=2, max_size=6))
def test_protocol_shaped_streams(stream: list[dict[str, Any]]) -> None:
    parser = ClaudeStreamParser()
    for message in stream:
        check(parser.parse(message))


@STREAMS
@given(stream=st.lists(messages, min_size=1, max_size=3))
def test_through_the_line_parser(stream: list[dict[str, Any]]) -> None:
    parser = ClaudeStreamParser()
    for message in stream:
        parsed = parse_json_line(json.dumps(message).encode())
        assert parsed == message
        check(parser.parse(parsed))


EXTREME = [
    b'{"type":"result","duration_ms":1e400}',
    b'{"type":"result","duration_ms":NaN}',
    b'{"type":"result","duration_ms":-Infinity}',
    b'{"type":"result","total_cost_usd":1' + b"0" * 400 + b"}",
    b'{"type":"result","total_cost_usd":Infinity}',
]


@pytest.mark.parametrize("line", EXTREME, ids=lambda b: b.decode()[:50])
def test_numbers_python_cannot_convert(line: bytes) -> None:
    message = parse_json_line(line)
    assert message is not None
    check(ClaudeStreamParser().parse(message))
