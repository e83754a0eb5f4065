"""A stand-in ACP agent on the SDK's agent side (``acp.run_agent``), scripted by a scenario.

Run as ``python fake_acp_agent.py [argv...]``. With ``--as-grok`` first it plays ``grok``
and checks the rest of its argv the way grok parses it
(``[--permission-mode X] agent [-m M] [--reasoning-effort E] [--always-approve] stdio``),
exiting 2 on anything else. The scenario is JSON from ``$FAKE_ACP_SCENARIO``:

    {"load_session": false, "resume": false, "mcp_http": false, "mcp_sse": false,
     "protocol_version": 1, "auth_required": false, "session_id": "sess-1",
     "modes": {"current": "auto", "available": ["auto", "default", ...]} | null,
     "mode_config": false,        modes as a config option (category "mode") instead
     "config_options": [...],     more config options, raw ACP dicts
     "echo_mode": true,           send current_mode_update after a mode switch
     "unknown_sessions": false,   load/resume fail with resource-not-found
     "stderr": "...",             written to stderr at start
     "early": [update, ...],      sent before the session/new answer
     "prompt_capabilities": {...}, promptCapabilities advertised (raw ACP dict)
     "history": [update, ...],    replayed by session/load
     "turns": [[step, ...], ...]}

Turn *n* is played for the *n*-th prompt (beyond the scenario: an echo). Updates use a
shorthand, ``{"text": t, "message_id": m}``, ``{"user": t}``, ``{"thought": t}``,
``{"commands": [names]}``, ``{"mode": id}``, ``{"title": t}``, ``{"plan": [entry]}``,
``{"usage": {"used", "size", "cost"}}``, ``{"tool": {...}}``, ``{"tool_update": {...}}``
(tool fields: id, title, kind, status, input, output, content, diff {path, old, new},
locations), ``{"config": [options]}`` or ``{"raw": <ACP update>}``. Steps:

    {"text": "hi", "chunks": 2, "message_id": null}   message chunks
    {"thought": "..."}                                a thought chunk
    {"update": <update>}                              any update
    {"tool": {...}, "permission": {"options": [[id, name, kind], ...]} | true,
     "result": {"content": "ran", ...}}               tool call, question, outcome
    {"read": path, "line": 1, "limit": 2} / {"write": path, "content": "..."}
    {"noise": "text"}                                 a non-JSON stdout line
    {"big_mb": 5}                                     one message chunk that large
    {"sleep": 30, "late": [update, ...]}              cancellable pause; after a cancel,
                                                      answer cancelled then send "late"
                                                      ("deaf": true ignores the cancel)
    {"stop_reason": "refusal"}                        how the turn ends (default end_turn)
    {"error": {"code": -32000, "message": "..."}}     answer the prompt with this error
    {"crash": 3, "stderr": "...", "stderr_kb": 0}     exit mid-turn

Every incoming JSON-RPC message is logged to ``$FAKE_ACP_LOG`` as ``{"in": message}``
after a first ``{"argv": [...], "cwd": ..., "env": {...}, "pid": ..., "mcp_files": {...}}``
line (``mcp_files``: each MCP config file it was pointed at, its content and modes); the
outcome of each fs step is logged as ``{"fs": {...}}``, and the MCP config file a request
opening a session names in ``_meta`` (as Claude Code's ACP adapter takes one) as
``{"mcp_file": {...}}``. ``FakeAcpFiles`` (for tests)
writes the scenario, builds brain configs for it, and reads the log back.
"""

from __future__ import annotations

import asyncio
import json
import os
import stat
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from acp import RequestError, run_agent, stdio_streams
from acp.connection import StreamDirection, StreamEvent
from acp.schema import (
    AgentCapabilities,
    Implementation,
    InitializeResponse,
    LoadSessionResponse,
    McpCapabilities,
    NewSessionResponse,
    PermissionOption,
    PromptResponse,
    ResumeSessionResponse,
    SessionCapabilities,
    SessionModeState,
    SessionNotification,
    SessionResumeCapabilities,
    SetSessionConfigOptionResponse,
    SetSessionModeResponse,
    ToolCallUpdate,
)

