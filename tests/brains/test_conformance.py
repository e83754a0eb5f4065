"""One behaviour suite every brain must pass, each through its real transport and a fake.

Parametrised over ``claude`` (fake stream-json CLI), the generic ``acp`` brain and the
``gemini`` catalog row (both pointed at the fake ACP agent through the profile's
``command``), ``grok`` (the fake ACP agent installed as ``grok`` on PATH), and ``pi`` and
``codex`` (their own brains, also pointed at the fake through the profile's ``command``).
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from app.brains import get_brain_class
from app.brains.base import Brain, BrainConfig, PermissionAnswer
from app.brains.events import (
    AssistantText,
    BackendSession,
    BrainExited,
    PermissionAsked,
    TextDelta,
    ToolCall,
    ToolResult,
    TurnEnded,
)
from tests.brains.conftest import EventRecorder, FakeClaudeFiles
from tests.fakes.fake_acp_agent import FakeAcpFiles

Steps = list[dict[str, Any]]


class Harness:
    """How one backend's fake is scripted, started and checked."""

    backend: str

    def text(self, text: str) -> Steps:
        return [{"text": text, "chunks": 2}]

    def slow(self) -> Steps:
        return [{"text": "working"}, {"sleep": 30}]

    def tool(self) -> Steps:
        raise NotImplementedError

    def scenario(self, *turns: Steps) -> None:
        raise NotImplementedError

    def config(self, **overrides: Any) -> BrainConfig:
        raise NotImplementedError

    def resumed(self, backend_session_id: str) -> bool:
        """Whether the last process reopened ``backend_session_id``."""
        raise NotImplementedError


class ClaudeHarness(Harness):
    backend = "claude"

    def __init__(self, root: Path) -> None:
        self.files = FakeClaudeFiles(root)

    def tool(self) -> Steps:
        return [
            {"tool": "Bash", "input": {"command": "touch made.txt"}, "permission": True},
            {"text": "after"},
        ]

    def scenario(self, *turns: Steps) -> None:
        self.files.scenario(*turns)

    def config(self, **overrides: Any) -> BrainConfig:
        return self.files.config(**overrides)

    def resumed(self, backend_session_id: str) -> bool:
        return f"--resume={backend_session_id}" in self.files.starts()[-1]["argv"]


class AcpHarness(Harness):
    """The fake ACP agent; ``reopen`` is the capability it offers for resuming."""

    def __init__(self, root: Path, backend: str, reopen: str) -> None:
        self.files = FakeAcpFiles(root)
        self.backend = backend
        self.reopen = reopen

    def tool(self) -> Steps:
        tool = {"id": "t1", "title": "touch made.txt", "kind": "execute", "input": {"x": 1}}
        return [{"tool": tool, "permission": True}, {"text": "after"}]

    def scenario(self, *turns: Steps) -> None:
        history = [{"user": "earlier"}, {"text": "earlier answer"}]
        reopen = {"load_session": True} if self.reopen == "load" else {"resume": True}
        self.files.scenario(*turns, history=history, **reopen)

    def config(self, **overrides: Any) -> BrainConfig:
        overrides.setdefault("command", self.files.command)
        return self.files.config(**overrides)

    def resumed(self, backend_session_id: str) -> bool:
        method = f"session/{self.reopen}"
        return any(r["sessionId"] == backend_session_id for r in self.files.requests(method))


class GrokHarness(AcpHarness):
    def __init__(self, root: Path) -> None:
        super().__init__(root, "grok", "load")
        self.path = f"{self.files.grok_bin()}{os.pathsep}{os.environ.get('PATH', '')}"

    def config(self, **overrides: Any) -> BrainConfig:
        return self.files.config(command=(), env={"PATH": self.path}, **overrides)


@pytest.fixture(params=["claude", "acp", "gemini", "grok", "pi", "codex"])
def harness(request: pytest.FixtureRequest, tmp_path: Path) -> Harness:
    backend = request.param
    if backend == "claude":
        return ClaudeHarness(tmp_path)
    if backend == "grok":
        return GrokHarness(tmp_path)
    return AcpHarness(tmp_path, backend, "resume" if backend in ("acp", "codex") else "load")


