"""A stand-in for the ``claude`` CLI that speaks stream-json and the control protocol.

Run as ``python fake_claude.py <claude flags>``. It understands the flags the app passes
(``--session-id=``, ``--resume=``, ``--fork-session``, ``--model``, ``--permission-mode``),
answers control requests, and plays a scenario read from ``$FAKE_CLAUDE_SCENARIO``:

    {"turns": [[step, ...], ...], "unknown_resume": false, "ignore_eof": false,
     "ignore_sigterm": false, "say_on_sigterm": null}

(a bare list of turns also works). ``"say_on_sigterm": "text"`` streams that text on each
SIGTERM and runs on, as Claude Code answers after its prompt was dropped. With
``--resume``, ``"unknown_resume": true`` fails at startup like an unknown session id
does; ``"on_message"`` fails on the first message.
``"rewind": {...}`` is merged into the answer to every ``rewind_files`` request
(``{"canRewind": true, "filesChanged": [], "insertions": 0, "deletions": 0}``).

Turn *n* is played for the *n*-th user message; user
messages beyond the scenario get an echo. Steps:

    {"text": "hello", "chunks": 3, "delay": 0}   streamed text, then the assistant block
    {"thinking": "..."}                           a thinking block
    {"tool": "Bash", "input": {...}, "permission": true, "cancel_after": null}
                                                  tool_use, optional can_use_tool round trip,
                                                  then a tool_result ("ran" on allow)
    {"control_request": "hook_callback"}          ask the host, wait for the reply
    {"mode": "acceptEdits"}                       system/status with a new permissionMode
    {"sleep": 0.5}                                interruptible pause
    {"until_file": "/path", "timeout": 30}        interruptible pause until that file exists,
                                                  so a test holds a turn open as long as it needs
    {"crash": 3, "stderr": "..."}                 write to stderr, exit with that code
    {"malformed": true}                           non-JSON and broken-JSON stdout lines
    {"big_line_mb": 10}                           an assistant text block that large
    {"stderr_kb": 300}                            that much stderr output
    {"emit": {...}}                               that object as one stdout line, as given
                                                  (e.g. a ``rate_limit_event``)
    {"text": ..., "usage": {"input_tokens": 9}}   that usage in the text's message_start
    {"text": ..., "progress": "/path"}            that file holds how many pieces are
                                                  written (every 500), then "all"
    {"compact": {"pre_tokens": 9, "post_tokens": 1}}
                                                  system/compact_boundary (trigger manual)

``"context_window": 200000`` makes every result carry ``modelUsage`` with that
``contextWindow`` for the model.

Every argv and stdin line is appended to ``$FAKE_CLAUDE_LOG`` as JSON lines:
``{"argv": [...], "cwd": ..., "env": {...}, "mcp_config": ...}`` first (``mcp_config``:
what ``--mcp-config`` gave, its file read at start with its modes), then
``{"stdin": <object>, "at": <time.time()>}``; each control request it sends is logged as
``{"asked": <subtype>, "request_id": ..., "at": ...}`` once written.
"""

from __future__ import annotations

import json
import os
import queue
import signal
import stat
import sys
import threading
import time
import uuid
from pathlib import Path
from typing import Any

VERSION = "2.1.332"
MODES = ("default", "acceptEdits", "plan", "bypassPermissions", "dontAsk", "auto")
EOF = object()
PROGRESS_EVERY = 500


def config_file(path: str) -> dict[str, Any]:
    """A config file's content and who may read it (its and its folder's modes)."""
    with open(path) as f:
        content = json.load(f)
    mode = stat.S_IMODE(os.stat(path).st_mode)
    folder_mode = stat.S_IMODE(os.stat(os.path.dirname(path)).st_mode)
    return {"path": path, "content": content, "mode": mode, "folder_mode": folder_mode}


class Interrupted(Exception):
    pass


def leave(code: int) -> None:
    # Not sys.exit: the stdin thread holds the buffer lock, and interpreter shutdown
    # would then abort the process instead of exiting with ``code``.
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