if TYPE_CHECKING:
    from app.brains.base import BrainConfig

FAKE_ACP_AGENT = Path(__file__).resolve()
DEFAULT_OPTIONS = [
    ["allow-once", "Allow once", "allow_once"],
    ["allow-always", "Always allow", "allow_always"],
    ["reject-once", "Reject", "reject_once"],
]


def grok_args(argv: list[str]) -> dict[str, Any]:
    """Parse grok's command line; raises ValueError on anything grok would refuse."""
    parsed: dict[str, Any] = {"mode": None, "model": None, "effort": None, "always": False}
    rest = list(argv)
    if rest[:1] == ["--permission-mode"]:
        parsed["mode"] = rest[1]
        rest = rest[2:]
    if rest[:1] != ["agent"] or rest[-1:] != ["stdio"]:
        raise ValueError(f"expected [--permission-mode X] agent ... stdio, got {argv}")
    rest = rest[1:-1]
    while rest:
        flag = rest.pop(0)
        if flag in ("-m", "--reasoning-effort") and rest:
            parsed["model" if flag == "-m" else "effort"] = rest.pop(0)
        elif flag == "--always-approve":
            parsed["always"] = True
        else:
            raise ValueError(f"unexpected {flag!r} in {argv}")
    return parsed


def _tool(spec: dict[str, Any], kind: str) -> dict[str, Any]:
    update: dict[str, Any] = {"sessionUpdate": kind, "toolCallId": spec["id"]}
    for key, wire in (("title", "title"), ("kind", "kind"), ("status", "status")):
        if key in spec:
            update[wire] = spec[key]
    if "input" in spec:
        update["rawInput"] = spec["input"]
    if "output" in spec:
        update["rawOutput"] = spec["output"]
    content: list[dict[str, Any]] = []
    if "content" in spec:
        content.append({"type": "content", "content": {"type": "text", "text": spec["content"]}})
    if "diff" in spec:
        d = spec["diff"]
        content.append(
            {"type": "diff", "path": d["path"], "oldText": d.get("old"), "newText": d["new"]}
        )
    if content:
        update["content"] = content
    if "locations" in spec:
        update["locations"] = [{"path": p} for p in spec["locations"]]
    if kind == "tool_call":
        update.setdefault("title", spec.get("title", spec["id"]))
    return update


def raw_update(short: dict[str, Any]) -> dict[str, Any]:
    """The ACP update dict for one shorthand update."""
    if "raw" in short:
        return dict(short["raw"])
    if "text" in short or "user" in short or "thought" in short:
        kind, text = next(
            (k, short[s])
            for s, k in (
                ("text", "agent_message_chunk"),
                ("user", "user_message_chunk"),
                ("thought", "agent_thought_chunk"),
            )
            if s in short
        )
        update = {"sessionUpdate": kind, "content": {"type": "text", "text": text}}
        if short.get("message_id"):
            update["messageId"] = short["message_id"]
        return update
    if "commands" in short:
        commands = [{"name": n, "description": f"the {n} command"} for n in short["commands"]]
        return {"sessionUpdate": "available_commands_update", "availableCommands": commands}
    if "mode" in short:
        return {"sessionUpdate": "current_mode_update", "currentModeId": short["mode"]}
    if "title" in short:
        return {"sessionUpdate": "session_info_update", "title": short["title"]}
    if "plan" in short:
        return {"sessionUpdate": "plan", "entries": short["plan"]}
    if "usage" in short:
        u = short["usage"]
        update = {"sessionUpdate": "usage_update", "used": u["used"], "size": u["size"]}
        if "cost" in u:
            update["cost"] = {"amount": u["cost"], "currency": u.get("currency", "USD")}
        return update
    if "tool" in short:
        return _tool(short["tool"], "tool_call")
    if "tool_update" in short:
        return _tool(short["tool_update"], "tool_call_update")
    if "config" in short:
        return {"sessionUpdate": "config_option_update", "configOptions": short["config"]}
    raise ValueError(f"unknown update shorthand {short}")


