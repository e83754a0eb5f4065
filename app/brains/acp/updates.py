"""Folding ACP ``session/update`` notifications into typed brain events.

Pure bookkeeping, no I/O. ``UpdateMapper`` holds what one ACP session has streamed so
far and turns each update into the events it completes:

* Message chunks stream as ``TextDelta``; the whole text of each message becomes one
  ``AssistantText`` when the turn ends (or, for agents that want it, when a tool call
  starts), because ACP has no "message complete" notification. Chunks without a
  ``messageId`` belong to a per-turn message that a tool call ends.
* Thought chunks are gathered into one ``Thought`` per run of thinking.
* ``tool_call`` / ``tool_call_update`` carry only the fields that changed, so they are
  merged per ``toolCallId``: the first sighting is a ``ToolCall``, a terminal status a
  ``ToolResult``. Late updates (after a cancel) still land on the right call.
* Plan, usage, commands, title and mode updates map one to one; config options are
  only stored, since nothing below the services layer displays them.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Mapping
from typing import TypeAlias

from acp.schema import (
    AgentMessageChunk,
    AgentPlanContentUpdate,
    AgentPlanRemovedUpdate,
    AgentPlanUpdate,
    AgentThoughtChunk,
    AvailableCommandsUpdate,
    ConfigOptionUpdate,
    CurrentModeUpdate,
    SessionConfigOptionBoolean,
    SessionConfigOptionSelect,
    SessionConfigSelectGroup,
    SessionInfoUpdate,
    ToolCallProgress,
    ToolCallStart,
    ToolCallUpdate,
    UsageUpdate,
    UserMessageChunk,
)

from app.brains.acp.tools import ToolState, content_text
from app.brains.events import (
    AssistantText,
    BrainEvent,
    Commands,
    JsonDict,
    ModeChanged,
    Plan,
    TextDelta,
    Thought,
    TitleChanged,
    ToolCall,
    ToolResult,
    Usage,
)

__all__ = [
    "ConfigOption",
    "SessionUpdate",
    "UpdateMapper",
    "select_values",
]

SessionUpdate: TypeAlias = (
    UserMessageChunk
    | AgentMessageChunk
    | AgentThoughtChunk
    | ToolCallStart
    | ToolCallProgress
    | AgentPlanUpdate
    | AgentPlanContentUpdate
    | AgentPlanRemovedUpdate
    | AvailableCommandsUpdate
    | CurrentModeUpdate
    | ConfigOptionUpdate
    | SessionInfoUpdate
    | UsageUpdate
)
ConfigOption: TypeAlias = SessionConfigOptionSelect | SessionConfigOptionBoolean

_FINAL_STATUSES = ("completed", "failed")


def select_values(option: ConfigOption) -> tuple[str, ...]:
    """The values a select config option accepts (groups flattened)."""
    if not isinstance(option, SessionConfigOptionSelect):
        return ()
    values: list[str] = []
    for item in option.options:
        if isinstance(item, SessionConfigSelectGroup):
            values.extend(choice.value for choice in item.options)
        else:
            values.append(item.value)
    return tuple(values)


class UpdateMapper:
    """Turns one session's updates into events; see the module docstring.

    Args:
        flush_text_on_tool_call: End the current message (emit its ``AssistantText``)
            when a tool call starts, so text and tools interleave in the transcript.
        mode_names: Agent mode id → the app's permission mode name, for ``ModeChanged``.
    """

    def __init__(
        self,
        *,
        flush_text_on_tool_call: bool = False,
        mode_names: Mapping[str, str] | None = None,
    ) -> None:
        self.flush_text_on_tool_call = flush_text_on_tool_call
        self.mode_names = dict(mode_names or {})
        self.mode_id: str | None = None
        self.config_options: list[ConfigOption] = []
        self.commands = Commands()
        self.plan: tuple[JsonDict, ...] = ()
        self.cost_usd: float | None = None
        self.tools: dict[str, ToolState] = {}
        self.last_text = ""
        self._turn = ""
        self._segment = 0
        self._segment_used = False
        self._messages: dict[str, list[str]] = {}
        self._flushed: set[str] = set()
        self._thought: list[str] = []
        self._thoughts = 0
        self.new_turn()

    # -- turns ---------------------------------------------------------------------------
    def new_turn(self) -> list[BrainEvent]:
        """Start a turn: whatever arrived between turns is flushed first."""
        events = self.flush()
        self._turn = uuid.uuid4().hex[:12]
        self._segment = 0
        self._segment_used = False
        self._thoughts = 0
        self._flushed.clear()
        self.last_text = ""
        return events

    def flush(self) -> list[BrainEvent]:
        """End the open thought and messages (turn end, process exit)."""
        return [*self._flush_thought(), *self._flush_messages()]

    # -- updates -------------------------------------------------------------------------
    def apply(self, update: SessionUpdate) -> list[BrainEvent]:
        """The events one live ``session/update`` completes."""
        if isinstance(update, AgentThoughtChunk):
            self._thought.append(content_text(update.content))
            return []
        if isinstance(update, UserMessageChunk):
            # Echoes of the user's own prompt; the app has already logged it.
            return []
        if isinstance(update, ToolCallStart | ToolCallProgress):
            return self.tool_update(update)
        if isinstance(update, ConfigOptionUpdate):
            return self._config_options(list(update.config_options))
        events = self._flush_thought()
        if isinstance(update, AgentMessageChunk):
            events += self._message_chunk(update)
        elif isinstance(update, AgentPlanUpdate):
            self.plan = tuple(
                {"content": e.content, "priority": e.priority, "status": e.status}
                for e in update.entries
            )
            events.append(Plan(entries=self.plan))
        elif isinstance(update, UsageUpdate):
            cost = update.cost
            if cost is not None and cost.currency.upper() == "USD":
                self.cost_usd = cost.amount
            events.append(Usage(used=update.used, size=update.size, cost_usd=self.cost_usd))
        elif isinstance(update, CurrentModeUpdate):
            self.mode_id = update.current_mode_id
            events.append(ModeChanged(mode=self.mode_name(update.current_mode_id)))
        elif isinstance(update, AvailableCommandsUpdate):
            self.commands = offered_commands(update)
            events.append(self.commands)
        elif isinstance(update, SessionInfoUpdate) and "title" in update.model_fields_set:
            # An explicit null clears the title.
            events.append(TitleChanged(title=update.title or ""))
        return events

    def absorb(self, update: SessionUpdate) -> None:
        """Take the state an update carries without emitting anything (history replay)."""
        if isinstance(update, CurrentModeUpdate):
            self.mode_id = update.current_mode_id
        elif isinstance(update, ConfigOptionUpdate):
            self.config_options = list(update.config_options)
        elif isinstance(update, AvailableCommandsUpdate):
            self.commands = offered_commands(update)

    def tool_update(self, update: ToolCallStart | ToolCallUpdate) -> list[BrainEvent]:
        """Merge a tool call update (or a permission request's tool call) into its state."""
        events = self._flush_thought()
        tool = self.tools.get(update.tool_call_id)
        if tool is None:
            tool = self.tools[update.tool_call_id] = ToolState(update.tool_call_id)
        tool.merge(update)
        if not tool.announced:
            if self.flush_text_on_tool_call:
                events += self._flush_messages()
            elif self._segment_used:
                # Without message ids, text after a tool is a new message, not a sequel.
                self._segment += 1
                self._segment_used = False
            tool.announced = True
            events.append(
                ToolCall(
                    tool_call_id=tool.tool_call_id,
                    tool=tool.name,
                    title=tool.title,
                    input=tool.input,
                    tool_kind=tool.kind,
                )
            )
        if tool.status in _FINAL_STATUSES and not tool.finished:
            tool.finished = True
            events.append(
                ToolResult(
                    tool_call_id=tool.tool_call_id,
                    output=tool.output(),
                    is_error=tool.status == "failed",
                    locations=tuple(tool.locations),
                )
            )
        return events

    def open_tools(self) -> list[str]:
        """The tool calls shown as started that have had no final update."""
        return [t.tool_call_id for t in self.tools.values() if t.announced and not t.finished]

    def close_tools(self, tool_call_ids: Iterable[str], output: str) -> list[BrainEvent]:
        """Fail the calls among ``tool_call_ids`` the agent left open (one ``ToolResult`` each).

        For calls known not to have run, such as denied ones, whose final update an agent
        may never send (gemini-cli 0.61 after a reject); a later update adds nothing.
        """
        events: list[BrainEvent] = []
        for tool_call_id in tool_call_ids:
            tool = self.tools.get(tool_call_id)
            if tool is None or tool.finished:
                continue
            tool.finished = True
            tool.status = "failed"
            events.append(
                ToolResult(
                    tool_call_id=tool_call_id,
                    output=output,
                    is_error=True,
                    locations=tuple(tool.locations),
                )
            )
        return events

    # -- modes -----------------------------------------------------------------------------
    def mode_name(self, mode_id: str) -> str:
        return self.mode_names.get(mode_id, mode_id)

    def mode_option(self) -> SessionConfigOptionSelect | None:
        """The config option that selects the session mode, if the agent has one."""
        return self.select_option("mode")

    def select_option(self, category: str) -> SessionConfigOptionSelect | None:
        """The select config option of ``category`` (mode, model, …), if the agent has one."""
        for option in self.config_options:
            if isinstance(option, SessionConfigOptionSelect) and option.category == category:
                return option
        return None

    def _config_options(self, options: list[ConfigOption]) -> list[BrainEvent]:
        before = self.mode_option()
        self.config_options = options
        after = self.mode_option()
        if after is None or (before is not None and before.current_value == after.current_value):
            return []
        # Agents that only use config options report mode switches this way.
        self.mode_id = after.current_value
        return [*self._flush_thought(), ModeChanged(mode=self.mode_name(after.current_value))]

    # -- text ------------------------------------------------------------------------------
    def _message_chunk(self, update: AgentMessageChunk) -> list[BrainEvent]:
        text = content_text(update.content)
        if not text:
            return []
        message_id = update.message_id
        if not message_id:
            message_id = f"{self._turn}-{self._segment}"
            self._segment_used = True
        if message_id in self._flushed:
            # More text for a message already shown whole: continue it as a new one.
            message_id = f"{message_id}-{self._segment}"
        self._messages.setdefault(message_id, []).append(text)
        return [TextDelta(text=text, message_id=message_id)]

    def _flush_messages(self) -> list[BrainEvent]:
        events: list[BrainEvent] = []
        for message_id, chunks in self._messages.items():
            text = "".join(chunks)
            self._flushed.add(message_id)
            events.append(AssistantText(text=text, message_id=message_id))
            self.last_text = text
        self._messages.clear()
        self._segment += 1
        self._segment_used = False
        return events

    def _flush_thought(self) -> list[BrainEvent]:
        if not self._thought:
            return []
        text = "".join(self._thought)
        self._thought.clear()
        self._thoughts += 1
        return [Thought(text=text, message_id=f"{self._turn}-thought-{self._thoughts}")]


def offered_commands(update: AvailableCommandsUpdate) -> Commands:
    """The commands an agent offers, each with its description."""
    return Commands.of((c.name, c.description or "") for c in update.available_commands)
