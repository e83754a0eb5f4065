"""The client half of ACP: what an agent may ask of Angelia, and how we answer.

``AcpClient`` is handed to the SDK's connection. It is a plain class on purpose, not a
subclass of ``acp.Client``: the Protocol's empty stubs would be found as handlers and
answer ``null`` to methods we never implemented (python-sdk 0.12.1, see the ACP client
reference §6.5.1), while a missing method makes the SDK answer -32601.

The agent's file requests are served only inside the session's working directory;
everything else (session updates, permission questions, refusals) goes to the brain
through ``ClientHost``. ``ProcessTransport`` lets the SDK speak over our own
``AgentProcess`` so the process-group kill, death signal and stderr tail stay ours.
"""

from __future__ import annotations

import asyncio
import logging
import os
import shutil
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NoReturn, Protocol, TypeAlias

from acp import RequestError
from acp.schema import (
    AcpMcpServer,
    AllowedOutcome,
    DeniedOutcome,
    EnvVariable,
    HttpHeader,
    HttpMcpServer,
    McpCapabilities,
    McpServerStdio,
    ReadTextFileResponse,
    RequestPermissionResponse,
    SseMcpServer,
    ToolCallUpdate,
    WriteTextFileResponse,
)
from acp.schema import PermissionOption as AcpPermissionOption

from app.brains.acp.updates import SessionUpdate
from app.brains.base import PermissionAnswer
from app.brains.events import PermissionChoice, PermissionOption
from app.errors import BrainStartError
from app.transport import AgentProcess, ProcessNotRunningError

log = logging.getLogger(__name__)

__all__ = [
    "CANCELLED",
    "AcpClient",
    "ClientHost",
    "McpServer",
    "OpenQuestions",
    "ProcessTransport",
    "acp_mcp_servers",
    "app_options",
    "permission_response",
]

# The SDK's own union (its ``acp`` kind is unstable and never produced here).
McpServer: TypeAlias = HttpMcpServer | SseMcpServer | AcpMcpServer | McpServerStdio

_CHOICES: dict[str, PermissionChoice] = {
    "allow_once": "allow_once",
    "allow_always": "allow_always",
    "reject_once": "deny",
    "reject_always": "deny",
}
# Which option kinds answer each app decision, best first.
_PREFERRED: dict[str, tuple[str, ...]] = {
    "allow_once": ("allow_once", "allow_always"),
    "allow_always": ("allow_always", "allow_once"),
    "deny": ("reject_once", "reject_always"),
    "deny_stop": ("reject_once", "reject_always"),
}


class ClientHost(Protocol):
    """What ``AcpClient`` needs from the brain that owns it."""

    @property
    def session_id(self) -> str | None: ...

    def on_session_update(self, session_id: str, update: SessionUpdate) -> None: ...

    async def on_permission_request(
        self, session_id: str, tool_call: ToolCallUpdate, options: Sequence[AcpPermissionOption]
    ) -> RequestPermissionResponse: ...

    def on_refused(self, message: str) -> None: ...

    def on_extension(self, method: str, params: dict[str, Any]) -> None: ...


