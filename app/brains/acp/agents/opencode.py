"""OpenCode (``opencode acp``) as a brain: the generic ACP brain plus a permission config.

With no ``permission`` config OpenCode asks nothing: touch, rm, write and edit all run
unasked (measured with 1.18.33), so the app's rules and the user's buttons would never
be consulted. The brain therefore hands OpenCode an inline config
(``OPENCODE_CONFIG_CONTENT``, the config source OpenCode reads last) that makes every
tool ask except the read-only ones, whose prompts would carry no path to decide on,
and turns subagents off, whose questions OpenCode does not send over ACP.
Answering ``session/request_permission`` is then where the app's rules, modes and the
user decide.

OpenCode's modes are its agents. The config keeps ``build`` asking, makes ``plan``
refuse every edit (its own plan agent's edit deny would otherwise be overridden by the
global "ask"; commands still ask there, and the app refuses them in plan mode), and
adds an ``accept-edits`` agent that edits unasked and still asks for everything else,
so Angelia's ``acceptEdits`` is a real mode that can be switched to mid-session.
``bypassPermissions`` stays on ``build``: the app allows what is asked, after the
profile's rules had their say.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from app.brains import register
from app.brains.acp.brain import AcpBrain
from app.brains.base import BrainConfig, BrainFacts, Capability
from app.brains.events import BrainEvent, PermissionAsked, ToolCall
from app.brains.mcp_names import McpNames
from app.errors import BrainStartError

if TYPE_CHECKING:
    from acp.schema import PermissionOption, RequestPermissionResponse, ToolCallUpdate

__all__ = ["CONFIG_VARIABLE", "OpenCodeBrain", "angelia_config"]

CONFIG_VARIABLE = "OPENCODE_CONFIG_CONTENT"
ACCEPT_EDITS_AGENT = "accept-edits"

# OpenCode evaluates permission rules last match first, so "*" comes first and the
# exceptions after it. The tools named "ask" are listed although "*" covers them: a
# user's own config that names them earlier would otherwise keep its value after the
# merge (merged keys keep their first position).
_ASK = {
    "*": "ask",
    "bash": "ask",
    "edit": "ask",
    "webfetch": "ask",
    "websearch": "ask",
    "codesearch": "ask",
    # Subagents are off: a subagent's questions never reach the client over ACP (1.18.33
    # waited for ever on its first shell command), so its tools could not be decided on.
    "task": "deny",
    "external_directory": "ask",
    # Read-only tools run unasked: their prompts carry no path or pattern to decide on.
    # Environment files still ask, as OpenCode's own defaults do.
    "read": {"*": "allow", "*.env": "ask", "*.env.*": "ask", "*.env.example": "allow"},
    "glob": "allow",
    "grep": "allow",
    "list": "allow",
    "lsp": "allow",
    "skill": "allow",
    "todowrite": "allow",
    "todoread": "allow",
}

# Claude Code's names of OpenCode's read-only tools → OpenCode's permission keys.
_READ_ONLY = {"Read": "read", "Glob": "glob", "Grep": "grep", "LS": "list"}
_CLAUDE_NAMES = {key: name for name, key in _READ_ONLY.items()}


def angelia_config(disallowed_tools: Sequence[str] = ()) -> dict[str, Any]:
    """The inline OpenCode config that makes it ask before every tool that acts.

    A read-only tool the profile disallows (``Read``, ``Read(.env)``, ``Grep`` …) asks
    too, so that the app's deny can answer it instead of it running unasked.
    """
    ask = dict(_ASK)
    for rule in disallowed_tools:
        key = _READ_ONLY.get(rule.split("(", 1)[0].strip())
        if key is not None:
            ask[key] = "ask"
    return {
        "permission": ask,
        "agent": {
            "build": {"permission": ask},
            # Without this the global "edit": "ask" would override plan's own deny.
            "plan": {"permission": {**ask, "edit": "deny"}},
            ACCEPT_EDITS_AGENT: {
                "mode": "primary",
                "description": "Edits files without asking; asks before anything else.",
                "permission": {**ask, "edit": "allow"},
            },
        },
    }


def _merge(base: Mapping[str, Any], over: Mapping[str, Any]) -> dict[str, Any]:
    """``over`` deep-merged onto ``base`` (tables merge, anything else is replaced)."""
    out = dict(base)
    for key, value in over.items():
        old = out.get(key)
        if isinstance(old, Mapping) and isinstance(value, Mapping):
            out[key] = _merge(old, value)
        else:
            out[key] = value
    return out


@register
class OpenCodeBrain(AcpBrain):
    """OpenCode over ACP on stdio, told to ask before every tool that acts."""

    name = "opencode"
    label = "OpenCode"
    executable = "opencode"
    default_argv = ("opencode", "acp")
    install_hint = (
        "npm i -g opencode-ai; then configure a provider in opencode.json (or log in with "
        "opencode auth login)"
    )
    install_command = "npm i -g opencode-ai"
    install_note = (
        "Then configure a provider in opencode.json (or log in with opencode auth login)."
    )
    instructions_file = "AGENTS.md"
    facts = BrainFacts(
        resume="session/new returns the id (ses_…); a later process continues it with "
        "session/resume, which replays nothing (session/load would replay the whole history "
        "with no marker). Sessions live in OpenCode's SQLite database under XDG_DATA_HOME.",
        permission_prompt="session/request_permission with once / always / reject, because "
        "Angelia gives OpenCode a permission config that asks before every tool but the "
        "read-only ones (with none, OpenCode asks nothing).",
        process_lifetime="`opencode acp` serves many turns, one session/prompt each; "
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
    limits = {Capability.FORK: "the ACP brain cannot fork a session"}
    # dontAsk has no OpenCode equivalent that the app could enforce.
    permission_modes = ("default", "acceptEdits", "plan", "bypassPermissions", "dontAsk")
    # The modes the app keeps (bypassPermissions, dontAsk) run as "build", which asks;
    # "default" comes last so that "build" maps back to it (the last one wins).
    mode_map = {
        "bypassPermissions": "build",
        "dontAsk": "build",
        "default": "build",
        "acceptEdits": ACCEPT_EDITS_AGENT,
        "plan": "plan",
    }
    # session/resume continues without a replay; session/load (also offered) replays the
    # whole history with no marker, which the ACP brain only takes in as state.
    resume_methods = ("resume", "load")
    catalog_env = {
        "OPENCODE_DISABLE_AUTOUPDATE": "1",
        # Otherwise it fetches its online model catalogue at every start.
        "OPENCODE_DISABLE_MODELS_FETCH": "1",
    }
    quirks = (
        "Asks only because Angelia passes it a permission config (OPENCODE_CONFIG_CONTENT); "
        "read, glob, grep and list run unasked unless the profile disallows them; subagents are "
        "off. In plan mode its commands still ask, and Angelia refuses them until the plan is "
        "approved. Its MCP tools (<server>_<tool>) are shown as mcp__<server>__<tool>. Looks up "
        "the npm registry at every start (fails quietly offline). Sends a title request "
        "before the first prompt."
    )

    def __init__(self, config: BrainConfig) -> None:
        self._config_problem = ""
        mine = angelia_config(config.disallowed_tools)
        theirs = config.env.get(CONFIG_VARIABLE, os.environ.get(CONFIG_VARIABLE, ""))
        if theirs.strip():
            try:
                parsed = json.loads(theirs)
            except ValueError as exc:
                parsed, self._config_problem = {}, str(exc)
            if not isinstance(parsed, dict):
                parsed, self._config_problem = {}, "it is not a JSON object"
            mine = _merge(parsed, mine)
        env = {**config.env, CONFIG_VARIABLE: json.dumps(mine)}
        super().__init__(replace(config, env=env))
        self._mcp_names = McpNames(config.mcp_servers, "_")

    async def start(self) -> None:
        mode = self.config.permission_mode
        if mode not in self.permission_modes:
            # A stored mode the app could not keep (e.g. dontAsk set before the start):
            # running in another mode under its name would mislead.
            raise BrainStartError(
                f"{self.label} has no {mode!r} mode; switch the session to one of: "
                f"{', '.join(self.permission_modes)}."
            )
        if self._config_problem:
            raise BrainStartError(
                f"{CONFIG_VARIABLE} in the profile's environment is not a JSON config "
                f"({self._config_problem}); Angelia adds its permission config to it."
            )
        await super().start()

    async def on_permission_request(
        self, session_id: str, tool_call: ToolCallUpdate, options: Sequence[PermissionOption]
    ) -> RequestPermissionResponse:
        # OpenCode's question about a read carries an empty rawInput although the call's
        # input (the path) came just before: here empty means "nothing new", and taken as
        # a replacement it would leave the question, and path rules, without the path.
        if tool_call.raw_input == {}:
            tool_call = tool_call.model_copy(update={"raw_input": None})
        return await super().on_permission_request(session_id, tool_call, options)

    def _emit(self, event: BrainEvent) -> None:
        # Rules and disallowed tools are written in Claude Code's names for every backend:
        # mcp__<server>__<tool> for OpenCode's <server>_<tool>, Glob for glob, and so on.
        if isinstance(event, PermissionAsked | ToolCall):
            name = self.claude_name(event.tool)
            if name != event.tool:
                event = replace(event, tool=name)
        super()._emit(event)

    def claude_name(self, tool: str) -> str:
        """Claude Code's name for an OpenCode tool (MCP or read-only), else ``tool``."""
        return self._mcp_names.claude_name(tool) or _CLAUDE_NAMES.get(tool, tool)
