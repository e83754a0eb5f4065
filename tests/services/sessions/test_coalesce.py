"""Coalescing of text deltas that were ready at the same moment."""

from __future__ import annotations

from app.brains.events import AssistantText, BrainEvent, TextDelta, ToolCall
from app.services.sessions.turns import coalesce_deltas


def test_runs_of_one_message_merge_in_order() -> None:
    batch: list[BrainEvent] = [
        TextDelta("a", "m1"),
        TextDelta("b", "m1"),
        TextDelta("c", "m2"),
        ToolCall("t", "Bash", "ls"),
        TextDelta("d", "m2"),
        TextDelta("e", "m2"),
        AssistantText("de", "m2"),
    ]
    assert coalesce_deltas(batch) == [
        TextDelta("ab", "m1"),
        TextDelta("c", "m2"),
        ToolCall("t", "Bash", "ls"),
        TextDelta("de", "m2"),
        AssistantText("de", "m2"),
    ]


def test_single_events_pass_through() -> None:
    assert coalesce_deltas([TextDelta("x", "m")]) == [TextDelta("x", "m")]
    assert coalesce_deltas([]) == []
