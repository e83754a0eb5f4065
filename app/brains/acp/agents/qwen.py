"""Qwen Code (``@qwen-code/qwen-code``, bin ``qwen``) over ACP: ``qwen --acp``.

What the real CLI (0.24.4) does, and so what this brain does (docs/backends.md):

- New sessions start in its ``auto`` mode, where a classifier model call decides and a
  question arrives only when the classifier fails; the ACP brain switches the session to
  the profile's mode at start, as for claude-agent-acp. ``acceptEdits`` is its
  ``auto-edit``, ``bypassPermissions`` its ``yolo``; ``plan`` and ``default`` keep their names.
- ACP tool calls carry titles, not names, and for an MCP tool qwen's title is the call's
  arguments (``{"text":"apricot"}``). Its own name comes in ``_meta.toolName``
  (``mcp__<server>__<tool>``, Claude Code's spelling), which this brain takes as the tool,
  so the profile's rules (``mcp__server``) match MCP calls as on every other backend.
- Its two "always" options write an allow rule (``Bash(touch *)``) into the project's
  ``.qwen/settings.json`` or the user's ``~/.qwen/settings.json``, where it would hold for
  every later qwen in that folder, inside Angelia or not, unseen by the app and beyond the
  reach of its rules page. So the user sees one "allow always", qwen is answered "allow
  once", and the app's own rule for the profile (which every "allow always" stores)
  answers the later calls: qwen's settings are never written.
- Leaving plan mode (its ``exit_plan_mode``, kind ``switch_mode``) offers "restore
  previous mode" first. For a session that started in plan mode that is qwen's ``auto``,
  where its classifier, not the app's rules, lets calls run: the option is not offered,
  so approving the plan goes on in ``default`` (or ``auto-edit`` for "allow always").
- It reads (``read_file``), greps and globs inside the session's folder without asking
  (a read outside asks), so a deny rule for ``Read``, ``Grep`` or ``Glob`` could never be
  applied there: such rules are refused (``runs_unasked``).
- With folder trust off (its default) qwen obeys the folder's own ``.qwen/settings.json``:
  a ``permissions.allow`` entry there let ``touch`` run with no question reaching the app.
  A repository could ship one, so a session does not start in a folder whose settings
  allow tools, add hooks or MCP servers, or set an approval mode (``folder_loosenings``);
  turning folder trust on instead would cost MCP servers and privileged modes.
- It resumes with ``session/resume`` (no replay) and also offers ``session/load``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from app.brains import register
from app.brains.acp.brain import AcpBrain
from app.brains.base import BrainConfig, BrainFacts, PermissionAnswer
from app.brains.events import BrainEvent, PermissionAsked, ToolCall
from app.errors import BrainStartError

if TYPE_CHECKING:
    from acp.schema import PermissionOption as AcpPermissionOption
    from acp.schema import RequestPermissionResponse, ToolCallUpdate

    from app.brains.acp.updates import SessionUpdate

__all__ = ["QwenBrain"]

MCP_PREFIX = "mcp__"
ALLOW_ALWAYS = "allow_always"
PLAN_EXIT_KIND = "switch_mode"
RESTORE_PREVIOUS = "restore_previous"
ALLOW_ALWAYS_LABEL = "Allow always (a rule of this profile)"


@register
class QwenBrain(AcpBrain):
    """Qwen Code driven over ACP on stdio."""

    name = "qwen"
    label = "Qwen Code"
    executable = "qwen"
    install_hint = (
        "npm i -g @qwen-code/qwen-code (needs Node.js 22), then set OPENAI_API_KEY (with "
        "OPENAI_BASE_URL and OPENAI_MODEL) or a provider in ~/.qwen/settings.json"
    )
    install_command = "npm i -g @qwen-code/qwen-code"
    install_note = (
        "Needs Node.js 22; then set OPENAI_API_KEY (with OPENAI_BASE_URL and OPENAI_MODEL) "
        "or a provider in ~/.qwen/settings.json."
    )
    instructions_file = "QWEN.md"
    facts = BrainFacts(
        resume="session/new returns the id (a UUID); a later process continues it with "
        "session/resume (no replay). Chats live under ~/.qwen/projects/<cwd with / as ->/, "
        "so the same HOME is needed.",
        permission_prompt="session/request_permission before commands, edits, writes and "
        "MCP calls (allow once / allow always / reject); reads, greps and globs inside the "
        "folder run unasked.",
        process_lifetime="`qwen --acp` serves many turns, one session/prompt each; "
        "session/cancel stops a turn.",
    )
    runs_unasked: ClassVar[frozenset[str]] = frozenset({"Read", "Grep", "Glob"})
    default_argv = ("qwen", "--acp")
    mode_map = {"acceptEdits": "auto-edit", "bypassPermissions": "yolo"}
    quirks = (
        "Starts new sessions in its auto mode, where a classifier model call decides and a "
        "question arrives only when that fails; Angelia switches it to the profile's mode "
        "at start. Reads QWEN.md and AGENTS.md of the project."
    )

    def __init__(self, config: BrainConfig) -> None:
        super().__init__(config)
        # tool call id → qwen's own name of an MCP tool (from ``_meta.toolName``).
        self._mcp_tools: dict[str, str] = {}
        # Open questions that leave plan mode: their "always" is auto-edit, kept by qwen.
        self._plan_exits: set[str] = set()

    async def start(self) -> None:
        """Refuse a folder whose own qwen settings would let tools run unasked, then start.

        Raises:
            BrainStartError: The folder's ``.qwen/settings.json`` loosens what qwen asks.
        """
        settings = Path(self.config.cwd) / ".qwen" / "settings.json"
        found = folder_loosenings(settings)
        if found:
            raise BrainStartError(
                f"{self.label} would obey this folder's {settings}, which sets "
                f"{', '.join(found)}: tools could run without Angelia asking. Remove those "
                "settings from the folder to run Qwen Code here."
            )
        await super().start()

    def on_session_update(self, session_id: str, update: SessionUpdate) -> None:
        if getattr(update, "session_update", None) in ("tool_call", "tool_call_update"):
            self._note_mcp_tool(update)
        super().on_session_update(session_id, update)

    async def on_permission_request(
        self, session_id: str, tool_call: ToolCallUpdate, options: Sequence[AcpPermissionOption]
    ) -> RequestPermissionResponse:
        self._note_mcp_tool(tool_call)
        if tool_call.kind == PLAN_EXIT_KIND:
            shown = [o for o in options if o.option_id != RESTORE_PREVIOUS]
        else:
            shown = one_always(options)
        return await super().on_permission_request(session_id, tool_call, shown)

    async def answer_permission(self, request_id: str, answer: PermissionAnswer) -> None:
        if answer.choice == ALLOW_ALWAYS and request_id not in self._plan_exits:
            # qwen would save the allowance in its settings files; the app's rule keeps it.
            answer = replace(answer, choice="allow_once", option_id="")
        self._plan_exits.discard(request_id)
        await super().answer_permission(request_id, answer)

    def _note_mcp_tool(self, update: Any) -> None:
        meta = getattr(update, "field_meta", None)
        name = meta.get("toolName") if isinstance(meta, Mapping) else None
        # Only MCP tools: commands, edits and reads are named by their ACP kind, which a
        # name in _meta must not override.
        if isinstance(name, str) and name.startswith(MCP_PREFIX) and update.kind in (None, "other"):
            self._mcp_tools[update.tool_call_id] = name

    def _emit(self, event: BrainEvent) -> None:
        if isinstance(event, PermissionAsked) and event.tool_kind == PLAN_EXIT_KIND:
            self._plan_exits.add(event.request_id)
        if isinstance(event, PermissionAsked | ToolCall):
            named = self._mcp_tools.get(event.tool_call_id)
            if named is not None:
                event = replace(event, tool=named)
        super()._emit(event)


def one_always(options: Sequence[AcpPermissionOption]) -> list[AcpPermissionOption]:
    """qwen's options with its "always" ones (project, user) folded into one, named for
    what the app does with it."""
    always = [o for o in options if o.kind == ALLOW_ALWAYS]
    rest = [o for o in options if o.kind != ALLOW_ALWAYS]
    if not always:
        return rest
    return [always[0].model_copy(update={"name": ALLOW_ALWAYS_LABEL}), *rest]


# Settings of a folder that let qwen act without asking or run commands of the folder's
# choosing: allow rules (measured), and, read from its settings, hooks, MCP servers and
# a default approval mode.
LOOSENING_KEYS = (("permissions", "allow"), ("hooks",), ("mcpServers",), ("tools", "approvalMode"))


def folder_loosenings(settings: Path) -> list[str]:
    """The loosening keys a folder's qwen ``settings`` file sets (empty: none, or no file).

    A file that cannot be read as JSON (qwen also takes comments) counts as loosening:
    what it holds cannot be checked."""
    try:
        text = settings.read_text("utf-8")
    except FileNotFoundError:
        return []
    except OSError:
        return [f"something unreadable ({settings.name} could not be read)"]
    try:
        data: Any = json.loads(text)
    except ValueError:
        return ["something this check cannot read (not plain JSON)"]
    found = []
    for path in LOOSENING_KEYS:
        value = data
        for key in path:
            value = value.get(key) if isinstance(value, Mapping) else None
        if value not in (None, [], {}, ""):
            found.append(".".join(path))
    return found
