"""GitHub Copilot CLI (``copilot --acp``, npm ``@github/copilot``) as a brain.

What the real CLI (1.0.102) does, and so what this brain adds to the generic ACP brain
(docs/backends.md):

- It asks before every command, edit and MCP call with ``session/request_permission``
  (allow once / always allow / deny); "always allow" lasts for its session only.
- Its modes are named by URL: ``…/session-modes#agent`` asks, ``#plan`` plans without
  acting, ``#autopilot`` allows everything and keeps going. It has nothing like
  ``acceptEdits``. ``bypassPermissions`` and ``dontAsk`` are kept by the app, which answers
  the questions of the asking mode itself; a switch to either leaves copilot in ``#agent``.
- It refuses the stdio MCP servers a client gives ``session/new`` ("Rejecting
  non-http/sse MCP server"), so the profile's servers go on its command line instead
  (``--additional-mcp-config @file``), from a private file that is removed once the
  session is open. Their tools are ``<server>-<tool>`` in the transcript, and the question
  about one names only the tool, so the brain names both ``mcp__<server>__<tool>``, the
  name every backend's rules use.
- It runs the shell commands of the folder's ``.github/hooks/*.json`` (at session start,
  before every prompt and tool) without asking, in every session: measured with a
  ``sessionStart`` hook that ran as the session opened. Those would bypass the app's
  questions, so the brain does not start copilot in a folder (or a git checkout) that
  has any; the user's own hooks (``~/.copilot/hooks``) are theirs to keep.
- With a provider of one's own (``COPILOT_PROVIDER_BASE_URL``) it lists no models over
  ACP: the profile's model goes on its command line (``--model``), and a switch mid-session
  is refused.
"""

from __future__ import annotations

import json
import os
from dataclasses import replace
from pathlib import Path
from typing import Any

from app.brains import register
from app.brains.acp.brain import AcpBrain
from app.brains.base import BrainConfig, BrainFacts, Capability
from app.brains.events import BrainEvent, PermissionAsked, ToolCall
from app.brains.mcp_names import McpNames
from app.brains.private_files import private_file
from app.errors import BrainStartError
from app.transport import build_env

__all__ = ["AGENT_MODE", "PLAN_MODE_ID", "CopilotBrain", "copilot_mcp_config", "repo_hooks"]

_MODES = "https://agentclientprotocol.com/protocol/session-modes#"
AGENT_MODE = _MODES + "agent"
PLAN_MODE_ID = _MODES + "plan"


