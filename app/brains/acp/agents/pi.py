"""pi (``@earendil-works/pi-coding-agent``) through its ACP adapter ``pi-acp``.

pi asks nothing before a tool runs, so on its own Angelia could neither ask nor deny. The
brain loads a permission gate of its own into pi (``pi_gate.ts``, a pi extension): pi-acp
runs ``pi --mode rpc`` from ``PI_ACP_PI_COMMAND`` (one executable, no arguments), so the
brain points it at a small wrapper script that adds ``-e <gate>``. Nothing is written into
the user's ``~/.pi``; both files live in a private temporary folder for the life of the
brain. The gate asks through ``ctx.ui.confirm``, which pi-acp sends as a
``session/request_permission`` under an id of its own (``pi-ui-<n>``); the question's
message names the real tool call, and this brain asks the app about that call, so the card
sits on the call in the transcript and the profile's rules see its real input.

pi-acp shows a bash call as a terminal (a Zed extension: ``content`` names a terminal,
the output comes only in ``_meta.terminal_output``) even to a client without terminals;
the brain turns that output back into the call's text content.

MCP servers passed per session are ignored by pi-acp; the gate registers the profile's
stdio servers in pi instead (``pi.registerMcpServer``, direct exposure so the model sees
``mcp__<server>__<tool>``), from a file next to it named by ``ANGELIA_PI_MCP_SERVERS``.

Permission modes are Angelia's own here (pi's ACP "modes" are thinking levels): the gate
asks about every call and the app answers by the session's mode, which is why only the
modes the app answers by itself (default, bypassPermissions) are offered.
"""

from __future__ import annotations

import json
import logging
import os
import shlex
import shutil
import tempfile
from collections.abc import Sequence
from dataclasses import replace
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any

from app.brains import register
from app.brains.acp.brain import APP_KEPT_MODES, AcpBrain
from app.brains.base import BrainFacts, Capability
from app.brains.private_files import write_private
from app.transport import build_env

if TYPE_CHECKING:
    from acp.schema import PermissionOption as AcpPermissionOption
    from acp.schema import (
        RequestPermissionResponse,
        ToolCallProgress,
        ToolCallStart,
        ToolCallUpdate,
    )

    from app.brains.acp.updates import SessionUpdate

log = logging.getLogger(__name__)

__all__ = ["PiBrain", "gate_question", "write_gate"]

GATE_FILE = "pi_gate.ts"
# The gate's JSON carries this marker (keep in step with pi_gate.ts).
GATE_MARKER = "angelia-pi-gate/1"
# pi-acp's id for a question an extension asks (``extensionUiToolCall`` in pi-acp 0.0.34).
_UI_CALL_PREFIX = "pi-ui-"
# pi's built-in tools → ACP kinds, as pi-acp reports them (``toToolKind``).
_KINDS = {"bash": "execute", "write": "edit", "edit": "edit", "read": "read"}


def gate_question(tool_call: ToolCallUpdate) -> dict[str, Any] | None:
    """The real tool call a question of the gate is about (None: not the gate's)."""
    if not tool_call.tool_call_id.startswith(_UI_CALL_PREFIX):
        return None
    raw = tool_call.raw_input if isinstance(tool_call.raw_input, dict) else {}
    if raw.get("method") != "confirm" or not isinstance(raw.get("message"), str):
        return None
    try:
        question = json.loads(raw["message"])
    except ValueError:
        return None
    if not isinstance(question, dict) or question.get("marker") != GATE_MARKER:
        return None
    if not isinstance(question.get("toolCallId"), str) or not question["toolCallId"]:
        return None
    return question


