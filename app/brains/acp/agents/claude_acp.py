"""Claude Code behind its ACP adapter (``claude-agent-acp``, npm
``@agentclientprotocol/claude-agent-acp``) as a brain.

It is the generic ACP brain but for the profile's MCP servers. The adapter hands the
servers it gets in ``session/new`` to the Claude Agent SDK, which starts ``claude`` with
them written out on its command line (``--mcp-config {json}``, measured with 0.101.0),
where every local user can read their env values and headers. So the servers go in a
file instead, named by ``_meta.claudeCode.options.extraArgs`` (which the adapter passes
on to ``claude`` as ``--mcp-config <path>``): 0600, in the session's own folder under
the data folder. The adapter starts ``claude`` again when it rebuilds its query (a
reopened session, a change of provider or options), so the file stays while the
process runs and goes when it stops.
"""

from __future__ import annotations

import json
import tempfile
from dataclasses import replace
from pathlib import Path
from typing import Any

from app.brains import register
from app.brains.acp.brain import AcpBrain
from app.brains.base import BrainConfig
from app.brains.private_files import write_private
from app.errors import BrainStartError

__all__ = ["ClaudeAcpBrain"]

MCP_FILE = "mcp-config.json"


@register
class ClaudeAcpBrain(AcpBrain):
    """Claude Code over ACP, with the profile's MCP servers in a private file."""

    name = "claude-acp"
    label = "Claude Code (ACP adapter)"
    executable = "claude-agent-acp"
    install_hint = (
        "npm i -g @agentclientprotocol/claude-agent-acp (needs a Claude login or ANTHROPIC_API_KEY)"
    )
    install_command = "npm i -g @agentclientprotocol/claude-agent-acp"
    install_note = "Needs a Claude login or ANTHROPIC_API_KEY."
    instructions_file = "CLAUDE.md"
    quirks = (
        "Starts new sessions in its auto mode, which asks nothing; Angelia switches it to "
        "the profile's mode at start. Sends title and suggestion requests to the model."
    )
    default_argv = ("claude-agent-acp",)
    # The MCP file lives in the session's folder under the data folder.
    keeps_state = True

    def __init__(self, config: BrainConfig) -> None:
        # Given to session/new, they would end up on claude's command line.
        super().__init__(replace(config, mcp_servers={}))
        self._mcp_servers = dict(config.mcp_servers)
        self._mcp_file: Path | None = None

    async def start(self) -> None:
        if self._mcp_servers and not self._started:
            check_servers(self._mcp_servers, self.label)
            self._mcp_file = self._write_mcp_file()
        try:
            await super().start()
        except BaseException:
            self._remove_mcp_file()
            raise

    def session_meta(self) -> dict[str, Any]:
        if self._mcp_file is None:
            return {}
        # Passed on to claude as --mcp-config <path>, next to the adapter's own servers.
        options = {"extraArgs": {"mcp-config": str(self._mcp_file)}}
        return {"claudeCode": {"options": options}}

    async def stop(self, grace: float | None = None) -> None:
        try:
            await super().stop(grace)
        finally:
            self._remove_mcp_file()

    def _close_events(self) -> None:
        # The process is gone (stopped or exited by itself): so is the need for the file.
        self._remove_mcp_file()
        super()._close_events()

    def _write_mcp_file(self) -> Path:
        """The profile's servers, in Claude Code's own format, in a file only the user can
        read, in a folder only the user can open; its path.

        Raises:
            BrainStartError: The folder cannot be made or written.
        """
        state = self.config.state_dir
        try:
            if state is None:  # Not started by the app: a fresh private folder.
                folder = Path(tempfile.mkdtemp(prefix="angelia-claude-acp-"))
            else:
                folder = Path(state)
                folder.mkdir(parents=True, exist_ok=True, mode=0o700)
                folder.chmod(0o700)
            path = folder / MCP_FILE
            path.unlink(missing_ok=True)  # left by a process that was killed
            write_private(path, json.dumps({"mcpServers": self._mcp_servers}))
        except OSError as exc:
            raise BrainStartError(f"Could not write the MCP servers' file: {exc}") from None
        return path

    def _remove_mcp_file(self) -> None:
        if self._mcp_file is None:
            return
        self._mcp_file.unlink(missing_ok=True)
        if self.config.state_dir is None:
            # The private folder made for it alone.
            self._mcp_file.parent.rmdir()
        self._mcp_file = None


def check_servers(servers: dict[str, Any], agent: str) -> None:
    """Refuse malformed servers as for any ACP agent, before the CLI would.

    Raises:
        BrainStartError: A server is malformed (named, with what is wrong).
    """
    # Imported here so that listing the backends does not load the SDK (see acp/brain.py).
    from acp.schema import McpCapabilities

    from app.brains.acp.client import acp_mcp_servers

    acp_mcp_servers(servers, McpCapabilities(http=True, sse=True), agent=agent)
