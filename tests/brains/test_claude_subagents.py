"""A subagent's messages in Claude Code's stream: linked to the Agent call that runs it."""

from __future__ import annotations

from app.brains.claude.protocol import ClaudeStreamParser
from app.brains.events import AssistantText, TaskUpdate, TextDelta, ToolCall, ToolResult


def test_subagent_messages_carry_the_agent_calls_id() -> None:
    parser = ClaudeStreamParser()
    [call] = parser.parse(
        {
            "type": "assistant",
            "message": {
                "id": "m1",
                "content": [
                    {
                        "type": "tool_use",
                        "id": "toolu_agent",
                        "name": "Agent",
                        "input": {"description": "look around", "prompt": "list files"},
                    }
                ],
            },
            "parent_tool_use_id": None,
        }
    )
    assert isinstance(call, ToolCall) and call.parent_tool_call_id == ""
    assert "parent_tool_call_id" not in call.payload()
    inner = parser.parse(
        {
            "type": "assistant",
            "message": {
                "id": "m2",
                "content": [
                    {"type": "text", "text": "I will run ls"},
                    {
                        "type": "tool_use",
                        "id": "toolu_ls",
                        "name": "Bash",
                        "input": {"command": "ls"},
                    },
                ],
            },
            "parent_tool_use_id": "toolu_agent",
        }
    )
    text, tool = inner
    assert isinstance(text, AssistantText) and text.parent_tool_call_id == "toolu_agent"
    assert isinstance(tool, ToolCall) and tool.parent_tool_call_id == "toolu_agent"
    assert tool.payload()["parent_tool_call_id"] == "toolu_agent"
    [result] = parser.parse(
        {
            "type": "user",
            "message": {
                "content": [{"type": "tool_result", "tool_use_id": "toolu_ls", "content": "a.py"}]
            },
            "parent_tool_use_id": "toolu_agent",
        }
    )
    assert isinstance(result, ToolResult) and result.parent_tool_call_id == "toolu_agent"
    # A subagent's streamed text is not mixed into the main answer's deltas.
    streamed = parser.parse(
        {
            "type": "stream_event",
            "event": {"type": "content_block_delta", "delta": {"type": "text_delta", "text": "x"}},
            "parent_tool_use_id": "toolu_agent",
        }
    )
    assert not [i for i in streamed if isinstance(i, TextDelta)]


def test_task_messages_become_task_updates_linked_by_task_id() -> None:
    parser = ClaudeStreamParser()
    started = parser.parse(
        {
            "type": "system",
            "subtype": "task_started",
            "task_id": "t1",
            "tool_use_id": "toolu_agent",
            "description": "look around",
            "subagent_type": "general-purpose",
            "is_backgrounded": True,
        }
    )
    assert started == [
        TaskUpdate(
            task_id="t1",
            tool_call_id="toolu_agent",
            status="running",
            description="look around",
            subagent_type="general-purpose",
        )
    ]
    [updated] = parser.parse(
        {
            "type": "system",
            "subtype": "task_updated",
            "task_id": "t1",
            "patch": {"status": "completed"},
        }
    )
    assert isinstance(updated, TaskUpdate)
    assert (updated.tool_call_id, updated.status) == ("toolu_agent", "completed")
    [done] = parser.parse(
        {
            "type": "system",
            "subtype": "task_notification",
            "task_id": "t1",
            "tool_use_id": "toolu_agent",
            "status": "completed",
            "summary": "found 3 files",
            "output_file": "/tmp/x",
        }
    )
    assert isinstance(done, TaskUpdate) and done.summary == "found 3 files"
    assert parser.parse({"type": "system", "subtype": "task_started"}) == []