class Started:
    """Brains started by one test, stopped at teardown."""

    def __init__(self, harness: Harness) -> None:
        self.harness = harness
        self.all: list[tuple[Brain, EventRecorder]] = []

    async def __call__(self, **overrides: Any) -> tuple[Brain, EventRecorder]:
        brain = get_brain_class(self.harness.backend)(self.harness.config(**overrides))
        recorder = EventRecorder(brain)
        self.all.append((brain, recorder))
        await brain.start()
        return brain, recorder


@pytest.fixture
async def start(harness: Harness) -> AsyncIterator[Started]:
    started = Started(harness)
    yield started
    for brain, recorder in started.all:
        await brain.stop()
        await recorder.cancel()


async def test_start(start: Started) -> None:
    brain, _rec = await start()
    assert brain.alive and brain.pid is not None
    assert os.getpgid(brain.pid) == brain.pid


async def test_text_turn(harness: Harness, start: Started) -> None:
    harness.scenario(harness.text("hello world"))
    brain, rec = await start()
    await brain.send("hi")
    await rec.wait_for(TurnEnded)
    deltas = rec.of(TextDelta)
    message = rec.of(AssistantText)[0]
    assert "".join(d.text for d in deltas) == message.text == "hello world"
    assert {d.message_id for d in deltas} == {message.message_id}
    assert rec.events.index(message) < rec.events.index(rec.of(TurnEnded)[0])
    end = rec.of(TurnEnded)[0]
    assert not end.is_error and end.result == "hello world"
    assert rec.of(BackendSession)[0].backend_session_id


@pytest.mark.parametrize("choice", ["allow_once", "deny"])
async def test_tool_call_with_permission(harness: Harness, start: Started, choice: Any) -> None:
    harness.scenario(harness.tool())
    brain, rec = await start()
    await brain.send("make a file")
    await rec.wait_for(PermissionAsked)
    asked = rec.of(PermissionAsked)[0]
    call = rec.of(ToolCall)[0]
    assert asked.tool_call_id == call.tool_call_id
    assert {o.choice for o in asked.options} >= {"allow_once", "deny"}
    await brain.answer_permission(asked.request_id, PermissionAnswer(choice))
    await rec.wait_for(TurnEnded)
    result = rec.of(ToolResult)[0]
    assert result.tool_call_id == call.tool_call_id
    assert result.is_error == (choice == "deny")
    assert rec.of(AssistantText)[-1].text == "after"


async def test_interrupt(harness: Harness, start: Started) -> None:
    harness.scenario(harness.slow(), harness.text("next"))
    brain, rec = await start()
    await brain.send("take your time")
    await rec.wait_for(TextDelta)
    await brain.interrupt()
    await rec.wait_for(TurnEnded)
    assert brain.alive
    await brain.send("again")
    await rec.wait_for(TurnEnded, count=2)
    assert rec.of(AssistantText)[-1].text == "next"


async def test_stop_ends_the_process_group(start: Started) -> None:
    brain, rec = await start()
    pid = brain.pid
    assert pid is not None
    await brain.stop()
    await brain.stop()
    await rec.wait_closed()
    exited = rec.of(BrainExited)[-1]
    assert exited.expected and not brain.alive
    with pytest.raises(ProcessLookupError):
        os.killpg(pid, 0)


async def test_resume_after_restart(harness: Harness, start: Started) -> None:
    harness.scenario(harness.text("first answer"))
    brain, rec = await start()
    await brain.send("hi")
    await rec.wait_for(TurnEnded)
    session_id = rec.of(BackendSession)[0].backend_session_id
    await brain.stop()

    again, rec2 = await start(backend_session_id=session_id)
    assert harness.resumed(session_id)
    await again.send("and now?")
    await rec2.wait_for(TurnEnded)
    # History is not replayed as new events, and the id does not change.
    assert len(rec2.of(AssistantText)) == 1
    assert rec2.of(BackendSession) == []
