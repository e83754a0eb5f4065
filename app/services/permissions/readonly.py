"""Which tool calls only look: what plan mode lets run before the plan is approved.

Plan mode means one thing on every backend: no file changes and no command with side
effects until the plan is approved. Some CLIs still ask about commands in their plan
mode (OpenCode runs an allowed ``touch``), so the app refuses every question about a
call that is not read-only. An ACP agent says what a call does by its ``kind``; Claude
Code names its tools, and the read-only ones are known by name. Anything else (an MCP
tool, a command, an unknown kind) may act, so it is refused.
"""

from __future__ import annotations

__all__ = ["PLAN_MODE", "plan_mode_allows", "plan_mode_denial", "read_only"]

PLAN_MODE = "plan"

# ACP's tool kinds that only read, search, fetch or think (edit, delete, move, execute
# and other may change something).
READ_ONLY_KINDS = frozenset({"read", "search", "fetch", "think"})
# An ACP agent asking to leave plan mode (claude-agent-acp's ExitPlanMode): that is the
# approval of the plan itself, so it is the user's to answer.
PLAN_EXIT_KIND = "switch_mode"
# Gemini CLI (0.61) asks the same with kind "other" (its exit_plan_mode tool is of kind
# Plan, which it sends as "other") under a title of its own making, and so its ask_user
# tool, a question for the user (kind Communicate); only the text after the title's
# start comes from the model.
FOR_THE_USER_TITLES = ("Requesting plan approval for: ", "Asking user: ")

# Claude Code's tools that change nothing (the names every backend's rules use).
READ_ONLY_TOOLS = frozenset(
    {
        "Read",
        "Grep",
        "Glob",
        "LS",
        "NotebookRead",
        "WebFetch",
        "WebSearch",
        "TodoWrite",
        "TodoRead",
        "ToolSearch",
        "ListMcpResourcesTool",
        "ReadMcpResourceTool",
    }
)


def read_only(tool: str, tool_kind: str = "") -> bool:
    """Whether a call only reads: by the agent's ``tool_kind`` when it gives one, else by name."""
    if tool_kind:
        return tool_kind in READ_ONLY_KINDS
    return tool in READ_ONLY_TOOLS


def plan_mode_allows(tool: str, tool_kind: str = "") -> bool:
    """Whether a question in plan mode may go on to the rules and the user.

    ``tool`` is the call's name as the app shows it (an ACP agent's title when the kind
    has no Claude Code name).
    """
    if tool_kind == PLAN_EXIT_KIND:
        return True
    if tool_kind == "other" and tool.startswith(FOR_THE_USER_TITLES):
        return True
    return read_only(tool, tool_kind)


def plan_mode_denial(tool: str) -> str:
    """What the agent and the transcript are told when plan mode refuses ``tool``."""
    return (
        "Plan mode: only read-only tools run until the plan is approved; "
        f"{tool or 'the tool'} was denied."
    )
