"""SSE event names and how stored events are folded for the page."""

from __future__ import annotations

from app.web.transcript import SSE_SWAP_EVENTS, fold_events, sse_event_name
from tests.web.test_render import ev


def test_sse_event_names() -> None:
    assert sse_event_name("error") == "agent_error"
    assert sse_event_name("text_delta") == "text_delta"
    assert sse_event_name("error") in SSE_SWAP_EVENTS.split(",")


def test_fold_drops_deltas_of_finished_messages() -> None:
    events = [
        ev(1, "user_message", text="hi"),
        ev(2, "text_delta", text="Hel", message_id="m1"),
        ev(3, "text_delta", text="lo", message_id="m1"),
        ev(4, "assistant_message", text="Hello", message_id="m1"),
    ]
    folded = fold_events(events)
    assert [e["kind"] for e in folded] == ["user_message", "assistant_message"]


def test_fold_merges_streaming_deltas() -> None:
    events = [
        ev(1, "assistant_message", text="Done", message_id="m1"),
        ev(2, "text_delta", text="Wor", message_id="m2"),
        ev(3, "text_delta", text="king", message_id="m2"),
        ev(4, "status", status="working"),
        ev(5, "text_delta", text="…", message_id="m2"),
        ev(6, "text_delta", text="other", message_id="m3"),
    ]
    folded = fold_events(events)
    assert [e["kind"] for e in folded] == [
        "assistant_message",
        "text_stream",
        "status",
        "text_stream",
    ]
    assert folded[1] == {
        "kind": "text_stream",
        "message_id": "m2",
        "session_id": "s1",
        "at": "2026-12-02T14:00:00Z",
        "text": "Working…",
        "seq": 5,
    }
    assert folded[3]["text"] == "other" and folded[3]["seq"] == 6


def test_fold_keeps_deltas_that_precede_a_later_message_only_by_id() -> None:
    # A message id reused later must not swallow deltas that come after its completion.
    events = [
        ev(1, "text_delta", text="a", message_id=""),
        ev(2, "assistant_message", text="a", message_id=""),
        ev(3, "text_delta", text="b", message_id=""),
    ]
    folded = fold_events(events)
    assert [(e["kind"], e.get("text")) for e in folded] == [
        ("assistant_message", "a"),
        ("text_stream", "b"),
    ]


def test_fold_attaches_decisions_and_tool_states() -> None:
    request = ev(1, "permission_request", permission_id="p1", tool="Bash", status="pending")
    other = ev(2, "permission_request", permission_id="p2", tool="Bash", status="pending")
    decision = ev(
        3, "permission_decision", permission_id="p1", decision="allow_once", source="user"
    )
    events = [
        request,
        other,
        decision,
        ev(4, "tool_call", tool_call_id="t1", tool="Read"),
        ev(5, "tool_result", tool_call_id="t1", output="x", is_error=False),
        ev(6, "tool_call", tool_call_id="t2", tool="Bash"),
        ev(7, "tool_result", tool_call_id="t2", output="x", is_error=True),
        ev(8, "tool_call", tool_call_id="t3", tool="Bash"),
        ev(9, "turn_end", stop_reason="end_turn"),
        ev(10, "tool_call", tool_call_id="t4", tool="Bash"),
    ]
    folded = fold_events(events)
    assert [e["seq"] for e in folded] == list(range(1, 11))
    assert folded[0]["decision"] is decision
    assert "decision" not in folded[1]
    assert folded[2] is decision
    assert "decision" not in request  # inputs are not modified
    states = {e["tool_call_id"]: e["state"] for e in folded if e["kind"] == "tool_call"}
    assert states == {"t1": "done", "t2": "failed", "t3": "stopped", "t4": "running"}


def test_fold_empty() -> None:
    assert fold_events([]) == []
