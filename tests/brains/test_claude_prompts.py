"""Questions and plans in Claude Code's protocol: what the parser makes of them."""

from __future__ import annotations

from app.brains.claude.protocol import ClaudeStreamParser, PermissionPrompt
from app.brains.events import ToolCall

QUESTION_INPUT = {
    "questions": [
        {
            "question": "Which database?",
            "header": "DB",
            "options": [{"label": "SQLite", "description": "a file"}],
            "multiSelect": False,
        }
    ]
}


def can_use_tool(tool: str, tool_input: dict[str, object], tool_use_id: str) -> dict[str, object]:
    return {
        "type": "control_request",
        "request_id": "r1",
        "request": {
            "subtype": "can_use_tool",
            "tool_name": tool,
            "input": tool_input,
            "tool_use_id": tool_use_id,
            "requires_user_interaction": True,
        },
    }


def prompt_of(items: list[object]) -> PermissionPrompt:
    [prompt] = [i for i in items if isinstance(i, PermissionPrompt)]
    return prompt


def test_ask_user_question_is_a_question_answered_once() -> None:
    prompt = prompt_of(
        ClaudeStreamParser().parse(can_use_tool("AskUserQuestion", QUESTION_INPUT, "toolu_q"))
    )
    asked = prompt.event
    assert asked.prompt_kind == "question"
    assert asked.title == "Which database?"
    assert [(o.option_id, o.choice) for o in asked.options] == [
        ("answer", "allow_once"),
        ("decline", "deny"),
    ]
    assert asked.input == QUESTION_INPUT == prompt.wire_input


def test_exit_plan_mode_shows_the_plan_from_its_tool_use_block() -> None:
    parser = ClaudeStreamParser()
    items = parser.parse(
        {
            "type": "assistant",
            "message": {
                "id": "msg_1",
                "content": [
                    {
                        "type": "tool_use",
                        "id": "toolu_p",
                        "name": "ExitPlanMode",
                        "input": {"plan": "# Plan\n1. edit a.py"},
                    }
                ],
            },
            "parent_tool_use_id": None,
        }
    )
    assert isinstance(items[0], ToolCall) and items[0].tool == "ExitPlanMode"
    prompt = prompt_of(parser.parse(can_use_tool("ExitPlanMode", {}, "toolu_p")))
    assert prompt.event.prompt_kind == "plan"
    assert prompt.event.input == {"plan": "# Plan\n1. edit a.py"}
    # An allow echoes what the CLI sent, not the text the card shows.
    assert prompt.wire_input == {}
    assert [o.choice for o in prompt.event.options] == ["allow_once", "deny"]


def test_a_plan_prompt_without_its_block_still_asks_with_an_empty_plan() -> None:
    prompt = prompt_of(ClaudeStreamParser().parse(can_use_tool("ExitPlanMode", {}, "toolu_x")))
    assert prompt.event.prompt_kind == "plan" and prompt.event.input == {"plan": ""}


def test_ordinary_tools_stay_tool_prompts_with_all_options() -> None:
    prompt = prompt_of(
        ClaudeStreamParser().parse(can_use_tool("Bash", {"command": "touch a"}, "toolu_b"))
    )
    assert prompt.event.prompt_kind == "tool"
    assert [o.choice for o in prompt.event.options] == [
        "allow_once",
        "allow_always",
        "deny",
        "deny_stop",
    ]
