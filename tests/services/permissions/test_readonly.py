"""What plan mode counts as read-only: the agent's kind when it gives one, else the name."""

from __future__ import annotations

import pytest

from app.services.permissions.readonly import plan_mode_allows, plan_mode_denial, read_only


@pytest.mark.parametrize("kind", ["read", "search", "fetch", "think"])
def test_acp_kinds_that_only_look_are_read_only(kind: str) -> None:
    # The kind decides, whatever the agent titled the call.
    assert read_only("rm -rf build", kind)


@pytest.mark.parametrize("kind", ["edit", "delete", "move", "execute", "other", "switch_mode"])
def test_acp_kinds_that_may_act_are_not(kind: str) -> None:
    # Even a call the agent titled like a read-only tool.
    assert not read_only("Read", kind)


@pytest.mark.parametrize(
    "tool", ["Read", "Grep", "Glob", "LS", "WebFetch", "WebSearch", "TodoWrite"]
)
def test_claude_code_read_only_tools_by_name(tool: str) -> None:
    assert read_only(tool)


@pytest.mark.parametrize(
    "tool", ["Bash", "Edit", "Write", "MultiEdit", "NotebookEdit", "mcp__x__y", ""]
)
def test_other_claude_code_tools_are_not(tool: str) -> None:
    assert not read_only(tool)


def test_the_denial_names_the_tool() -> None:
    assert plan_mode_denial("Bash") == (
        "Plan mode: only read-only tools run until the plan is approved; Bash was denied."
    )


def test_an_acp_agent_asking_to_leave_plan_mode_goes_to_the_user() -> None:
    # claude-agent-acp's ExitPlanMode: answering it is approving the plan.
    assert plan_mode_allows("Ready to code?", "switch_mode")
    assert not read_only("Ready to code?", "switch_mode")
    assert not plan_mode_allows("Bash", "execute") and plan_mode_allows("Read", "read")


def test_gemini_asking_to_approve_its_plan_goes_to_the_user() -> None:
    # Gemini CLI 0.61's exit_plan_mode: kind "other", its own title before the file name.
    title = "Requesting plan approval for: /home/u/.gemini/tmp/p/plans/plan.md"
    assert plan_mode_allows(title, "other")
    # The title alone lets nothing else through: a command keeps its kind.
    assert not plan_mode_allows(title, "execute") and not plan_mode_allows(title, "edit")
    assert not plan_mode_allows("Exit plan mode", "other")
    # Its ask_user tool: a question for the user, which plan mode leaves to the user too.
    assert plan_mode_allows("Asking user: Which database?", "other")
