"""Grok Build (xAI's ``grok`` CLI) over ACP: ``grok agent [-m M] [--reasoning-effort E] stdio``.

What the real CLI (0.2.111) does, and so what this brain does (docs/backends.md):

- ``--permission-mode`` and ``--deny``/``--disallowed-tools`` are ignored under
  ``agent stdio``, so none is passed. Its own deny and ask rules live only in settings
  files the app must not rewrite. Instead the app answers grok's questions itself: rules
  first, then the session's mode (``bypassPermissions`` allows all) or the user. The
  modes offered are the two the app can keep that way; the others are refused.
- It asks before commands, edits, writes and MCP calls, but reads, lists and searches
  unasked, so a deny rule or disallowed tool naming one of those could never take
  effect: such profiles and rules are refused (``runs_unasked``).
- Refusing one of its questions ends the whole turn (``cancelled``); the turn's end says
  so. A reopened session (``session/load``) keeps its own model whatever ``-m`` says, so
  the model is chosen again by ``session/set_model`` (see acp_models).
- Per-session MCP servers from ``session/new``/``session/load`` are started by grok and
  called through its ``use_tool`` tool.
- Text streamed before a tool call is shown as its own message first, as grok's own UI
  does, instead of being merged with the text after the tool.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any, ClassVar

from app.brains import register
from app.brains.acp import APP_KEPT_MODES, AcpBrain
from app.brains.base import BrainFacts, Capability
from app.brains.events import BrainEvent, PermissionAsked, ToolCall

__all__ = ["GrokBrain"]


@register
class GrokBrain(AcpBrain):
    """Grok Build driven over ACP on stdio."""

    name = "grok"
    label = "Grok Build"
    executable = "grok"
    install_hint = (
        "Install Grok Build with `pip install grok-cli-bin` (or xAI's installer script, "
        "which puts grok in ~/.grok/bin), then run `grok login` or set XAI_API_KEY in the "
        "profile's environment."
    )
    install_command = "pip install grok-cli-bin"
    install_note = (
        "Or xAI's installer script, which puts grok in ~/.grok/bin. Then run grok login or "
        "set XAI_API_KEY in the profile's environment."
    )
    instructions_file = "CLAUDE.md"
    facts = BrainFacts(
        resume="session/new returns the id; a later process reopens it with session/load, "
        "which replays the history (isReplay) before answering; the replay is not shown "
        "twice. Sessions live under ~/.grok/sessions/<url-encoded cwd>/<id>/.",
        permission_prompt="session/request_permission before commands, edits, writes and "
        "MCP calls (allow once / reject; edits also allow always); reads, lists and "
        "searches run unasked. A reject ends the whole turn (cancelled).",
        process_lifetime="`grok agent stdio` serves many turns, one session/prompt each; "
        "session/cancel stops a turn.",
    )
    capabilities = frozenset(
        {
            Capability.DENY_SINGLE_TOOL,
            Capability.PER_SESSION_MCP,
            Capability.PERMISSION_PROMPTS,
            Capability.RESUME,
            Capability.SET_MODE_MID_SESSION,
            Capability.INTERRUPT,
        }
    )
    limits = {}
    permission_modes = APP_KEPT_MODES
    app_keeps_modes = True
    runs_unasked: ClassVar[frozenset[str]] = frozenset(
        {"Read", "LS", "Grep", "Glob", "WebSearch", "WebFetch", "TodoWrite"}
    )
    quirks = (
        "Reads, lists and searches without asking; a refused tool call ends the turn. "
        "Reads CLAUDE.md and AGENTS.md of the project."
    )
    resume_methods = ("load",)
    flush_text_on_tool_call = True
    config_from_profile = False

    def build_argv(self) -> list[str]:
        """``grok agent [-m M] [--reasoning-effort E] stdio``."""
        c = self.config
        argv = [*(c.command or (self.executable,)), "agent"]
        if c.model:
            argv += ["-m", c.model]
        if c.reasoning_effort:
            argv += ["--reasoning-effort", c.reasoning_effort]
        argv.append("stdio")
        return argv

    def _emit(self, event: BrainEvent) -> None:
        # Rules are written in Claude Code's names for every backend: grok's
        # use_tool {tool_name: "<server>__<tool>", tool_input} is mcp__<server>__<tool>.
        if isinstance(event, PermissionAsked | ToolCall):
            named = mcp_call(event.input)
            if named is not None:
                event = replace(event, tool=named[0], input=named[1])
        super()._emit(event)


def mcp_call(tool_input: dict[str, Any]) -> tuple[str, dict[str, Any]] | None:
    """Claude Code's name and input for grok's ``use_tool`` call (None: not one)."""
    name = tool_input.get("tool_name")
    if tool_input.get("variant") != "UseTool" and set(tool_input) != {"tool_name", "tool_input"}:
        return None
    if not isinstance(name, str) or "__" not in name:
        return None
    inner = tool_input.get("tool_input")
    return f"mcp__{name}", inner if isinstance(inner, dict) else {}
