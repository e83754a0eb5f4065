"""Claude Code's stream-json and control protocol: the parser of what the CLI writes.

The CLI writes one JSON object per line (``system``, ``stream_event``, ``assistant``,
``user``, ``result``, ``control_request``, ``control_response``,
``control_cancel_request``) and reads user messages and control frames on stdin
(built in ``app.brains.claude_wire``). This module turns each stdout object into app
events (``app.brains.events``) or small protocol objects the brain acts on.

Wire reference: the Claude Agent SDK (``_internal/query.py``,
``_internal/message_parser.py``) and the CLI's own output.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

from app.brains.claude_limits import rate_limit_event
from app.brains.claude_usage import ContextMeter
from app.brains.claude_wire import (
    control_error,
    control_success,
    shorten,
    tool_kind,
    tool_title,
)
from app.brains.events import (
    AssistantText,
    BrainEvent,
    Commands,
    JsonDict,
    ModeChanged,
    ModelsOffered,
    PermissionAsked,
    PermissionCancelled,
    PermissionOption,
    PromptKind,
    SessionInfo,
    TaskUpdate,
    TextDelta,
    Thought,
    ToolCall,
    ToolResult,
    TurnEnded,
)

__all__ = [
    "ControlReply",
    "ClaudeStreamParser",
    "Outgoing",
    "Parsed",
    "PermissionPrompt",
    "SessionReported",
    "offered_commands",
    "offered_models",
]

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

# system subtypes about subagents -> the status they imply ("" = the message says).
_TASK_STATUS: dict[str, str] = {
    "task_started": "running",
    "task_progress": "running",
    "task_updated": "",
    "task_notification": "",
}


# -- protocol objects the brain acts on ----------------------------------------------
@dataclass(frozen=True)
class ControlReply:
    """The CLI's answer to a control request the host sent."""

    request_id: str
    ok: bool
    response: JsonDict
    error: str = ""


@dataclass(frozen=True)
class Outgoing:
    """A frame the host must write back at once (e.g. the answer to a hook callback)."""

    message: JsonDict


@dataclass(frozen=True)
class PermissionPrompt:
    """A ``can_use_tool`` request: the event to show plus what an answer needs later.

    ``wire_input`` is the input exactly as the CLI sent it, which an allow echoes back;
    the event's input may show more (a plan's text, taken from its ``tool_use`` block).
    """

    event: PermissionAsked
    wire_input: JsonDict
    suggestions: tuple[JsonDict, ...] = ()


@dataclass(frozen=True)
class SessionReported:
    """The CLI named its session id on a ``system/init`` or ``result`` line."""

    session_id: str
    source: Literal["init", "result"]


@dataclass(frozen=True)
class UserEchoed:
    """The CLI took up a user message (``--replay-user-messages`` echoes it with its uuid)."""

    message_id: str


Parsed = BrainEvent | ControlReply | Outgoing | PermissionPrompt | SessionReported | UserEchoed


# -- what the CLI reports ---------------------------------------------------------
def offered_models(initialize_response: JsonDict) -> ModelsOffered | None:
    """The models an ``initialize`` reply lists (``{value, displayName, description}``)."""
    models = []
    for item in _list(initialize_response.get("models")):
        if isinstance(item, dict) and (value := _str(item.get("value"))):
            label = _str(item.get("displayName")) or value
            models.append(
                {"id": value, "label": label, "description": _str(item.get("description"))}
            )
    return ModelsOffered(models=tuple(models)) if models else None


def offered_commands(initialize_response: JsonDict) -> Commands | None:
    """The slash commands an ``initialize`` reply lists with their descriptions
    (``{name, description, argumentHint}``): built-in ones, the user's and the project's
    ``.claude/commands`` and skills. ``system/init`` later names them without descriptions."""
    pairs = [
        (_str(item.get("name")), _str(item.get("description")))
        for item in _list(initialize_response.get("commands"))
        if isinstance(item, dict)
    ]
    listed = Commands.of(pairs)
    return listed if listed.commands else None