@register
class PiBrain(AcpBrain):
    """pi over ACP (pi-acp), with Angelia's permission gate loaded into pi."""

    name = "pi"
    label = "pi"
    executable = "pi-acp"
    install_hint = (
        "npm i -g pi-acp @earendil-works/pi-coding-agent (pi needs Node.js 22.19 or newer; "
        "pi-acp runs pi from PATH), then configure a provider in ~/.pi/agent."
    )
    install_command = "npm i -g pi-acp @earendil-works/pi-coding-agent"
    install_note = (
        "pi needs Node.js 22.19 or newer; pi-acp runs pi from PATH. Then configure a "
        "provider in ~/.pi/agent."
    )
    instructions_file = "AGENTS.md"
    facts = BrainFacts(
        resume="session/new returns the id; a later process reopens it with session/load, "
        "which replays the history with no marker; the replay is not shown twice.",
        permission_prompt="pi asks nothing by itself; Angelia loads a pi extension (pi -e) "
        "that asks through pi-acp's session/request_permission (yes / no) before every call "
        "that changes something or reads outside the folder, and blocks it unless allowed.",
        process_lifetime="pi-acp serves many turns, one session/prompt each, with one "
        "`pi --mode rpc` child per session; session/cancel stops a turn.",
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
    limits = {
        Capability.FORK: "pi-acp offers no session/fork",
    }
    quirks = (
        "An adapter around `pi --mode rpc`: no file or terminal delegation to Angelia. "
        "Angelia's permission modes are default and bypassPermissions; pi's own ACP modes "
        "are thinking levels."
    )
    default_argv = ("pi-acp",)
    permission_modes = APP_KEPT_MODES
    app_keeps_modes = True
    resume_methods = ("load",)

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._gate_dir: Path | None = None
        # Output of pi-acp's display-only terminals so far, per tool call.
        self._terminal_text: dict[str, str] = {}

    async def start(self) -> None:
        if self._gate_dir is None:
            self._gate_dir = Path(tempfile.mkdtemp(prefix="angelia-pi-"))
            try:
                env = {"PI_ACP_PI_COMMAND": write_gate(self._gate_dir, self._pi_command())}
                if self.config.mcp_servers:
                    env["ANGELIA_PI_MCP_SERVERS"] = self._write_mcp_servers(self._gate_dir)
            except BaseException:
                self._remove_gate()
                raise
            self.config = replace(self.config, env={**self.config.env, **env})
        try:
            await super().start()
        except BaseException:
            self._remove_gate()
            raise

    async def stop(self, grace: float | None = None) -> None:
        try:
            await super().stop(grace)
        finally:
            self._remove_gate()

    def _close_events(self) -> None:
        # The process is gone (stopped or exited by itself): so is the need for the gate.
        self._remove_gate()
        super()._close_events()

    def on_session_update(self, session_id: str, update: SessionUpdate) -> None:
        # Imported here so that listing the backends does not load the SDK (see acp/brain.py).
        from acp.schema import CurrentModeUpdate, ToolCallProgress, ToolCallStart

        if isinstance(update, CurrentModeUpdate):
            # pi-acp's modes are thinking levels, sent after every model or config switch;
            # taken as a permission mode they would replace the session's ("off").
            return
        if isinstance(update, ToolCallStart | ToolCallProgress):
            update = self._terminal_as_text(update)
        super().on_session_update(session_id, update)

    def _terminal_as_text(
        self, update: ToolCallStart | ToolCallProgress
    ) -> ToolCallStart | ToolCallProgress:
        """The update with its terminal's output as text content instead of the terminal."""
        from acp.schema import ContentToolCallContent, TerminalToolCallContent, TextContentBlock

        call_id = update.tool_call_id
        meta = update.field_meta if isinstance(update.field_meta, dict) else {}
        output = meta.get("terminal_output")
        data = output.get("data") if isinstance(output, dict) else None
        if isinstance(data, str) and data:
            self._terminal_text[call_id] = self._terminal_text.get(call_id, "") + data
        elif update.content is None:
            return update
        content = [c for c in update.content or [] if not isinstance(c, TerminalToolCallContent)]
        if text := self._terminal_text.get(call_id):
            block = TextContentBlock(type="text", text=text)
            content.append(ContentToolCallContent(type="content", content=block))
        if update.status in ("completed", "failed"):
            self._terminal_text.pop(call_id, None)
        return update.model_copy(update={"content": content})

    async def on_permission_request(
        self, session_id: str, tool_call: ToolCallUpdate, options: Sequence[AcpPermissionOption]
    ) -> RequestPermissionResponse:
        from acp.schema import ToolCallUpdate

        question = gate_question(tool_call)
        if question is not None:
            tool_name = str(question.get("toolName") or "tool")
            tool_input = question.get("input")
            known = question["toolCallId"] in self._mapper.tools
            tool_call = ToolCallUpdate(
                tool_call_id=question["toolCallId"],
                # Only what pi-acp did not say already (it names a bash call by its command).
                title=None if known else tool_name,
                kind=None if known else _KINDS.get(tool_name, "other"),
                raw_input=tool_input if isinstance(tool_input, dict) else {},
            )
        return await super().on_permission_request(session_id, tool_call, options)

    def _write_mcp_servers(self, folder: Path) -> str:
        """The profile's MCP servers in pi's ``mcp.json`` shape, in ``folder``; the path.

        Raises:
            BrainStartError: A server is malformed or not a stdio one.
        """
        from acp.schema import McpServerStdio

        from app.brains.acp.client import acp_mcp_servers

        path = build_env(os.environ, self.config.env).get("PATH")
        servers = {
            server.name: {
                "command": server.command,
                "args": server.args,
                "env": {variable.name: variable.value for variable in server.env},
                "cwd": self.config.cwd,
                # Not behind pi's codemode or tool search: the model calls them by name.
                "exposure": "direct",
            }
            for server in acp_mcp_servers(
                self.config.mcp_servers, None, agent=self.label, path=path
            )
            if isinstance(server, McpServerStdio)
        }
        target = folder / "mcp-servers.json"
        write_private(target, json.dumps(servers))  # env values may be tokens
        return str(target)

    def _pi_command(self) -> str:
        """What the wrapper runs: the profile's (or the environment's) pi, else ``pi``."""
        return self.config.env.get("PI_ACP_PI_COMMAND") or os.environ.get("PI_ACP_PI_COMMAND", "pi")

    def _remove_gate(self) -> None:
        if self._gate_dir is not None:
            shutil.rmtree(self._gate_dir, ignore_errors=True)
            self._gate_dir = None


def write_gate(folder: Path, pi_command: str) -> str:
    """Put the gate and a wrapper running ``pi -e <gate> "$@"`` in ``folder``; the wrapper's
    path. The gate is copied out of the package so an install from a zip works too."""
    gate = folder / GATE_FILE
    gate.write_text(resources.files("app.brains.acp.agents").joinpath(GATE_FILE).read_text("utf-8"))
    wrapper = folder / "pi"
    wrapper.write_text(
        "#!/bin/sh\n"
        "# Written by Angelia: pi with Angelia's permission gate"
        " (see app/brains/acp/agents/pi.py).\n"
        f'exec {shlex.quote(pi_command)} -e {shlex.quote(str(gate))} "$@"\n'
    )
    wrapper.chmod(0o700)
    return str(wrapper)
