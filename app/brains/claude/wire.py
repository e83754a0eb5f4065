"""The command line that starts Claude Code, the frames the host writes to it, and how
its tools are presented.

Stream-json on stdin: user messages and control frames (requests the host starts,
answers to the CLI's own requests). The parser for what the CLI writes back lives in
``app.brains.claude.protocol``.
"""

from __future__ import annotations

import itertools
import json
import secrets
from collections.abc import Sequence
from typing import Any

from app.brains.base import BrainConfig
from app.brains.events import JsonDict

_TOOL_KINDS: dict[str, str] = {
    **dict.fromkeys(("Read",), "read"),
    **dict.fromkeys(("Glob", "Grep"), "search"),
    **dict.fromkeys(("Edit", "Write", "MultiEdit", "NotebookEdit"), "edit"),
    **dict.fromkeys(("Bash",), "execute"),
    **dict.fromkeys(("WebFetch", "WebSearch"), "fetch"),
}
_TITLE_KEYS = ("command", "file_path", "notebook_path", "pattern", "url", "query", "description")
_TITLE_CHARS = 120
_counter = itertools.count(1)


# -- frames --------------------------------------------------------------------------
def new_request_id() -> str:
    """A request id unique among the host's in-flight requests (the SDK's format)."""
    return f"req_{next(_counter)}_{secrets.token_hex(4)}"


def user_message(
    text: str, images: Sequence[tuple[str, str]] = (), message_id: str = ""
) -> JsonDict:
    """One user turn; ``images`` are (media type, base64 data) pairs.

    ``message_id`` becomes the message's uuid in the CLI's transcript, which is what a
    later ``rewind_files`` names.
    """
    content: str | list[JsonDict] = text
    if images:
        blocks: list[JsonDict] = [{"type": "text", "text": text}] if text else []
        for media_type, data in images:
            source = {"type": "base64", "media_type": media_type, "data": data}
            blocks.append({"type": "image", "source": source})
        content = blocks
    # The CLI does not route on session_id; it keeps its own.
    message: JsonDict = {
        "type": "user",
        "message": {"role": "user", "content": content},
        "parent_tool_use_id": None,
        "session_id": "",
    }
    if message_id:
        message["uuid"] = message_id
    return message


def control_request(request_id: str, subtype: str, **fields: Any) -> JsonDict:
    return {
        "type": "control_request",
        "request_id": request_id,
        "request": {"subtype": subtype, **fields},
    }


def initialize_request(request_id: str) -> JsonDict:
    return control_request(request_id, "initialize", hooks=None)


def interrupt_request(request_id: str) -> JsonDict:
    return control_request(request_id, "interrupt")


def set_permission_mode_request(request_id: str, mode: str) -> JsonDict:
    return control_request(request_id, "set_permission_mode", mode=mode)


def set_model_request(request_id: str, model: str) -> JsonDict:
    return control_request(request_id, "set_model", model=model)


def rewind_files_request(request_id: str, message_id: str, *, dry_run: bool) -> JsonDict:
    fields: dict[str, Any] = {"user_message_id": message_id}
    if dry_run:
        fields["dry_run"] = True
    return control_request(request_id, "rewind_files", **fields)


def control_success(request_id: str, response: JsonDict | None = None) -> JsonDict:
    return {
        "type": "control_response",
        "response": {"subtype": "success", "request_id": request_id, "response": response or {}},
    }


def control_error(request_id: str, error: str) -> JsonDict:
    return {
        "type": "control_response",
        "response": {"subtype": "error", "request_id": request_id, "error": error},
    }


def allow_response(
    request_id: str, updated_input: JsonDict, updated_permissions: list[JsonDict] | None = None
) -> JsonDict:
    # updatedInput is always sent, unchanged input included, as the SDK does.
    body: JsonDict = {"behavior": "allow", "updatedInput": updated_input}
    if updated_permissions:
        body["updatedPermissions"] = updated_permissions
    return control_success(request_id, body)


def deny_response(request_id: str, message: str, *, interrupt: bool = False) -> JsonDict:
    body: JsonDict = {"behavior": "deny", "message": message}
    if interrupt:
        body["interrupt"] = True
    return control_success(request_id, body)


def mcp_config(c: BrainConfig) -> str:
    """The profile's MCP servers as the content of the file ``--mcp-config`` names."""
    return json.dumps({"mcpServers": c.mcp_servers})


# -- tool presentation ---------------------------------------------------------------
def tool_kind(tool: str) -> str:
    return _TOOL_KINDS.get(tool, "other")


def tool_title(tool: str, tool_input: JsonDict) -> str:
    """A short human title: the command, path, pattern or URL the tool works on."""
    for key in _TITLE_KEYS:
        value = tool_input.get(key)
        if isinstance(value, str) and value.strip():
            return shorten(value)
    return tool


def shorten(text: str) -> str:
    lines = text.strip().splitlines()
    first = lines[0] if lines else ""
    if len(first) > _TITLE_CHARS or len(lines) > 1:
        return first[:_TITLE_CHARS].rstrip() + "…"
    return first


def command_line(
    c: BrainConfig, executable: str, session_id: str, mcp_file: str | None = None
) -> list[str]:
    """The command line of a session's ``claude`` process (``session_id`` pins a new one).

    The profile's MCP servers are named by the path of the file holding them
    (``mcp_file``, see ``mcp_config``), never written out here: their env values and
    headers are secrets, and a command line is readable by every local user.
    """
    argv = [*(c.command or (executable,))]
    argv += ["--output-format", "stream-json", "--input-format", "stream-json", "--verbose"]
    argv += ["--include-partial-messages", "--permission-prompt-tool", "stdio"]
    # Echoes each user message with its uuid; with file checkpointing on (see
    # claude.CHECKPOINT_ENV) that uuid is what rewind_files restores to.
    argv.append("--replay-user-messages")
    argv += ["--permission-mode", c.permission_mode]
    if c.model:
        argv += ["--model", c.model]
    if c.reasoning_effort:
        argv += ["--effort", c.reasoning_effort]
    if c.allowed_tools:
        argv += ["--allowedTools", ",".join(c.allowed_tools)]
    if c.disallowed_tools:
        argv += ["--disallowedTools", ",".join(c.disallowed_tools)]
    if mcp_file is not None:
        argv += ["--mcp-config", mcp_file, "--strict-mcp-config"]
    # Equals form: the CLI declares these with optional values (see the SDK's argv).
    if c.backend_session_id:
        argv.append(f"--resume={c.backend_session_id}")
        if c.fork:
            argv.append("--fork-session")
    else:
        argv.append(f"--session-id={session_id}")
    return argv
