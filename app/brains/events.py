"""Typed events every brain emits.

Brains translate their wire protocol into these frozen dataclasses; nothing above the
brain layer ever sees a raw protocol dict. Each event knows its stored ``kind`` and the
JSON payload it is stored with (``payload()``), which is also what the API streams.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from typing import Any, ClassVar, Literal

JsonDict = dict[str, Any]


@dataclass(frozen=True)
class BrainEvent:
    """Base class; ``kind`` names the stored event kind."""

    kind: ClassVar[str] = "event"

    def payload(self) -> JsonDict:
        data = asdict(self)
        # Most events come from the main agent; only a subagent's carry the link.
        if data.get("parent_tool_call_id") == "":
            del data["parent_tool_call_id"]
        return data


@dataclass(frozen=True)
class TextDelta(BrainEvent):
    """A streamed piece of assistant text (token by token)."""

    kind: ClassVar[str] = "text_delta"
    text: str
    message_id: str = ""


@dataclass(frozen=True)
class AssistantText(BrainEvent):
    """A complete assistant text block; supersedes the deltas of ``message_id``."""

    kind: ClassVar[str] = "assistant_message"
    text: str
    message_id: str = ""
    # Set when a subagent did this: the id of the tool call that runs the subagent.
    parent_tool_call_id: str = ""


@dataclass(frozen=True)
class Thought(BrainEvent):
    kind: ClassVar[str] = "thought"
    text: str
    message_id: str = ""
    # Set when a subagent did this: the id of the tool call that runs the subagent.
    parent_tool_call_id: str = ""


@dataclass(frozen=True)
class ToolCall(BrainEvent):
    """The agent wants to run (or is running) a tool."""

    kind: ClassVar[str] = "tool_call"
    tool_call_id: str
    tool: str
    title: str
    input: JsonDict = field(default_factory=dict)
    tool_kind: str = "other"  # read, edit, execute, search, fetch, think, other
    # Set when a subagent did this: the id of the tool call that runs the subagent.
    parent_tool_call_id: str = ""


@dataclass(frozen=True)
class ToolResult(BrainEvent):
    kind: ClassVar[str] = "tool_result"
    tool_call_id: str
    output: str
    is_error: bool = False
    # Files the tool touched, when the backend reports them (ACP ``locations``).
    locations: tuple[str, ...] = ()
    # Set when a subagent did this: the id of the tool call that runs the subagent.
    parent_tool_call_id: str = ""


PermissionChoice = Literal["allow_once", "allow_always", "deny", "deny_stop", "cancelled"]
# What a permission prompt is about: running a tool, answering the agent's questions, or
# approving its plan (which ends plan mode).
PromptKind = Literal["tool", "question", "plan"]


@dataclass(frozen=True)
class PermissionOption:
    """One answer the backend offers; ``choice`` is the app-level meaning."""

    option_id: str
    label: str
    choice: PermissionChoice


@dataclass(frozen=True)
class PermissionAsked(BrainEvent):
    """The backend asks whether a tool may run; answered via ``Brain.answer_permission``.

    ``request_id`` is the backend's own id for the question and is what the brain
    needs back; the services layer mints the public permission id.
    """

    kind: ClassVar[str] = "permission_asked"
    request_id: str
    tool: str
    input: JsonDict
    options: tuple[PermissionOption, ...]
    tool_call_id: str = ""
    title: str = ""
    reason: str = ""
    blocked_path: str = ""
    prompt_kind: PromptKind = "tool"
    # Set when a subagent asks: the id of the tool call that runs the subagent.
    parent_tool_call_id: str = ""
    # The agent's own kind of the call (ACP: read, edit, execute …); "" when the backend
    # names its tools instead (Claude Code), whose names then say what they do.
    tool_kind: str = ""


@dataclass(frozen=True)
class TaskUpdate(BrainEvent):
    """A subagent (or other background task) started, changed status or finished.

    ``tool_call_id`` is the tool call that runs it; ``status`` is running, completed,
    failed or stopped as the backend reports it.
    """

    kind: ClassVar[str] = "task"
    task_id: str
    tool_call_id: str = ""
    status: str = ""
    description: str = ""
    subagent_type: str = ""
    summary: str = ""
    last_tool: str = ""


@dataclass(frozen=True)
class PermissionCancelled(BrainEvent):
    """The backend withdrew a question (e.g. ``control_cancel_request``)."""

    kind: ClassVar[str] = "permission_cancelled"
    request_id: str


@dataclass(frozen=True)
class TurnEnded(BrainEvent):
    kind: ClassVar[str] = "turn_end"
    stop_reason: str
    is_error: bool = False
    cost_usd: float | None = None
    duration_ms: int | None = None
    usage: JsonDict = field(default_factory=dict)
    result: str = ""
    errors: tuple[str, ...] = ()


@dataclass(frozen=True)
class BackendSession(BrainEvent):
    """The backend's own session id is known (the ADR's SessionMap.rename)."""

    kind: ClassVar[str] = "backend_session"
    backend_session_id: str


@dataclass(frozen=True)
class SessionInfo(BrainEvent):
    """What the backend reports about itself at the start of a turn."""

    kind: ClassVar[str] = "session_info"
    model: str = ""
    permission_mode: str = ""
    api_key_source: str = ""
    cli_version: str = ""
    tools: tuple[str, ...] = ()
    slash_commands: tuple[str, ...] = ()


@dataclass(frozen=True)
class ModelsOffered(BrainEvent):
    """The models the backend lets this session switch to; ``models`` are ``{"id",
    "label", "description"}`` dicts, ``current`` the one in use if the backend says."""

    kind: ClassVar[str] = "models"
    models: tuple[JsonDict, ...] = ()
    current: str = ""


@dataclass(frozen=True)
class ModeChanged(BrainEvent):
    kind: ClassVar[str] = "mode_changed"
    mode: str


@dataclass(frozen=True)
class BrainError(BrainEvent):
    """Something went wrong; ``message`` is for the user, ``detail`` (stderr tail) for them too."""

    kind: ClassVar[str] = "error"
    message: str
    detail: str = ""
    fatal: bool = False


@dataclass(frozen=True)
class BrainExited(BrainEvent):
    """The backend process is gone; the registry drops the brain and resumes next time."""

    kind: ClassVar[str] = "brain_exited"
    exit_code: int | None
    expected: bool = True
    stderr_tail: str = ""


@dataclass(frozen=True)
class Plan(BrainEvent):
    """The agent's current plan; each event replaces the previous one as a whole.

    ``entries`` are ``{"content", "priority", "status"}`` dicts, priority one of
    high/medium/low and status one of pending/in_progress/completed.
    """

    kind: ClassVar[str] = "plan"
    entries: tuple[JsonDict, ...] = ()


@dataclass(frozen=True)
class Usage(BrainEvent):
    """Context window use (tokens) and, if the backend knows it, the session's cost so far."""

    kind: ClassVar[str] = "usage"
    used: int = 0
    size: int = 0
    cost_usd: float | None = None