class FakeClaude:
    def __init__(self, argv: list[str]) -> None:
        self.argv = argv
        self.log_path = os.environ.get("FAKE_CLAUDE_LOG")
        scenario: Any = {}
        if path := os.environ.get("FAKE_CLAUDE_SCENARIO"):
            with open(path) as f:
                scenario = json.load(f)
        if isinstance(scenario, list):
            scenario = {"turns": scenario}
        self.scenario: dict[str, Any] = scenario
        self.turns: list[list[dict[str, Any]]] = scenario.get("turns", [])
        self.model = self.flag("--model") or "claude-fake-1"
        self.mode = self.flag("--permission-mode") or "default"
        self.resume = self.flag("--resume")
        self.session_id = self.resume or self.flag("--session-id") or str(uuid.uuid4())
        if self.resume and "--fork-session" in argv:
            self.session_id = str(uuid.uuid4())
        self.inbox: queue.Queue[Any] = queue.Queue()
        self.deferred: list[dict[str, Any]] = []
        self.responses: dict[str, dict[str, Any]] = {}
        self.turn_no = 0
        self.cost = 0.0
        self.counter = 0
        self.log_lock = threading.Lock()

    # -- plumbing ------------------------------------------------------------------
    def flag(self, name: str) -> str | None:
        for i, arg in enumerate(self.argv):
            if arg.startswith(name + "="):
                return arg.split("=", 1)[1]
            if arg == name and i + 1 < len(self.argv):
                return self.argv[i + 1]
        return None

    def mcp_config(self) -> Any:
        """What ``--mcp-config`` gave, read at start as Claude Code does: a JSON value,
        else the file it names (its content and its and its folder's modes)."""
        given = self.flag("--mcp-config")
        if given is None:
            return None
        if given.lstrip().startswith("{"):
            return {"content": json.loads(given)}
        return config_file(given)

    def log(self, entry: dict[str, Any]) -> None:
        if not self.log_path:
            return
        with self.log_lock, open(self.log_path, "a") as f:
            f.write(json.dumps(entry) + "\n")

    def out(self, obj: dict[str, Any]) -> None:
        sys.stdout.write(json.dumps(obj) + "\n")
        sys.stdout.flush()

    def next_id(self, prefix: str) -> str:
        self.counter += 1
        return f"{prefix}_{self.counter:04d}"

    def read_stdin(self) -> None:
        for raw in sys.stdin.buffer:
            text = raw.decode("utf-8", errors="replace").strip()
            if not text:
                continue
            try:
                obj = json.loads(text)
            except ValueError:
                self.log({"stdin_raw": text})
                continue
            self.log({"stdin": obj, "at": time.time()})
            self.inbox.put(obj)
        self.inbox.put(EOF)

    def take(self, timeout: float | None) -> Any:
        try:
            return self.inbox.get(timeout=timeout)
        except queue.Empty:
            return None

    # -- control requests from the host ------------------------------------------------
    def reply(self, request_id: str, response: dict[str, Any]) -> None:
        self.out(
            {
                "type": "control_response",
                "response": {"subtype": "success", "request_id": request_id, "response": response},
            }
        )

    def reply_error(self, request_id: str, error: str) -> None:
        self.out(
            {
                "type": "control_response",
                "response": {"subtype": "error", "request_id": request_id, "error": error},
            }
        )

    def handle(self, msg: Any, *, in_turn: bool) -> None:
        """Deal with one inbox item; raises Interrupted for an interrupt during a turn."""
        if msg is EOF:
            if self.scenario.get("ignore_eof"):
                time.sleep(3600)
            leave(0)
        kind = msg.get("type")
        if kind == "control_response":
            response = msg.get("response", {})
            self.responses[response.get("request_id", "")] = response
        elif kind == "user":
            self.deferred.append(msg)
        elif kind == "control_request":
            self.control(msg, in_turn=in_turn)

    def control(self, msg: dict[str, Any], *, in_turn: bool) -> None:
        request_id = msg.get("request_id", "")
        request = msg.get("request", {})
        subtype = request.get("subtype")
        if subtype == "initialize":
            self.reply(
                request_id,
                {
                    # Optional scenario key: [{name, description, argumentHint}], as the
                    # real CLI lists built-in and custom commands and skills here.
                    "commands": self.scenario.get("commands", []),
                    "pid": os.getpid(),
                    "claude_code_version": VERSION,
                    "current_permission_mode": self.mode,
                },
            )
        elif subtype == "interrupt":
            self.reply(request_id, {"still_queued": []})
            if in_turn:
                raise Interrupted()
        elif subtype == "set_permission_mode":
            mode = request.get("mode")
            if mode not in MODES:
                self.reply_error(request_id, f"must be one of {', '.join(sorted(MODES))}")
                return
            self.mode = mode
            self.reply(request_id, {"mode": mode})
            self.out(self.system("status", status=None, permissionMode=mode))
        elif subtype == "rewind_files":
            # The scenario's "rewind" is the CLI's answer (canRewind, filesChanged, …).
            answer = {"canRewind": True, "filesChanged": [], "insertions": 0, "deletions": 0}
            self.reply(request_id, {**answer, **self.scenario.get("rewind", {})})
        else:
            self.reply_error(request_id, f"Unsupported control request subtype: {subtype}")

    def pump(self, seconds: float) -> None:
        """Handle host frames for ``seconds``; with 0, only what is already waiting."""
        deadline = time.monotonic() + seconds
        while True:
            try:
                msg = self.inbox.get_nowait()
            except queue.Empty:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    return
                msg = self.take(min(remaining, 0.05))
                if msg is None:
                    continue
            self.handle(msg, in_turn=True)

    def ask(self, subtype: str, cancel_after: float | None = None, **fields: Any) -> dict[str, Any]:
        """Send a control request to the host and wait for its response."""
        request_id = str(uuid.uuid4())
        self.out(
            {
                "type": "control_request",
                "request_id": request_id,
                "request": {"subtype": subtype, **fields},
            }
        )
        self.log({"asked": subtype, "request_id": request_id, "at": time.time()})
        started = time.monotonic()
        while request_id not in self.responses:
            if cancel_after is not None and time.monotonic() - started >= cancel_after:
                self.out({"type": "control_cancel_request", "request_id": request_id})
                return {"subtype": "cancelled"}
            self.pump(0.02)
        return self.responses.pop(request_id)

    # -- output shapes ---------------------------------------------------------------------
    def system(self, subtype: str, **fields: Any) -> dict[str, Any]:
        return {
            "type": "system",
            "subtype": subtype,
            "session_id": self.session_id,
            "uuid": str(uuid.uuid4()),
            **fields,
        }

    def stream(self, event: dict[str, Any]) -> None:
        self.out(
            {
                "type": "stream_event",
                "event": event,
                "parent_tool_use_id": None,
                "session_id": self.session_id,
                "uuid": str(uuid.uuid4()),
            }
        )

    def assistant(self, message_id: str, block: dict[str, Any]) -> dict[str, Any]:
        return {
            "type": "assistant",
            "message": {
                "id": message_id,
                "type": "message",
                "role": "assistant",
                "model": self.model,
                "content": [block],
                "stop_reason": None,
                "usage": {"input_tokens": 10, "output_tokens": 1},
            },
            "parent_tool_use_id": None,
            "session_id": self.session_id,
            "uuid": str(uuid.uuid4()),
        }

    def user(self, content: list[dict[str, Any]]) -> dict[str, Any]:
        return {
            "type": "user",
            "message": {"role": "user", "content": content},
            "parent_tool_use_id": None,
            "session_id": self.session_id,
            "uuid": str(uuid.uuid4()),
        }

    def result(self, subtype: str, started: float, text: str, **fields: Any) -> None:
        self.cost += 0.0125
        self.out(
            {
                "type": "result",
                "subtype": subtype,
                "is_error": subtype != "success",
                "duration_ms": int((time.monotonic() - started) * 1000),
                "duration_api_ms": 1,
                "num_turns": 1,
                "session_id": self.session_id,
                "total_cost_usd": round(self.cost, 6),
                "usage": {"input_tokens": 100, "output_tokens": 20},
                "result": text,
                "uuid": str(uuid.uuid4()),
                **self.model_usage(),
                **fields,
            }
        )

    def model_usage(self) -> dict[str, Any]:
        window = self.scenario.get("context_window")
        return {"modelUsage": {self.model: {"contextWindow": window}}} if window else {}

    # -- turns ---------------------------------------------------------------------------
    def run_turn(self, prompt: Any) -> None:
        started = time.monotonic()
        steps = self.turns[self.turn_no] if self.turn_no < len(self.turns) else None
        self.turn_no += 1
        if steps is None:
            steps = [{"text": f"echo: {prompt if isinstance(prompt, str) else json.dumps(prompt)}"}]
        self.out(
            self.system(
                "init",
                cwd=os.getcwd(),
                tools=["Bash", "Read", "Edit", "Write", "Glob", "Grep"],
                mcp_servers=[],
                model=self.model,
                permissionMode=self.mode,
                slash_commands=["compact", "clear"]
                + [c["name"] for c in self.scenario.get("commands", [])],
                apiKeySource="none",
                claude_code_version=VERSION,
            )
        )
        last_text = ""
        try:
            for step in steps:
                outcome = self.step(step)
                if isinstance(outcome, str):
                    last_text = outcome
                elif outcome is False:
                    self.result(
                        "error_during_execution", started, "", terminal_reason="aborted_tools"
                    )
                    return
        except Interrupted:
            self.out(self.user([{"type": "text", "text": "[Request interrupted by user]"}]))
            self.result("error_during_execution", started, "", terminal_reason="aborted_streaming")
            return
        self.result("success", started, last_text, terminal_reason="completed")

    def step(self, step: dict[str, Any]) -> str | bool | None:
        """Play one step; a str is assistant text, False ends the turn (deny + interrupt)."""
        self.pump(0)
        if "text" in step:
            text, chunks = step["text"], int(step.get("chunks", 1))
            delay, usage = float(step.get("delay", 0)), step.get("usage", {})
            return self.text(text, chunks, delay, usage, step.get("progress"))
        if "thinking" in step:
            self.out(
                self.assistant(
                    self.next_id("msg"),
                    {"type": "thinking", "thinking": step["thinking"], "signature": "sig"},
                )
            )
        elif "tool" in step:
            return self.tool(step)
        elif "control_request" in step:
            self.ask(step["control_request"], **step.get("fields", {}))
        elif "compact" in step:
            metadata = {"trigger": "manual", **step["compact"]}
            self.out(self.system("compact_boundary", compact_metadata=metadata))
        elif "mode" in step:
            self.mode = step["mode"]
            self.out(self.system("status", status=None, permissionMode=self.mode))
        elif "sleep" in step:
            self.pump(float(step["sleep"]))
        elif "until_file" in step:
            deadline = time.monotonic() + float(step.get("timeout", 30))
            while not os.path.exists(step["until_file"]) and time.monotonic() < deadline:
                self.pump(0.05)
        elif "crash" in step:
            sys.stderr.write(step.get("stderr", "fake claude: simulated crash") + "\n")
            sys.stderr.flush()
            leave(int(step["crash"]))
        elif "malformed" in step:
            sys.stdout.write('[SandboxDebug] this is not json\n{"type": "assistant", broken\n\n')
            sys.stdout.flush()
        elif "emit" in step:
            self.out(step["emit"])
        elif "big_line_mb" in step:
            size = int(float(step["big_line_mb"]) * 1024 * 1024)
            self.out(self.assistant(self.next_id("msg"), {"type": "text", "text": "x" * size}))
        elif "stderr_kb" in step:
            line = "e" * 1023 + "\n"
            for _ in range(int(step["stderr_kb"])):
                sys.stderr.write(line)
            sys.stderr.write("STDERR-END\n")
            sys.stderr.flush()
        return None

    def text(
        self,
        text: str,
        chunks: int,
        delay: float,
        usage: dict[str, Any],
        progress: str | None = None,
    ) -> str:
        message_id = self.next_id("msg")
        self.stream(
            {
                "type": "message_start",
                "message": {
                    "id": message_id,
                    "type": "message",
                    "role": "assistant",
                    "model": self.model,
                    "content": [],
                    "usage": usage,
                },
            }
        )
        self.stream(
            {
                "type": "content_block_start",
                "index": 0,
                "content_block": {"type": "text", "text": ""},
            }
        )
        size = max(1, -(-len(text) // max(chunks, 1)))
        for i in range(0, len(text), size):
            self.stream(
                {
                    "type": "content_block_delta",
                    "index": 0,
                    "delta": {"type": "text_delta", "text": text[i : i + size]},
                }
            )
            self.pump(delay)
            if progress and (i // size) % PROGRESS_EVERY == 0:
                written = i // size + 1
                Path(progress + ".tmp").write_text(str(written))
                os.replace(progress + ".tmp", progress)
        if progress:
            Path(progress).write_text("all")
        self.out(self.assistant(message_id, {"type": "text", "text": text}))
        self.stream({"type": "content_block_stop", "index": 0})
        self.stream(
            {
                "type": "message_delta",
                "delta": {"stop_reason": "end_turn"},
                "usage": {"output_tokens": 5},
            }
        )
        self.stream({"type": "message_stop"})
        return text

    def tool(self, step: dict[str, Any]) -> bool | None:
        name = step["tool"]
        tool_input = step.get("input", {})
        tool_use_id = self.next_id("toolu")
        self.out(
            self.assistant(
                self.next_id("msg"),
                {"type": "tool_use", "id": tool_use_id, "name": name, "input": tool_input},
            )
        )
        if not step.get("permission"):
            self.out(
                self.user([{"type": "tool_result", "tool_use_id": tool_use_id, "content": "ran"}])
            )
            return None
        fields: dict[str, Any] = {
            "tool_name": name,
            "display_name": name,
            "input": tool_input,
            "tool_use_id": tool_use_id,
            "description": step.get("description", name),
            "permission_suggestions": step.get("suggestions", []),
        }
        if "reason" in step:
            fields["decision_reason"] = step["reason"]
        if "blocked_path" in step:
            fields["blocked_path"] = step["blocked_path"]
        response = self.ask("can_use_tool", step.get("cancel_after"), **fields)
        body = response.get("response", {})
        if response.get("subtype") == "success" and body.get("behavior") == "allow":
            content, is_error = "ran", False
        elif response.get("subtype") == "cancelled":
            content, is_error = "Permission request was cancelled", True
        else:
            content, is_error = body.get("message") or response.get("error", "denied"), True
        self.out(
            self.user(
                [
                    {
                        "type": "tool_result",
                        "tool_use_id": tool_use_id,
                        "content": [{"type": "text", "text": content}],
                        "is_error": is_error,
                    }
                ]
            )
        )
        if is_error and body.get("interrupt"):
            return False
        return None

    # -- main ------------------------------------------------------------------------------
    def fail_resume(self) -> None:
        message = f"No conversation found with session ID: {self.resume}"
        sys.stderr.write(message + "\n")
        sys.stderr.flush()
        self.session_id = str(uuid.uuid4())
        self.result("error_during_execution", time.monotonic(), "", errors=[message])
        leave(1)

    def run(self) -> None:
        keep = ("CLAUDECODE",)
        env = {k: v for k, v in os.environ.items() if k in keep or k.startswith("FAKE_")}
        start = {"argv": self.argv, "cwd": os.getcwd(), "env": env, "pid": os.getpid()}
        self.log({**start, "mcp_config": self.mcp_config()})
        if said := self.scenario.get("say_on_sigterm"):
            signal.signal(signal.SIGTERM, lambda *_: self.log({"said": self.text(said, 3, 0, {})}))
        elif self.scenario.get("ignore_sigterm"):
            signal.signal(signal.SIGTERM, signal.SIG_IGN)
        lazy_failure = self.scenario.get("unknown_resume") == "on_message"
        if self.resume and self.scenario.get("unknown_resume") and not lazy_failure:
            self.fail_resume()
        threading.Thread(target=self.read_stdin, daemon=True).start()
        while True:
            msg = self.deferred.pop(0) if self.deferred else self.take(None)
            if isinstance(msg, dict) and msg.get("type") == "user":
                if self.resume and lazy_failure:
                    self.fail_resume()
                self.run_turn(msg.get("message", {}).get("content"))
            else:
                self.handle(msg, in_turn=False)


if __name__ == "__main__":
    FakeClaude(sys.argv[1:]).run()
