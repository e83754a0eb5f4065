"""The real Claude Code CLI, driven directly over stream-json, against the fake model server.

These tests prove the offline harness itself (fake server + isolated env + network namespace):
a permission prompt round trip that really runs a tool, a second turn in the same process,
and a resume in a new process that sends the earlier history to the model.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import socket
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.fakes.fake_model_server import FakeModelServer, request_texts

Msg = dict[str, Any]
PermissionAnswer = Callable[[Msg], Msg]

READ_TIMEOUT_S = 30.0


def allow(request: Msg) -> Msg:
    return {"behavior": "allow", "updatedInput": request["input"]}


def deny(request: Msg) -> Msg:
    return {"behavior": "deny", "message": "denied by test"}


class ClaudeProcess:
    """One ``claude`` process in stream-json mode with the stdio permission prompt."""

    def __init__(self, proc: asyncio.subprocess.Process, stderr_path: Path) -> None:
        self.proc = proc
        self.stderr_path = stderr_path
        self.seen: list[Msg] = []
        self.permission_requests: list[Msg] = []

    @classmethod
    async def start(
        cls, claude_bin: Path, env: dict[str, str], cwd: Path, *extra: str
    ) -> ClaudeProcess:
        argv = [
            str(claude_bin),
            "-p",
            "--output-format",
            "stream-json",
            "--input-format",
            "stream-json",
            "--verbose",
            "--include-partial-messages",
            "--permission-prompt-tool",
            "stdio",
            "--permission-mode",
            "default",
            *extra,
        ]
        stderr_path = cwd.parent / f"claude-stderr-{uuid.uuid4().hex[:8]}.txt"
        with stderr_path.open("wb") as stderr:
            proc = await asyncio.create_subprocess_exec(
                *argv,
                cwd=cwd,
                env=env,
                stdin=asyncio.subprocess.PIPE,
                stdout=asyncio.subprocess.PIPE,
                # A file, not a pipe: an undrained stderr pipe can stall the CLI.
                stderr=stderr,
                # Tool results can make single lines far larger than asyncio's 64 KiB default.
                limit=64 * 1024 * 1024,
            )
        return cls(proc, stderr_path)

    def context(self) -> str:
        tail = [json.dumps(m)[:300] for m in self.seen[-15:]]
        stderr = self.stderr_path.read_text(errors="replace")[-2000:]
        return "last stdout messages:\n" + "\n".join(tail) + f"\nstderr:\n{stderr}"

    async def send(self, message: Msg) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write((json.dumps(message) + "\n").encode())
        await self.proc.stdin.drain()

    async def read(self) -> Msg:
        assert self.proc.stdout is not None
        while True:
            try:
                line = await asyncio.wait_for(self.proc.stdout.readline(), READ_TIMEOUT_S)
            except TimeoutError:
                raise AssertionError(
                    f"no output for {READ_TIMEOUT_S} s\n{self.context()}"
                ) from None
            if not line:
                raise AssertionError(f"claude closed stdout\n{self.context()}")
            # Parse rather than prefix-match: key order differs between CLI versions.
            text = line.decode().strip()
            if not text.startswith("{"):
                continue
            message: Msg = json.loads(text)
            self.seen.append(message)
            return message

    async def initialize(self) -> Msg:
        await self.send(
            {
                "type": "control_request",
                "request_id": "req_init_1",
                "request": {"subtype": "initialize", "hooks": None},
            }
        )
        while True:
            msg = await self.read()
            if msg.get("type") == "control_response":
                response: Msg = msg["response"]
                assert response["request_id"] == "req_init_1", msg
                assert response["subtype"] == "success", msg
                return response

    async def turn(self, text: str, answer: PermissionAnswer = allow) -> list[Msg]:
        """Send one user message; answer permission prompts; return the turn up to ``result``."""
        await self.send(
            {
                "type": "user",
                "message": {"role": "user", "content": text},
                "parent_tool_use_id": None,
                "session_id": "",
            }
        )
        messages: list[Msg] = []
        while True:
            msg = await self.read()
            messages.append(msg)
            if msg.get("type") == "control_request":
                request = msg["request"]
                if request.get("subtype") == "can_use_tool":
                    self.permission_requests.append(request)
                    body = answer(request)
                else:
                    body = {}
                await self.send(
                    {
                        "type": "control_response",
                        "response": {
                            "subtype": "success",
                            "request_id": msg["request_id"],
                            "response": body,
                        },
                    }
                )
            elif msg.get("type") == "result":
                return messages

    async def close(self, timeout: float = 15.0) -> int:
        """End the session the way a host should: EOF on stdin, then wait for the exit."""
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        try:
            return await asyncio.wait_for(self.proc.wait(), timeout)
        except TimeoutError:
            self.proc.kill()
            await self.proc.wait()
            raise AssertionError(f"claude did not exit after stdin EOF\n{self.context()}") from None

    async def kill(self) -> None:
        if self.proc.returncode is None:
            self.proc.kill()
            await self.proc.wait()


def result_of(messages: list[Msg]) -> Msg:
    result = messages[-1]
    assert result.get("type") == "result", result
    return result


def streamed_text(messages: list[Msg]) -> list[str]:
    return [
        m["event"]["delta"]["text"]
        for m in messages
        if m.get("type") == "stream_event"
        and m["event"].get("type") == "content_block_delta"
        and m["event"]["delta"].get("type") == "text_delta"
    ]


def session_file(home: Path, cwd: Path, session_id: str) -> Path:
    slug = re.sub(r"[^a-zA-Z0-9]", "-", str(cwd))
    return home / ".claude" / "projects" / slug / f"{session_id}.jsonl"


@pytest.mark.real_cli
async def test_permission_second_turn_and_resume(
    claude_bin: Path,
    claude_env: dict[str, str],
    fake_model: FakeModelServer,
    project_dir: Path,
) -> None:
    session_id = str(uuid.uuid4())
    claude = await ClaudeProcess.start(
        claude_bin, claude_env, project_dir, f"--session-id={session_id}"
    )
    try:
        init = await claude.initialize()
        assert init["response"].get("claude_code_version", "").startswith("2."), init

        # Turn 1: the fake asks for Bash; the CLI asks us; allowing runs the tool for real.
        turn1 = await claude.turn("run touch")
        assert [r["tool_name"] for r in claude.permission_requests] == ["Bash"]
        assert claude.permission_requests[0]["input"]["command"] == "touch made_by_fake.txt"
        result1 = result_of(turn1)
        assert result1["subtype"] == "success" and not result1["is_error"], result1
        assert result1["result"] == "done"
        assert result1["session_id"] == session_id
        assert (project_dir / "made_by_fake.txt").exists()
        inits = [m for m in turn1 if m.get("type") == "system" and m.get("subtype") == "init"]
        assert inits and inits[0]["session_id"] == session_id

        # Turn 2, same process: plain text, streamed in several deltas.
        turn2 = await claude.turn("say hi")
        assert result_of(turn2)["result"] == "hello from fake"
        deltas = streamed_text(turn2)
        assert len(deltas) >= 3 and "".join(deltas) == "hello from fake", deltas

        assert await claude.close() == 0
    finally:
        await claude.kill()

    assert session_file(Path(claude_env["HOME"]), project_dir, session_id).exists()
    first_run_requests = len(fake_model.message_requests())

    # Resume in a new process (same HOME, same cwd): the model gets the whole history.
    resumed = await ClaudeProcess.start(
        claude_bin, claude_env, project_dir, f"--resume={session_id}"
    )
    try:
        turn3 = await resumed.turn("say again")
        result3 = result_of(turn3)
        assert result3["result"] == "hello from fake"
        assert result3["session_id"] == session_id
        assert await resumed.close() == 0
    finally:
        await resumed.kill()

    later = fake_model.message_requests()[first_run_requests:]
    main = [e for e in later if e["body"].get("tools") and "say again" in request_texts(e)]
    assert main, [e["reply"] for e in later]
    history = request_texts(main[-1])
    for expected in ("run touch", "touch made_by_fake.txt", "done", "say hi", "hello from fake"):
        assert any(expected in t for t in history), (expected, history)
    blocks = [
        b
        for m in main[-1]["body"]["messages"]
        if isinstance(m.get("content"), list)
        for b in m["content"]
    ]
    assert {"tool_use", "tool_result"} <= {b.get("type") for b in blocks}


@pytest.mark.real_cli
async def test_denied_tool_reaches_the_model_as_an_error(
    claude_bin: Path,
    claude_env: dict[str, str],
    fake_model: FakeModelServer,
    project_dir: Path,
) -> None:
    claude = await ClaudeProcess.start(claude_bin, claude_env, project_dir)
    try:
        turn = await claude.turn("run touch", answer=deny)
        assert result_of(turn)["result"] == "done"
        assert await claude.close() == 0
    finally:
        await claude.kill()

    assert not (project_dir / "made_by_fake.txt").exists()
    after_tool = [e for e in fake_model.message_requests() if e["reply"]["why"] == "after_tool"]
    assert after_tool
    results = [
        b
        for m in after_tool[-1]["body"]["messages"]
        if m.get("role") == "user" and isinstance(m.get("content"), list)
        for b in m["content"]
        if b.get("type") == "tool_result"
    ]
    assert results and results[-1]["is_error"] is True
    assert "denied by test" in json.dumps(results[-1]["content"])


def test_suite_network_is_loopback_only() -> None:
    """Inside `.ci/in-netns` nothing but loopback is reachable."""
    if os.environ.get("ANGELIA_NETNS") != "1":
        pytest.skip("not running under .ci/in-netns")
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        socket.create_connection(listener.getsockname(), timeout=2).close()
    for address in ("1.1.1.1", "8.8.8.8"):
        with pytest.raises(OSError):
            socket.create_connection((address, 443), timeout=2).close()
    with pytest.raises(OSError):
        socket.getaddrinfo("registry.npmjs.org", 443)