class AcpClient:
    """The handlers the SDK routes agent → client requests and notifications to."""

    def __init__(self, host: ClientHost, cwd: str) -> None:
        self._host = host
        self._root = Path(cwd).resolve()

    async def session_update(self, session_id: str, update: SessionUpdate, **_: Any) -> None:
        self._host.on_session_update(session_id, update)

    async def ext_notification(self, method: str, params: dict[str, Any]) -> None:
        # An agent's own notifications (``_<vendor>/...``, the underscore already gone);
        # only a brain that knows its agent reads them.
        self._host.on_extension(method, params)

    async def request_permission(
        self,
        session_id: str,
        tool_call: ToolCallUpdate,
        options: list[AcpPermissionOption],
        **_: Any,
    ) -> RequestPermissionResponse:
        return await self._host.on_permission_request(session_id, tool_call, options)

    async def read_text_file(
        self,
        session_id: str,
        path: str,
        line: int | None = None,
        limit: int | None = None,
        **_: Any,
    ) -> ReadTextFileResponse:
        target = self._inside(session_id, path, "read")
        try:
            text = await asyncio.to_thread(target.read_text, encoding="utf-8")
        except FileNotFoundError:
            raise RequestError.resource_not_found(path) from None
        except (OSError, UnicodeDecodeError) as exc:
            raise RequestError(-32603, f"Cannot read {path}: {exc}", {"path": path}) from None
        if line is not None or limit is not None:
            lines = text.splitlines(keepends=True)
            start = max((line or 1) - 1, 0)
            text = "".join(lines[start : None if limit is None else start + max(limit, 0)])
        return ReadTextFileResponse(content=text)

    async def write_text_file(
        self, session_id: str, path: str, content: str, **_: Any
    ) -> WriteTextFileResponse:
        target = self._inside(session_id, path, "write")
        try:
            await asyncio.to_thread(_write, target, content)
        except OSError as exc:
            raise RequestError(-32603, f"Cannot write {path}: {exc}", {"path": path}) from None
        return WriteTextFileResponse()

    # Terminals are not advertised; these answer -32601 instead of the SDK's silent
    # ``null`` for optional routes without a handler.
    async def create_terminal(self, **_: Any) -> NoReturn:
        raise RequestError.method_not_found("terminal/create")

    async def terminal_output(self, **_: Any) -> NoReturn:
        raise RequestError.method_not_found("terminal/output")

    async def wait_for_terminal_exit(self, **_: Any) -> NoReturn:
        raise RequestError.method_not_found("terminal/wait_for_exit")

    async def kill_terminal(self, **_: Any) -> NoReturn:
        raise RequestError.method_not_found("terminal/kill")

    async def release_terminal(self, **_: Any) -> NoReturn:
        raise RequestError.method_not_found("terminal/release")

    def _inside(self, session_id: str, path: str, verb: str) -> Path:
        """``path`` with symlinks and ``..`` resolved, if that is inside the cwd."""
        if session_id != self._host.session_id:
            raise RequestError.invalid_params({"sessionId": session_id, "reason": "unknown"})
        reason = ""
        target = self._root
        if not os.path.isabs(path):
            reason = "the path is not absolute"
        else:
            try:
                target = Path(path).resolve()
            except (OSError, ValueError, RuntimeError) as exc:
                reason = f"the path cannot be resolved ({exc})"
            else:
                if target != self._root and self._root not in target.parents:
                    reason = f"it is outside the session's working directory {self._root}"
        if not reason:
            return target
        message = f"Refused to {verb} {path}: {reason}."
        self._host.on_refused(message)
        raise RequestError(-32602, message, {"path": path})


def _write(target: Path, content: str) -> None:
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(content, encoding="utf-8")


class ProcessTransport:
    """An ``acp`` message transport over an ``AgentProcess``'s stdin/stdout.

    Framing stays ours (lines of any size, non-JSON noise skipped), so does the
    process. ``eof`` is set once stdout has ended and every message before it has
    been handed to the connection.
    """

    def __init__(
        self, process: AgentProcess, room: Callable[[], Awaitable[None]] | None = None
    ) -> None:
        self._process = process
        # Awaited before each message: the brain's way to stop reading a flood it holds.
        self._room = room
        self._messages: AsyncIterator[dict[str, Any]] | None = None
        self.eof = asyncio.Event()

    async def send(self, message: dict[str, Any]) -> None:
        try:
            await self._process.write_json(message)
        except ProcessNotRunningError as exc:
            raise ConnectionError(exc.message) from exc

    async def receive(self) -> dict[str, Any] | None:
        if self._messages is None:
            self._messages = self._process.messages()
        if self._room is not None:
            await self._room()
        try:
            return await anext(self._messages)
        except StopAsyncIteration:
            pass
        except Exception:
            log.exception("reading from %s failed", self._process.name)
        self.eof.set()
        return None

    async def close(self) -> None:
        # The brain owns the process and closes it itself, gracefully.
        return None


# -- permissions ----------------------------------------------------------------------------
CANCELLED = RequestPermissionResponse(outcome=DeniedOutcome(outcome="cancelled"))


@dataclass
class _Question:
    options: tuple[AcpPermissionOption, ...]
    future: asyncio.Future[RequestPermissionResponse]


