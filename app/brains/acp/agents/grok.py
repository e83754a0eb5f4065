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
  the model is chosen again by ``session/set_model`` (see models).
- Per-session MCP servers from ``session/new``/``session/load`` are started by grok and
  called through its ``use_tool`` tool. They connect only after the session has opened
  (``_x.ai/mcp/init_progress``, then ``_x.ai/mcp_initialized`` once each has connected or
  failed); a prompt sent before that tells the model they are "still connecting", so the
  first message waits for them (``mcp_wait``). A server that fails is named to the user
  once (``_x.ai/mcp/server_status`` ``unavailable``).
- Text streamed before a tool call is shown as its own message first, as grok's own UI
  does, instead of being merged with the text after the tool.
"""

from __future__ import annotations

import asyncio
from dataclasses import replace
from typing import Any, ClassVar

from app.brains import register
from app.brains.acp.brain import APP_KEPT_MODES, AcpBrain
from app.brains.base import BrainConfig, BrainFacts, Capability
from app.brains.events import BrainError, BrainEvent, PermissionAsked, ToolCall

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

    # How long the first message waits for the profile's MCP servers (grok itself gives
    # up on one after 30 s, which is too long to hold a message).
    mcp_wait: ClassVar[float] = 10.0

    def __init__(self, config: BrainConfig) -> None:
        super().__init__(config)
        self._mcp_settled = asyncio.Event()
        self._mcp_waited = False
        self._mcp_down: set[str] = set()

    async def start(self) -> None:
        await super().start()
        if self._mcp_waited or not self.config.mcp_servers:
            return
        self._mcp_waited = True
        try:
            await asyncio.wait_for(self._mcp_settled.wait(), self.mcp_wait)
        except TimeoutError:
            self._emit(
                BrainError(
                    message=f"The profile's MCP servers were still connecting after "
                    f"{self.mcp_wait:.0f} s; the message went on without them, and "
                    f"{self.label} tells its model they are not ready yet."
                )
            )

    def on_extension(self, method: str, params: dict[str, Any]) -> None:
        session = params.get("sessionId")
        if session is not None and self.session_id is not None and session != self.session_id:
            return
        if method == "x.ai/mcp_initialized":
            self._mcp_settled.set()
        elif method == "x.ai/mcp/server_status":
            name = str(params.get("name") or "")
            if params.get("status") == "ready":
                self._mcp_down.discard(name)
            elif params.get("status") == "unavailable" and name not in self._mcp_down:
                # grok retries a failed server three times; one notice is enough.
                self._mcp_down.add(name)
                why = str(params.get("detail") or params.get("reason") or "no reason given")
                self._emit(
                    BrainError(
                        message=f"MCP server {name!r} is not available: {why}. Its tools "
                        "are missing from this session; check the server's command in the "
                        "profile."
                    )
                )

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