@register
class CopilotBrain(AcpBrain):
    """GitHub Copilot CLI over ACP, with the profile's MCP servers on its command line.

    It keeps everything the generic ACP brain can (``AcpBrain.capabilities``)."""

    name = "copilot"
    label = "GitHub Copilot CLI"
    executable = "copilot"
    install_hint = (
        "npm i -g @github/copilot, then log in once with copilot login (or point it at a "
        "provider of your own with COPILOT_PROVIDER_BASE_URL in the profile's env)"
    )
    install_command = "npm i -g @github/copilot"
    install_note = (
        "Then log in once with copilot login (or point it at a provider of your own with "
        "COPILOT_PROVIDER_BASE_URL in the profile's env)."
    )
    facts = BrainFacts(
        resume="session/new returns the id; a later process reopens it with session/load "
        "(it has no session/resume), whose history replay is not shown twice.",
        permission_prompt="session/request_permission before every command, edit and MCP "
        "call, with allow once / always allow (this session only) / deny.",
        process_lifetime="One `copilot --acp` process per chat session serving many turns, "
        "one session/prompt each; session/cancel stops a turn.",
    )
    limits = {Capability.FORK: "copilot offers no session/fork over ACP"}
    quirks = (
        "Its modes are named by URL (…/session-modes#agent, #plan, #autopilot); it has no "
        "acceptEdits. With a provider of your own (COPILOT_PROVIDER_BASE_URL, plus "
        "COPILOT_OFFLINE=true to reach nothing else) it needs no GitHub login and lists no "
        "models: the profile's model goes on its command line. MCP tools are shown as "
        "mcp__<server>__<tool>."
    )
    default_argv = ("copilot", "--acp")
    # Start-up: the asking mode for every mode the app keeps. Listed before "default" so
    # that the agent's #agent reads back as "default".
    mode_map = {
        "bypassPermissions": AGENT_MODE,
        "dontAsk": AGENT_MODE,
        "default": AGENT_MODE,
        "plan": PLAN_MODE_ID,
    }
    permission_modes = ("default", "plan", "bypassPermissions", "dontAsk")
    resume_methods = ("load",)
    model_flag = "--model"
    effort_limit = (
        "copilot takes no reasoning effort over ACP (measured with 1.0.102), and Angelia "
        "does not pass its --reasoning-effort flag"
    )

    def __init__(self, config: BrainConfig) -> None:
        # Given to session/new, copilot would refuse them: they go on its command line.
        super().__init__(replace(config, mcp_servers={}))
        self._mcp_servers = dict(config.mcp_servers)
        self._mcp_file: Path | None = None
        self._mcp_names = McpNames(config.mcp_servers, "-")
        # tool_call_id → Claude Code's name of the MCP tool it calls.
        self._mcp_calls: dict[str, str] = {}

    def build_argv(self) -> list[str]:
        argv = super().build_argv()
        if self._mcp_file is not None:
            argv += ["--additional-mcp-config", f"@{self._mcp_file}"]
        return argv

    async def start(self) -> None:
        if not self._started and (hooks := repo_hooks(Path(self.config.cwd))):
            raise BrainStartError(
                f"{self.label} runs the shell commands of a folder's hook files without "
                f"asking, and this folder has {', '.join(str(h) for h in hooks)}. Angelia "
                "does not start it here: remove or move the hooks, or run copilot in a "
                "terminal."
            )
        if not self._mcp_servers or self._started:
            await super().start()
            return
        path = build_env(os.environ, self.config.env).get("PATH")
        text = json.dumps(copilot_mcp_config(self._mcp_servers, self.label, path))
        # The servers' env and headers may hold secrets: a private file, not the argv.
        with private_file("angelia-copilot-", "mcp-config.json", text) as self._mcp_file:
            try:
                await super().start()
            finally:
                # copilot has read it by the time its session is open.
                self._mcp_file = None

    def _emit(self, event: BrainEvent) -> None:
        # Rules are written in Claude Code's names for every backend.
        if isinstance(event, PermissionAsked | ToolCall):
            name = self._mcp_calls.get(event.tool_call_id) or self.claude_name(event.tool)
            if name != event.tool:
                self._mcp_calls[event.tool_call_id] = name
                event = replace(event, tool=name)
        super()._emit(event)

    def claude_name(self, tool: str) -> str:
        """``mcp__<server>__<tool>`` for copilot's ``<server>-<tool>``, else ``tool``."""
        return self._mcp_names.claude_name(tool) or tool


def repo_hooks(cwd: Path) -> list[Path]:
    """The hook files copilot would load for ``cwd``: ``.github/hooks/*.json`` there and
    at the root of the git checkout it is in (the docs say the working directory; the
    root is checked too, which only ever refuses more)."""
    folders = [cwd]
    for folder in [cwd, *cwd.parents]:
        if (folder / ".git").exists():
            folders.append(folder)
            break
    return sorted(
        {hook for folder in folders for hook in (folder / ".github" / "hooks").glob("*.json")}
    )


def copilot_mcp_config(
    servers: dict[str, Any], agent: str, path: str | None = None
) -> dict[str, Any]:
    """A profile's ``.mcp.json``-shaped servers in copilot's MCP config shape.

    Raises:
        BrainStartError: A server is malformed (checked as for any ACP agent).
    """
    from acp.schema import HttpMcpServer, McpCapabilities, McpServerStdio, SseMcpServer

    from app.brains.acp.client import acp_mcp_servers

    checked = acp_mcp_servers(servers, McpCapabilities(http=True, sse=True), agent=agent, path=path)
    config: dict[str, Any] = {}
    for server in checked:
        if isinstance(server, McpServerStdio):
            config[server.name] = {
                "type": "local",
                "command": server.command,
                "args": server.args,
                "env": {variable.name: variable.value for variable in server.env},
                "tools": ["*"],
            }
        elif isinstance(server, HttpMcpServer | SseMcpServer):
            config[server.name] = {
                "type": server.type,
                "url": server.url,
                "headers": {header.name: header.value for header in server.headers},
                "tools": ["*"],
            }
    return {"mcpServers": config}