# -- parsing ---------------------------------------------------------------------------
class ClaudeStreamParser:
    """Turns stdout objects into ``Parsed`` items; keeps the little state that needs.

    Never raises on odd shapes: a field of the wrong type is treated as missing.
    """

    def __init__(self) -> None:
        # Deltas carry no message id; it comes from the stream's message_start.
        self._stream_message_id = ""
        # ExitPlanMode's prompt arrives with an empty input; the plan text is only in the
        # assistant's tool_use block, keyed here by tool_use id until the prompt comes.
        self._plans: dict[str, str] = {}
        # Subagent task id -> the Agent tool_use id that runs it.
        self._task_tools: dict[str, str] = {}
        self._meter = ContextMeter()
        self._handlers: dict[str, Callable[[JsonDict], list[Parsed]]] = {
            "stream_event": self._stream_event,
            "assistant": self._assistant,
            "user": self._user,
            "result": self._result,
            "system": self._system,
            "control_request": self._control_request,
            "control_response": self._control_response,
            "control_cancel_request": self._control_cancel,
            "rate_limit_event": self._rate_limit,
        }

    def parse(self, message: JsonDict) -> list[Parsed]:
        """The items one stdout object stands for; unknown types give none."""
        handler = self._handlers.get(_str(message.get("type")))
        return handler(message) if handler is not None else []

    def _stream_event(self, message: JsonDict) -> list[Parsed]:
        # Subagent streams interleave with the main one; their text arrives whole later.
        if message.get("parent_tool_use_id"):
            return []
        event = _dict(message.get("event"))
        etype = event.get("type")
        if etype == "message_start":
            self._stream_message_id = _str(_dict(event.get("message")).get("id"))
            self._meter.message_start(_dict(event.get("message")))
        elif etype == "message_delta":
            self._meter.message_delta(_dict(event.get("usage")))
        elif etype == "content_block_delta":
            delta = _dict(event.get("delta"))
            text = _str(delta.get("text"))
            if delta.get("type") == "text_delta" and text:
                return [TextDelta(text=text, message_id=self._stream_message_id)]
        return []

    def _assistant(self, message: JsonDict) -> list[Parsed]:
        body = _dict(message.get("message"))
        message_id = _str(body.get("id"))
        parent = _str(message.get("parent_tool_use_id"))
        out: list[Parsed] = []
        if not parent:
            self._meter.assistant(body)
        for block in _blocks(body.get("content")):
            btype = block.get("type")
            if btype == "text" and (text := _str(block.get("text"))):
                out.append(
                    AssistantText(text=text, message_id=message_id, parent_tool_call_id=parent)
                )
            elif btype == "thinking" and (text := _str(block.get("thinking"))):
                out.append(Thought(text=text, message_id=message_id, parent_tool_call_id=parent))
            elif btype in ("tool_use", "server_tool_use"):
                name = _str(block.get("name")) or "tool"
                tool_input = _dict(block.get("input"))
                if name == PLAN_TOOL and (plan := _str(tool_input.get("plan"))):
                    self._plans[_str(block.get("id"))] = plan
                out.append(
                    ToolCall(
                        tool_call_id=_str(block.get("id")),
                        tool=name,
                        title=tool_title(name, tool_input),
                        input=tool_input,
                        tool_kind=tool_kind(name),
                        parent_tool_call_id=parent,
                    )
                )
        return out

    def _user(self, message: JsonDict) -> list[Parsed]:
        out: list[Parsed] = []
        parent = _str(message.get("parent_tool_use_id"))
        if message.get("isReplay") is True and (echoed := _str(message.get("uuid"))):
            out.append(UserEchoed(echoed))
        for block in _blocks(_dict(message.get("message")).get("content")):
            if block.get("type") == "tool_result":
                out.append(
                    ToolResult(
                        tool_call_id=_str(block.get("tool_use_id")),
                        output=_result_text(block.get("content")),
                        is_error=block.get("is_error") is True,
                        parent_tool_call_id=parent,
                    )
                )
        return out

    def _result(self, message: JsonDict) -> list[Parsed]:
        out: list[Parsed] = []
        if session_id := _str(message.get("session_id")):
            out.append(SessionReported(session_id, "result"))
        cost = _number(message.get("total_cost_usd"))
        duration = _number(message.get("duration_ms"))
        stop = _str(message.get("subtype")) or _str(message.get("terminal_reason")) or "unknown"
        if (usage := self._meter.result(_dict(message.get("modelUsage")))) is not None:
            out.append(usage)
        out.append(
            TurnEnded(
                stop_reason=stop,
                is_error=message.get("is_error") is True,
                cost_usd=None if cost is None else float(cost),
                duration_ms=None if duration is None else int(duration),
                usage=_dict(message.get("usage")),
                result=_str(message.get("result")),
                errors=tuple(str(e) for e in _list(message.get("errors"))),
            )
        )
        return out

    def _system(self, message: JsonDict) -> list[Parsed]:
        subtype = message.get("subtype")
        if subtype == "init":
            out: list[Parsed] = []
            if session_id := _str(message.get("session_id")):
                out.append(SessionReported(session_id, "init"))
            out.append(
                SessionInfo(
                    model=_str(message.get("model")),
                    permission_mode=_str(message.get("permissionMode")),
                    api_key_source=_str(message.get("apiKeySource")),
                    cli_version=_str(message.get("claude_code_version")),
                    tools=_names(message.get("tools")),
                    slash_commands=_names(message.get("slash_commands")),
                )
            )
            return out
        if subtype == "compact_boundary":
            return [self._meter.compacted(_dict(message.get("compact_metadata")))]
        if subtype == "status" and (mode := _str(message.get("permissionMode"))):
            return [ModeChanged(mode=mode)]
        if isinstance(subtype, str) and subtype in _TASK_STATUS:
            return self._task(subtype, message)
        return []

    def _task(self, subtype: str, message: JsonDict) -> list[Parsed]:
        """A subagent's progress; later messages may name only its task id."""
        task_id = _str(message.get("task_id"))
        if not task_id:
            return []
        tool_use_id = _str(message.get("tool_use_id")) or self._task_tools.get(task_id, "")
        self._task_tools[task_id] = tool_use_id
        status = _TASK_STATUS[subtype] or _str(message.get("status"))
        if subtype == "task_updated":
            status = _str(_dict(message.get("patch")).get("status"))
        usage_tool = _str(message.get("last_tool_name"))
        return [
            TaskUpdate(
                task_id=task_id,
                tool_call_id=tool_use_id,
                status=status,
                description=_str(message.get("description")),
                subagent_type=_str(message.get("subagent_type")) or _str(message.get("task_type")),
                summary=_str(message.get("summary")),
                last_tool=usage_tool,
            )
        ]

    def _rate_limit(self, message: JsonDict) -> list[Parsed]:
        """The plan limit the CLI read from the API's headers (app/brains/claude_limits.py)."""
        event = rate_limit_event(message)
        return [event] if event is not None else []

    def _control_request(self, message: JsonDict) -> list[Parsed]:
        request_id = _str(message.get("request_id"))
        request = _dict(message.get("request"))
        subtype = _str(request.get("subtype"))
        if not request_id:
            return []
        if subtype == "can_use_tool":
            return [self._permission_prompt(request_id, request)]
        if subtype == "hook_callback":
            # No hooks are registered; "{}" means no opinion, so the CLI carries on.
            return [Outgoing(control_success(request_id, {}))]
        return [Outgoing(control_error(request_id, f"Unsupported control request: {subtype}"))]

    def _permission_prompt(self, request_id: str, request: JsonDict) -> PermissionPrompt:
        tool = _str(request.get("tool_name")) or "tool"
        wire_input = _dict(request.get("input"))
        tool_use_id = _str(request.get("tool_use_id"))
        shown = wire_input
        options = PERMISSION_OPTIONS
        kind: PromptKind = "tool"
        if tool == QUESTION_TOOL:
            kind, options = "question", QUESTION_OPTIONS
        elif tool == PLAN_TOOL:
            kind, options = "plan", PLAN_OPTIONS
            plan = _str(wire_input.get("plan")) or self._plans.pop(tool_use_id, "")
            shown = {**wire_input, "plan": plan}
        elif request.get("suppress_always_allow_rule") is True:
            options = tuple(o for o in options if o.choice != "allow_always")
        title = _str(request.get("title")) or _str(request.get("description"))
        if kind == "question":
            title = _question_title(wire_input) or title
        event = PermissionAsked(
            request_id=request_id,
            tool=tool,
            input=shown,
            options=options,
            tool_call_id=tool_use_id,
            title=title or tool_title(tool, shown),
            reason=_str(request.get("decision_reason")),
            blocked_path=_str(request.get("blocked_path")),
            prompt_kind=kind,
            # A subagent's request names its agent (= task) id, not the Agent call.
            parent_tool_call_id=self._task_tools.get(_str(request.get("agent_id")), ""),
        )
        suggestions = tuple(
            s for s in _list(request.get("permission_suggestions")) if isinstance(s, dict)
        )
        return PermissionPrompt(event=event, wire_input=wire_input, suggestions=suggestions)

    def _control_cancel(self, message: JsonDict) -> list[Parsed]:
        request_id = _str(message.get("request_id"))
        return [PermissionCancelled(request_id)] if request_id else []

    def _control_response(self, message: JsonDict) -> list[Parsed]:
        response = _dict(message.get("response"))
        request_id = _str(response.get("request_id"))
        if not request_id:
            return []
        ok = response.get("subtype") == "success"
        return [
            ControlReply(
                request_id=request_id,
                ok=ok,
                response=_dict(response.get("response")),
                error="" if ok else _str(response.get("error")) or "unknown error",
            )
        ]