class OpenQuestions:
    """The agent's unanswered ``session/request_permission`` calls, by our own ids.

    Each is answered exactly once: by ``answer``, by ``cancel_all`` (a cancelled turn
    must answer every open question ``cancelled``), or never if the connection drops
    first, which ``withdraw`` tells the asker.
    """

    def __init__(self) -> None:
        self._open: dict[str, _Question] = {}

    def open(
        self, options: Sequence[AcpPermissionOption]
    ) -> tuple[str, asyncio.Future[RequestPermissionResponse]]:
        request_id = uuid.uuid4().hex
        future = asyncio.get_running_loop().create_future()
        self._open[request_id] = _Question(tuple(options), future)
        return request_id, future

    def answer(self, request_id: str, answer: PermissionAnswer) -> bool:
        """Resolve one question; False if it is unknown or already answered."""
        question = self._open.pop(request_id, None)
        if question is None:
            return False
        if not question.future.done():
            question.future.set_result(permission_response(question.options, answer))
        return True

    def withdraw(self, request_id: str) -> bool:
        """Forget a question its asker stopped waiting for; True if it was still open."""
        return self._open.pop(request_id, None) is not None

    def cancel_all(self) -> list[str]:
        """Answer every open question ``cancelled``; returns their ids."""
        questions, self._open = self._open, {}
        for question in questions.values():
            if not question.future.done():
                question.future.set_result(CANCELLED)
        return list(questions)


def app_options(options: Sequence[AcpPermissionOption]) -> tuple[PermissionOption, ...]:
    """The agent's options in its own order, each with its app-level meaning."""
    return tuple(
        PermissionOption(option_id=o.option_id, label=o.name, choice=_CHOICES[o.kind])
        for o in options
        if o.kind in _CHOICES
    )


def permission_response(
    options: Sequence[AcpPermissionOption], answer: PermissionAnswer
) -> RequestPermissionResponse:
    """The ``session/request_permission`` result for an app decision.

    An explicit ``option_id`` the agent offered wins. Otherwise the option of the
    matching kind is chosen, falling back to its sibling (once ↔ always). With no
    fitting option the answer is ``cancelled``, never a guessed allow.
    """
    offered = {o.option_id for o in options}
    chosen: str | None = None
    if answer.choice != "cancelled":
        if answer.option_id and answer.option_id in offered:
            chosen = answer.option_id
        else:
            for kind in _PREFERRED.get(answer.choice, ()):
                chosen = next((o.option_id for o in options if o.kind == kind), None)
                if chosen is not None:
                    break
    if chosen is None:
        return CANCELLED
    return RequestPermissionResponse(outcome=AllowedOutcome(outcome="selected", option_id=chosen))


# -- MCP servers ------------------------------------------------------------------------------
def acp_mcp_servers(
    servers: Mapping[str, Any],
    capabilities: McpCapabilities | None,
    *,
    agent: str,
    path: str | None = None,
) -> list[McpServer]:
    """Convert a profile's ``.mcp.json``-shaped servers into ``session/new`` entries.

    ``{name: {command, args, env}}`` becomes a stdio entry with the command resolved on
    ``path`` (ACP wants an absolute path); ``{type: http|sse, url, headers}`` is only
    passed to an agent whose ``mcpCapabilities`` allow it.

    Raises:
        BrainStartError: A server is malformed or of a kind the agent cannot use.
    """
    result: list[McpServer] = []
    for name, spec in servers.items():
        if not isinstance(spec, Mapping):
            raise BrainStartError(f"MCP server {name!r} in the profile is not an object.")
        kind = str(spec.get("type") or "stdio")
        if kind == "stdio":
            command = spec.get("command")
            if not isinstance(command, str) or not command:
                raise BrainStartError(f"MCP server {name!r} in the profile has no command.")
            if not os.path.isabs(command):
                command = shutil.which(command, path=path) or command
            result.append(
                McpServerStdio(
                    name=name,
                    command=command,
                    args=[str(arg) for arg in spec.get("args") or []],
                    env=[EnvVariable(name=k, value=str(v)) for k, v in _pairs(spec.get("env"))],
                )
            )
        elif kind in ("http", "sse"):
            if not getattr(capabilities, kind, False):
                raise BrainStartError(
                    f"{agent} cannot use the {kind} MCP server {name!r}: it only accepts "
                    "stdio MCP servers. Remove it from the profile or run it over stdio."
                )
            url = spec.get("url")
            if not isinstance(url, str) or not url:
                raise BrainStartError(f"MCP server {name!r} in the profile has no url.")
            headers = [HttpHeader(name=k, value=str(v)) for k, v in _pairs(spec.get("headers"))]
            server_cls = HttpMcpServer if kind == "http" else SseMcpServer
            result.append(server_cls(type=kind, name=name, url=url, headers=headers))
        else:
            raise BrainStartError(
                f"MCP server {name!r} in the profile has type {kind!r}; "
                "only stdio, http and sse servers exist."
            )
    return result


def _pairs(value: Any) -> list[tuple[str, Any]]:
    return [(str(k), v) for k, v in value.items()] if isinstance(value, Mapping) else []
