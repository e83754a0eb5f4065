"""Claude Code's permission prompts: a ``can_use_tool`` request shaped for the user, and
the user's answer as the control response the CLI waits for.

Questions (``AskUserQuestion``) and plans (``ExitPlanMode``) arrive as permission
prompts too; they get their own buttons, and a plan's text is taken from the
assistant's ``tool_use`` block because the prompt itself carries an empty input.
"""

from __future__ import annotations

from dataclasses import dataclass

from app.brains.base import PermissionAnswer
from app.brains.claude.fields import as_dict, as_list, as_str
from app.brains.claude.wire import allow_response, deny_response, shorten, tool_title
from app.brains.events import JsonDict, PermissionAsked, PermissionOption, PromptKind

__all__ = ["PermissionPrompt", "PromptShaper", "answer_frame"]

PERMISSION_OPTIONS: tuple[PermissionOption, ...] = (
    PermissionOption("allow_once", "Allow once", "allow_once"),
    PermissionOption("allow_always", "Always allow", "allow_always"),
    PermissionOption("deny", "Deny", "deny"),
    PermissionOption("deny_stop", "Deny and stop", "deny_stop"),
)
# Tools that ask the user something rather than ask to run: their prompts are answered
# with the user's input, so "always" makes no sense for them.
QUESTION_TOOL = "AskUserQuestion"
PLAN_TOOL = "ExitPlanMode"
QUESTION_OPTIONS: tuple[PermissionOption, ...] = (
    PermissionOption("answer", "Answer", "allow_once"),
    PermissionOption("decline", "Decline", "deny"),
)
PLAN_OPTIONS: tuple[PermissionOption, ...] = (
    PermissionOption("approve", "Approve", "allow_once"),
    PermissionOption("keep_planning", "Keep planning", "deny"),
)
DEFAULT_DENY_MESSAGE = "The user denied this tool call."


@dataclass(frozen=True)
class PermissionPrompt:
    """A ``can_use_tool`` request: the event to show plus what an answer needs later.

    ``wire_input`` is the input exactly as the CLI sent it, which an allow echoes back;
    the event's input may show more (a plan's text, taken from its ``tool_use`` block).
    """

    event: PermissionAsked
    wire_input: JsonDict
    suggestions: tuple[JsonDict, ...] = ()


class PromptShaper:
    """Builds ``PermissionPrompt``s; remembers plan texts until their prompts come."""

    def __init__(self) -> None:
        # ExitPlanMode's prompt arrives with an empty input; the plan text is only in the
        # assistant's tool_use block, keyed here by tool_use id until the prompt comes.
        self._plans: dict[str, str] = {}

    def tool_use(self, tool_use_id: str, tool: str, tool_input: JsonDict) -> None:
        """An assistant ``tool_use`` block; a plan's text is kept for its prompt."""
        if tool == PLAN_TOOL and (plan := as_str(tool_input.get("plan"))):
            self._plans[tool_use_id] = plan

    def prompt(self, request_id: str, request: JsonDict, *, parent: str) -> PermissionPrompt:
        """The prompt for one ``can_use_tool`` request; ``parent`` is the Agent call of
        the subagent that asks ("" for the main agent)."""
        tool = as_str(request.get("tool_name")) or "tool"
        wire_input = as_dict(request.get("input"))
        tool_use_id = as_str(request.get("tool_use_id"))
        shown = wire_input
        options = PERMISSION_OPTIONS
        kind: PromptKind = "tool"
        if tool == QUESTION_TOOL:
            kind, options = "question", QUESTION_OPTIONS
        elif tool == PLAN_TOOL:
            kind, options = "plan", PLAN_OPTIONS
            plan = as_str(wire_input.get("plan")) or self._plans.pop(tool_use_id, "")
            shown = {**wire_input, "plan": plan}
        elif request.get("suppress_always_allow_rule") is True:
            options = tuple(o for o in options if o.choice != "allow_always")
        title = as_str(request.get("title")) or as_str(request.get("description"))
        if kind == "question":
            title = _question_title(wire_input) or title
        event = PermissionAsked(
            request_id=request_id,
            tool=tool,
            input=shown,
            options=options,
            tool_call_id=tool_use_id,
            title=title or tool_title(tool, shown),
            reason=as_str(request.get("decision_reason")),
            blocked_path=as_str(request.get("blocked_path")),
            prompt_kind=kind,
            parent_tool_call_id=parent,
        )
        suggestions = tuple(
            s for s in as_list(request.get("permission_suggestions")) if isinstance(s, dict)
        )
        return PermissionPrompt(event=event, wire_input=wire_input, suggestions=suggestions)


def answer_frame(prompt: PermissionPrompt, answer: PermissionAnswer) -> JsonDict:
    """The control response that gives the CLI the user's ``answer`` to ``prompt``."""
    request_id = prompt.event.request_id
    if answer.choice in ("allow_once", "allow_always"):
        # "Always" is remembered as an app rule, not as a CLI session rule: the CLI
        # would then run later matching calls without asking, and they would be
        # missing from the audit log.
        # A plan approval names the mode to leave plan mode for, as the terminal's
        # "Yes, and auto-accept edits" does; without it the CLI drops to default.
        modes = [{"type": "setMode", "mode": answer.mode, "destination": "session"}]
        return allow_response(
            request_id, answer.updated_input or prompt.wire_input, modes if answer.mode else None
        )
    if answer.choice == "cancelled":
        return deny_response(request_id, answer.message or "cancelled")
    return deny_response(
        request_id,
        answer.message or DEFAULT_DENY_MESSAGE,
        interrupt=answer.choice == "deny_stop",
    )


def _question_title(tool_input: JsonDict) -> str:
    questions = [q for q in as_list(tool_input.get("questions")) if isinstance(q, dict)]
    first = as_str(questions[0].get("question")) if questions else ""
    more = f" (+{len(questions) - 1} more)" if len(questions) > 1 else ""
    return shorten(first) + more if first else ""