def _question_title(tool_input: JsonDict) -> str:
    questions = [q for q in _list(tool_input.get("questions")) if isinstance(q, dict)]
    first = _str(questions[0].get("question")) if questions else ""
    more = f" (+{len(questions) - 1} more)" if len(questions) > 1 else ""
    return shorten(first) + more if first else ""


def _result_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    parts: list[str] = []
    for block in _blocks(content):
        if block.get("type") == "text":
            parts.append(_str(block.get("text")))
        elif block.get("type") == "image":
            parts.append("[image]")
    return "\n".join(parts)


def _blocks(content: Any) -> list[JsonDict]:
    return [b for b in _list(content) if isinstance(b, dict)]


def _names(value: Any) -> tuple[str, ...]:
    return tuple(v for v in _list(value) if isinstance(v, str))


def _dict(value: Any) -> JsonDict:
    return value if isinstance(value, dict) else {}


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _str(value: Any) -> str:
    return value if isinstance(value, str) else ""


def _number(value: Any) -> float | None:
    """A usable number, or None: JSON allows inf, NaN and 400-digit integers, which would
    break the turn's accounting (and SQLite's integer columns) further up."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    if isinstance(value, int):
        return value if abs(value) < 2**53 else None
    return value if math.isfinite(value) and abs(value) < 2**53 else None