class FakeAgent:
    def __init__(self, scenario: dict[str, Any], writer: asyncio.StreamWriter) -> None:
        self.s = scenario
        self.writer = writer
        self.conn: Any = None
        self.turn_no = 0
        self.cancelled = asyncio.Event()
        self.mode = (scenario.get("modes") or {}).get("current")
        self.extra_options: list[dict[str, Any]] = list(scenario.get("config_options", []))

    def on_connect(self, conn: Any) -> None:
        self.conn = conn

    # -- helpers -------------------------------------------------------------------------
    async def send(self, session_id: str, short: dict[str, Any]) -> None:
        update = SessionNotification.model_validate(
            {"sessionId": session_id, "update": raw_update(short)}
        ).update
        await self.conn.session_update(session_id=session_id, update=update)

    def log(self, entry: dict[str, Any]) -> None:
        if path := os.environ.get("FAKE_ACP_LOG"):
            with open(path, "a") as f:
                f.write(json.dumps(entry) + "\n")

    def mode_state(self) -> SessionModeState | None:
        modes = self.s.get("modes")
        if not modes or self.s.get("mode_config"):
            return None
        return SessionModeState.model_validate(
            {
                "currentModeId": self.mode,
                "availableModes": [{"id": m, "name": m.title()} for m in modes["available"]],
            }
        )

    def config_options(self) -> list[dict[str, Any]]:
        options = list(self.extra_options)
        modes = self.s.get("modes")
        if modes and self.s.get("mode_config"):
            choices = [{"value": m, "name": m.title()} for m in modes["available"]]
            options.insert(
                0,
                {
                    "id": "mode",
                    "name": "Mode",
                    "category": "mode",
                    "type": "select",
                    "currentValue": self.mode,
                    "options": choices,
                },
            )
        return options

    # -- agent methods ---------------------------------------------------------------------
    async def initialize(self, protocol_version: int, **_: Any) -> InitializeResponse:
        caps: dict[str, Any] = {
            "loadSession": bool(self.s.get("load_session")),
            "mcpCapabilities": McpCapabilities(
                http=bool(self.s.get("mcp_http")), sse=bool(self.s.get("mcp_sse"))
            ),
        }
        if self.s.get("resume"):
            caps["sessionCapabilities"] = SessionCapabilities(resume=SessionResumeCapabilities())
        if prompt := self.s.get("prompt_capabilities"):
            # e.g. {"embeddedContext": true, "image": true}, as the agent advertises them.
            caps["promptCapabilities"] = prompt
        return InitializeResponse(
            protocol_version=self.s.get("protocol_version", protocol_version),
            agent_capabilities=AgentCapabilities(**caps),
            auth_methods=[{"id": "fake-login", "name": "fake login"}],
            agent_info=Implementation(name="fake-acp", version="0.0.1"),
        )

    async def new_session(self, cwd: str, **_: Any) -> NewSessionResponse:
        if self.s.get("auth_required"):
            raise RequestError.auth_required()
        session_id = self.s.get("session_id", "sess-1")
        for short in self.s.get("early", []):
            await self.send(session_id, short)
        return NewSessionResponse(
            session_id=session_id,
            modes=self.mode_state(),
            config_options=self.config_options() or None,
        )

    async def load_session(self, cwd: str, session_id: str, **_: Any) -> LoadSessionResponse:
        if self.s.get("unknown_sessions"):
            raise RequestError.resource_not_found(session_id)
        for short in self.s.get("history", []):
            await self.send(session_id, short)
        return LoadSessionResponse(
            modes=self.mode_state(), config_options=self.config_options() or None
        )

    async def resume_session(self, cwd: str, session_id: str, **_: Any) -> ResumeSessionResponse:
        if self.s.get("unknown_sessions"):
            raise RequestError.resource_not_found(session_id)
        return ResumeSessionResponse(
            modes=self.mode_state(), config_options=self.config_options() or None
        )

    async def set_session_mode(
        self, session_id: str, mode_id: str, **_: Any
    ) -> SetSessionModeResponse:
        available = (self.s.get("modes") or {}).get("available", [])
        if mode_id not in available:
            raise RequestError.invalid_params({"modeId": mode_id})
        self.mode = mode_id
        if self.s.get("echo_mode", True):
            await self.send(session_id, {"mode": mode_id})
        return SetSessionModeResponse()

    async def set_config_option(
        self, config_id: str, session_id: str, value: str | bool, **_: Any
    ) -> SetSessionConfigOptionResponse:
        if config_id == "mode":
            self.mode = value
        else:
            for option in self.extra_options:
                if option["id"] == config_id:
                    option["currentValue"] = value
        return SetSessionConfigOptionResponse.model_validate(
            {"configOptions": self.config_options()}
        )

    async def cancel(self, session_id: str, **_: Any) -> None:
        self.cancelled.set()

    async def prompt(self, prompt: list[Any], session_id: str, **_: Any) -> PromptResponse:
        self.cancelled.clear()
        turns = self.s.get("turns", [])
        steps = turns[self.turn_no] if self.turn_no < len(turns) else None
        self.turn_no += 1
        if steps is None:
            text = "".join(getattr(block, "text", "") for block in prompt)
            steps = [{"text": f"echo: {text}"}]
        stop_reason = "end_turn"
        for step in steps:
            outcome = await self.step(session_id, step)
            if outcome is not None:
                stop_reason = outcome
                break
        return PromptResponse(stop_reason=stop_reason)

    # -- steps ---------------------------------------------------------------------------
    async def step(self, session_id: str, step: dict[str, Any]) -> str | None:
        """Play one step; a string ends the turn with that stop reason."""
        if self.cancelled.is_set():
            return "cancelled"
        if "text" in step and "update" not in step:
            text, chunks = step["text"], max(int(step.get("chunks", 1)), 1)
            size = max(1, -(-len(text) // chunks))
            for i in range(0, len(text), size):
                short = {"text": text[i : i + size], "message_id": step.get("message_id")}
                await self.send(session_id, short)
        elif "thought" in step:
            await self.send(session_id, {"thought": step["thought"]})
        elif "update" in step:
            await self.send(session_id, step["update"])
        elif "tool" in step:
            return await self.tool(session_id, step)
        elif "read" in step or "write" in step:
            await self.fs(session_id, step)
        elif "noise" in step:
            self.writer.write(step["noise"].encode() + b"\n")
            await self.writer.drain()
        elif "big_mb" in step:
            text = "x" * int(float(step["big_mb"]) * 1024 * 1024)
            await self.send(session_id, {"text": text, "message_id": "big"})
        elif "sleep" in step:
            if step.get("deaf"):
                # An agent that ignores session/cancel.
                await asyncio.sleep(float(step["sleep"]))
                return None
            try:
                await asyncio.wait_for(self.cancelled.wait(), float(step["sleep"]))
            except TimeoutError:
                return None
            if step.get("late"):
                asyncio.get_running_loop().call_later(
                    0.05, lambda: asyncio.ensure_future(self.late(session_id, step["late"]))
                )
            return "cancelled"
        elif "stop_reason" in step:
            return str(step["stop_reason"])
        elif "error" in step:
            raise RequestError(step["error"]["code"], step["error"]["message"])
        elif "crash" in step or "stderr" in step or "stderr_kb" in step:
            if step.get("stderr"):
                sys.stderr.write(step["stderr"] + "\n")
            for _ in range(int(step.get("stderr_kb", 0))):
                sys.stderr.write("e" * 1023 + "\n")
            sys.stderr.flush()
            if "crash" in step:
                os._exit(int(step["crash"]))
        return None

    async def late(self, session_id: str, updates: list[dict[str, Any]]) -> None:
        for short in updates:
            await self.send(session_id, short)

    async def tool(self, session_id: str, step: dict[str, Any]) -> str | None:
        spec = dict(step["tool"])
        await self.send(session_id, {"tool": {**spec, "status": "pending"}})
        allowed = True
        if step.get("permission"):
            permission = step["permission"] if isinstance(step["permission"], dict) else {}
            options = permission.get("options", DEFAULT_OPTIONS)
            response = await self.conn.request_permission(
                session_id=session_id,
                tool_call=ToolCallUpdate.model_validate(
                    {
                        "toolCallId": spec["id"],
                        "title": spec.get("title"),
                        "kind": spec.get("kind"),
                        "rawInput": spec.get("input"),
                    }
                ),
                options=[
                    PermissionOption.model_validate({"optionId": i, "name": n, "kind": k})
                    for i, n, k in options
                ],
            )
            outcome = response.outcome
            self.log({"permission": outcome.model_dump(mode="json", by_alias=True)})
            if outcome.outcome == "cancelled":
                await self.send(session_id, {"tool_update": {"id": spec["id"], "status": "failed"}})
                return "cancelled"
            kind = next(k for i, _, k in options if i == outcome.option_id)
            allowed = kind.startswith("allow")
        if allowed:
            result = {"status": "completed", "content": "ran", **step.get("result", {})}
        else:
            result = {"status": "failed", "content": "denied by the user"}
        await self.send(session_id, {"tool_update": {"id": spec["id"], **result}})
        return None

    async def fs(self, session_id: str, step: dict[str, Any]) -> None:
        try:
            if "read" in step:
                response = await self.conn.read_text_file(
                    session_id=session_id,
                    path=step["read"],
                    line=step.get("line"),
                    limit=step.get("limit"),
                )
                entry: dict[str, Any] = {"read": step["read"], "content": response.content}
            else:
                await self.conn.write_text_file(
                    session_id=session_id, path=step["write"], content=step["content"]
                )
                entry = {"write": step["write"], "ok": True}
        except RequestError as exc:
            entry = {
                "path": step.get("read") or step.get("write"),
                "error": exc.code,
                "message": str(exc),
            }
        self.log({"fs": entry})


class FakeAcpFiles:
    """The scenario the fake plays and the log it writes, under one test's ``root``."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.scenario_path = root / "acp_scenario.json"
        self.log_path = root / "acp_log.jsonl"
        self.cwd = root / "project"
        self.cwd.mkdir(exist_ok=True)
        self.scenario()

    def scenario(self, *turns: list[dict[str, Any]], **extra: Any) -> None:
        self.scenario_path.write_text(json.dumps({"turns": list(turns), **extra}))

    def env(self, **extra: str) -> dict[str, str]:
        return {
            "FAKE_ACP_SCENARIO": str(self.scenario_path),
            "FAKE_ACP_LOG": str(self.log_path),
            **extra,
        }

    @property
    def command(self) -> tuple[str, ...]:
        return (sys.executable, str(FAKE_ACP_AGENT))

    def profile(self, **fields: Any) -> dict[str, Any]:
        """The API body of an ``acp`` profile running this fake (``fields`` added)."""
        body: dict[str, Any] = {
            "name": "acp",
            "backend": "acp",
            "cwd": str(self.cwd),
            "command": list(self.command),
            "env": self.env(),
        }
        return {**body, **fields}

    def config(self, **overrides: Any) -> BrainConfig:
        """A brain config running this fake (``command``/``env`` overridable)."""
        from app.brains.base import BrainConfig

        fields: dict[str, Any] = {
            "session_id": "chat-1",
            "cwd": str(self.cwd),
            "command": self.command,
            "env": self.env(**overrides.pop("env", {})),
        }
        fields.update(overrides)
        return BrainConfig(**fields)

    def grok_bin(self) -> Path:
        """A directory holding an executable ``grok`` that runs this fake as grok."""
        bin_dir = self.root / "bin"
        bin_dir.mkdir(exist_ok=True)
        grok = bin_dir / "grok"
        grok.write_text(f'#!/bin/sh\nexec "{sys.executable}" "{FAKE_ACP_AGENT}" --as-grok "$@"\n')
        grok.chmod(grok.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
        return bin_dir

    def entries(self) -> list[dict[str, Any]]:
        if not self.log_path.exists():
            return []
        return [json.loads(line) for line in self.log_path.read_text().splitlines()]

    def starts(self) -> list[dict[str, Any]]:
        """One entry per process the fake ran: argv, grok's parse, cwd, env, pid."""
        return [e for e in self.entries() if "argv" in e]

    def incoming(self) -> list[dict[str, Any]]:
        return [e["in"] for e in self.entries() if "in" in e]

    def requests(self, method: str) -> list[dict[str, Any]]:
        """The params of every ``method`` request or notification the fake received."""
        return [m.get("params") or {} for m in self.incoming() if m.get("method") == method]

    def methods(self) -> list[str]:
        return [m["method"] for m in self.incoming() if "method" in m]

    def permission_outcomes(self) -> list[dict[str, Any]]:
        return [e["permission"] for e in self.entries() if "permission" in e]

    def answers(self) -> list[dict[str, Any]]:
        """Every response the client sent to the fake's own requests."""
        return [m for m in self.incoming() if "method" not in m]

    def fs(self) -> list[dict[str, Any]]:
        return [e["fs"] for e in self.entries() if "fs" in e]


def mcp_files(argv: list[str]) -> dict[str, Any]:
    """The MCP config files the agent was pointed at, read at start as the real ones do:
    copilot's ``--additional-mcp-config @<path>``, pi's ``$ANGELIA_PI_MCP_SERVERS``."""
    named = [b[1:] for a, b in zip(argv, argv[1:], strict=False) if a == "--additional-mcp-config"]
    if pi := os.environ.get("ANGELIA_PI_MCP_SERVERS"):
        named.append(pi)
    return {path: config_file(Path(path)) for path in named}


def meta_mcp_file(message: dict[str, Any]) -> str | None:
    """The MCP config file a request that opens a session names as Claude Code's ACP
    adapter reads it (``_meta.claudeCode.options.extraArgs["mcp-config"]``), if any."""
    if message.get("method") not in ("session/new", "session/load", "session/resume"):
        return None
    meta = (message.get("params") or {}).get("_meta") or {}
    extra = meta.get("claudeCode", {}).get("options", {}).get("extraArgs", {})
    path = extra.get("mcp-config")
    return path if isinstance(path, str) else None


def config_file(path: Path) -> dict[str, Any]:
    """A config file's content and who may read it (its and its folder's modes)."""
    modes = {"mode": stat.S_IMODE(path.stat().st_mode)}
    modes["folder_mode"] = stat.S_IMODE(path.parent.stat().st_mode)
    return {"path": str(path), "content": json.loads(path.read_text()), **modes}


async def main(argv: list[str]) -> None:
    scenario: dict[str, Any] = {}
    if path := os.environ.get("FAKE_ACP_SCENARIO"):
        with open(path) as f:
            scenario = json.load(f)
    grok = None
    if argv[:1] == ["--as-grok"]:
        argv = argv[1:]
        try:
            grok = grok_args(argv)
        except ValueError as exc:
            sys.stderr.write(f"grok: {exc}\n")
            sys.stderr.flush()
            os._exit(2)
    reader, writer = await stdio_streams(limit=64 * 1024 * 1024)
    agent = FakeAgent(scenario, writer)
    keep = ("CLAUDECODE",)
    env = {k: v for k, v in os.environ.items() if k in keep or k.startswith(("FAKE_", "PROFILE_"))}
    start = {"argv": argv, "grok": grok, "cwd": os.getcwd(), "env": env, "pid": os.getpid()}
    agent.log({**start, "mcp_files": mcp_files(argv)})
    if scenario.get("stderr"):
        sys.stderr.write(scenario["stderr"] + "\n")
        sys.stderr.flush()

    def observe(event: StreamEvent) -> None:
        if event.direction is StreamDirection.INCOMING:
            agent.log({"in": event.message})
            if path := meta_mcp_file(event.message):
                agent.log({"mcp_file": config_file(Path(path))})

    await run_agent(agent, writer, reader, use_unstable_protocol=True, observers=[observe])


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1:]))