# A command's description is for a one-line menu entry; some CLIs ship paragraphs.
MAX_COMMAND_DESCRIPTION = 300


@dataclass(frozen=True)
class Commands(BrainEvent):
    """The slash commands the backend offers now (replaces the previous list).

    Each is ``{"name", "description"}``, the name without its "/". Events stored before
    descriptions were kept hold bare names; the pages read both.
    """

    kind: ClassVar[str] = "commands"
    commands: tuple[JsonDict, ...] = ()

    @classmethod
    def of(cls, pairs: Iterable[tuple[str, str]]) -> Commands:
        """From ``(name, description)`` pairs: names trimmed and deduplicated, long
        descriptions cut to a menu line."""
        seen: dict[str, JsonDict] = {}
        for name, description in pairs:
            name = name.strip().lstrip("/")
            if name and name not in seen:
                text = " ".join(description.split())
                if len(text) > MAX_COMMAND_DESCRIPTION:
                    text = text[: MAX_COMMAND_DESCRIPTION - 1].rstrip() + "…"
                seen[name] = {"name": name, "description": text}
        return cls(commands=tuple(seen.values()))


@dataclass(frozen=True)
class TitleChanged(BrainEvent):
    """The backend named (or renamed) the conversation; empty clears the title."""

    kind: ClassVar[str] = "title"
    title: str = ""


@dataclass(frozen=True)
class Compacted(BrainEvent):
    """The backend compacted the conversation: ``before`` and ``after`` are the context's
    tokens as it reports them (None when it does not), ``trigger`` manual or auto."""

    kind: ClassVar[str] = "compacted"
    trigger: str = ""
    before: int | None = None
    after: int | None = None


@dataclass(frozen=True)
class SteerLanded(BrainEvent):
    """A message sent into the running turn has reached the model, here in the turn.

    ``message_id`` names the steering ``user_message`` the app stored when it was sent.
    """

    kind: ClassVar[str] = "steer_landed"
    message_id: str
    text: str = ""


@dataclass(frozen=True)
class RateLimit(BrainEvent):
    """The plan limit the backend reports: which one (``five_hour``, ``seven_day`` …),
    whether requests are ``allowed`` or ``rejected`` by it, the share of it used (0–1,
    None when not reported) and when it resets (ISO-8601 UTC, "" when not reported).

    ``windows`` holds every limit the same report names, ``{"limit", "used_fraction",
    "resets_at"}`` each, so a meter can show the 5-hour and the weekly one side by side.
    """

    kind: ClassVar[str] = "rate_limit"
    limit: str = ""
    status: str = ""
    used_fraction: float | None = None
    resets_at: str = ""
    windows: tuple[JsonDict, ...] = ()
