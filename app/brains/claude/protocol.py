"""Claude Code's stream-json and control protocol: the parser of what the CLI writes.

The CLI writes one JSON object per line (``system``, ``stream_event``, ``assistant``,
``user``, ``result``, ``control_request``, ``control_response``,
``control_cancel_request``) and reads user messages and control frames on stdin
(built in ``app.brains.claude.wire``). This module turns each stdout object into app
events (``app.brains.events``) or small protocol objects the brain acts on; permission
prompts are shaped in ``app.brains.claude.prompts``.

Wire reference: the Claude Agent SDK (``_internal/query.py``,
``_internal/message_parser.py``) and the CLI's own output.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

from app.brains.claude.fields import as_dict, as_list, as_number, as_str
from app.brains.claude.limits import rate_limit_event
from app.brains.claude.prompts import PermissionPrompt, PromptShaper
from app.brains.claude.usage import ContextMeter
from app.brains.claude.wire import control_error, control_success, tool_kind, tool_title
from app.brains.events import (
    AssistantText,
    BrainEvent,
    Commands,
    JsonDict,
    ModeChanged,
    ModelsOffered,
    PermissionCancelled,
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
    for item in as_list(initialize_response.get("models")):
        if isinstance(item, dict) and (value := as_str(item.get("value"))):
            label = as_str(item.get("displayName")) or value
            models.append(
                {"id": value, "label": label, "description": as_str(item.get("description"))}
            )
    return ModelsOffered(models=tuple(models)) if models else None


def offered_commands(initialize_response: JsonDict) -> Commands | None:
    """The slash commands an ``initialize`` reply lists with their descriptions
    (``{name, description, argumentHint}``): built-in ones, the user's and the project's
    ``.claude/commands`` and skills. ``system/init`` later names them without descriptions."""
    pairs = [
        (as_str(item.get("name")), as_str(item.get("description")))
        for item in as_list(initialize_response.get("commands"))
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
        # Subagent task id -> the Agent tool_use id that runs it.
        self._task_tools: dict[str, str] = {}
        self._meter = ContextMeter()
        self._prompts = PromptShaper()
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
        handler = self._handlers.get(as_str(message.get("type")))
        return handler(message) if handler is not None else []

    def _stream_event(self, message: JsonDict) -> list[Parsed]:
        # Subagent streams interleave with the main one; their text arrives whole later.
        if message.get("parent_tool_use_id"):
            return []
        event = as_dict(message.get("event"))
        etype = event.get("type")
        if etype == "message_start":
            self._stream_message_id = as_str(as_dict(event.get("message")).get("id"))
            self._meter.message_start(as_dict(event.get("message")))
        elif etype == "message_delta":
            self._meter.message_delta(as_dict(event.get("usage")))
        elif etype == "content_block_delta":
            delta = as_dict(event.get("delta"))
            text = as_str(delta.get("text"))
            if delta.get("type") == "text_delta" and text:
                return [TextDelta(text=text, message_id=self._stream_message_id)]
        return []

    def _assistant(self, message: JsonDict) -> list[Parsed]:
        body = as_dict(message.get("message"))
        message_id = as_str(body.get("id"))
        parent = as_str(message.get("parent_tool_use_id"))
        out: list[Parsed] = []
        if not parent:
            self._meter.assistant(body)
        for block in _blocks(body.get("content")):
            btype = block.get("type")
            if btype == "text" and (text := as_str(block.get("text"))):
                out.append(
                    AssistantText(text=text, message_id=message_id, parent_tool_call_id=parent)
                )
            elif btype == "thinking" and (text := as_str(block.get("thinking"))):
                out.append(Thought(text=text, message_id=message_id, parent_tool_call_id=parent))
            elif btype in ("tool_use", "server_tool_use"):
                name = as_str(block.get("name")) or "tool"
                tool_input = as_dict(block.get("input"))
                self._prompts.tool_use(as_str(block.get("id")), name, tool_input)
                out.append(
                    ToolCall(
                        tool_call_id=as_str(block.get("id")),
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
        parent = as_str(message.get("parent_tool_use_id"))
        if message.get("isReplay") is True and (echoed := as_str(message.get("uuid"))):
            out.append(UserEchoed(echoed))
        for block in _blocks(as_dict(message.get("message")).get("content")):
            if block.get("type") == "tool_result":
                out.append(
                    ToolResult(
                        tool_call_id=as_str(block.get("tool_use_id")),
                        output=_result_text(block.get("content")),
                        is_error=block.get("is_error") is True,
                        parent_tool_call_id=parent,
                    )
                )
        return out

    def _result(self, message: JsonDict) -> list[Parsed]:
        out: list[Parsed] = []
        if session_id := as_str(message.get("session_id")):
            out.append(SessionReported(session_id, "result"))
        cost = as_number(message.get("total_cost_usd"))
        duration = as_number(message.get("duration_ms"))
        stop = as_str(message.get("subtype")) or as_str(message.get("terminal_reason")) or "unknown"
        if (usage := self._meter.result(as_dict(message.get("modelUsage")))) is not None:
            out.append(usage)
        out.append(
            TurnEnded(
                stop_reason=stop,
                is_error=message.get("is_error") is True,
                cost_usd=None if cost is None else float(cost),
                duration_ms=None if duration is None else int(duration),
                usage=as_dict(message.get("usage")),
                result=as_str(message.get("result")),
                errors=tuple(str(e) for e in as_list(message.get("errors"))),
            )
        )
        return out

    def _system(self, message: JsonDict) -> list[Parsed]:
        subtype = message.get("subtype")
        if subtype == "init":
            out: list[Parsed] = []
            if session_id := as_str(message.get("session_id")):
                out.append(SessionReported(session_id, "init"))
            out.append(
                SessionInfo(
                    model=as_str(message.get("model")),
                    permission_mode=as_str(message.get("permissionMode")),
                    api_key_source=as_str(message.get("apiKeySource")),
                    cli_version=as_str(message.get("claude_code_version")),
                    tools=_names(message.get("tools")),
                    slash_commands=_names(message.get("slash_commands")),
                )
            )
            return out
        if subtype == "compact_boundary":
            return [self._meter.compacted(as_dict(message.get("compact_metadata")))]
        if subtype == "status" and (mode := as_str(message.get("permissionMode"))):
            return [ModeChanged(mode=mode)]
        if isinstance(subtype, str) and subtype in _TASK_STATUS:
            return self._task(subtype, message)
        return []

    def _task(self, subtype: str, message: JsonDict) -> list[Parsed]:
        """A subagent's progress; later messages may name only its task id."""
        task_id = as_str(message.get("task_id"))
        if not task_id:
            return []
        tool_use_id = as_str(message.get("tool_use_id")) or self._task_tools.get(task_id, "")
        self._task_tools[task_id] = tool_use_id
        status = _TASK_STATUS[subtype] or as_str(message.get("status"))
        if subtype == "task_updated":
            status = as_str(as_dict(message.get("patch")).get("status"))
        usage_tool = as_str(message.get("last_tool_name"))
        return [
            TaskUpdate(
                task_id=task_id,
                tool_call_id=tool_use_id,
                status=status,
                description=as_str(message.get("description")),
                subagent_type=as_str(message.get("subagent_type"))
                or as_str(message.get("task_type")),
                summary=as_str(message.get("summary")),
                last_tool=usage_tool,
            )
        ]

    def _rate_limit(self, message: JsonDict) -> list[Parsed]:
        """The plan limit the CLI read from the API's headers (app/brains/claude/limits.py)."""
        event = rate_limit_event(message)
        return [event] if event is not None else []

    def _control_request(self, message: JsonDict) -> list[Parsed]:
        request_id = as_str(message.get("request_id"))
        request = as_dict(message.get("request"))
        subtype = as_str(request.get("subtype"))
        if not request_id:
            return []
        if subtype == "can_use_tool":
            # A subagent's request names its agent (= task) id, not the Agent call.
            parent = self._task_tools.get(as_str(request.get("agent_id")), "")
            return [self._prompts.prompt(request_id, request, parent=parent)]
        if subtype == "hook_callback":
            # No hooks are registered; "{}" means no opinion, so the CLI carries on.
            return [Outgoing(control_success(request_id, {}))]
        return [Outgoing(control_error(request_id, f"Unsupported control request: {subtype}"))]

    def _control_cancel(self, message: JsonDict) -> list[Parsed]:
        request_id = as_str(message.get("request_id"))
        return [PermissionCancelled(request_id)] if request_id else []

    def _control_response(self, message: JsonDict) -> list[Parsed]:
        response = as_dict(message.get("response"))
        request_id = as_str(response.get("request_id"))
        if not request_id:
            return []
        ok = response.get("subtype") == "success"
        return [
            ControlReply(
                request_id=request_id,
                ok=ok,
                response=as_dict(response.get("response")),
                error="" if ok else as_str(response.get("error")) or "unknown error",
            )
        ]


def _result_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    parts: list[str] = []
    for block in _blocks(content):
        if block.get("type") == "text":
            parts.append(as_str(block.get("text")))
        elif block.get("type") == "image":
            parts.append("[image]")
    return "\n".join(parts)


def _blocks(content: Any) -> list[JsonDict]:
    return [b for b in as_list(content) if isinstance(b, dict)]


def _names(value: Any) -> tuple[str, ...]:
    return tuple(v for v in as_list(value) if isinstance(v, str))
