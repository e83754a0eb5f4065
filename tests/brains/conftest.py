"""Fixtures for brain tests: the fake Claude executable, its files, and event recording."""

from __future__ import annotations

import asyncio
import contextlib
import json
import sys
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest

from app.brains.base import Brain, BrainConfig
from app.brains.claude.brain import ClaudeBrain
from app.brains.events import BrainEvent

FAKE_CLAUDE = Path(__file__).resolve().parents[1] / "fakes" / "fake_claude.py"


class FakeClaudeFiles:
    """The scenario the fake plays and the log it writes (argv + every stdin line)."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.scenario_path = root / "claude_scenario.json"
        self.log_path = root / "claude_log.jsonl"
        self.cwd = root / "project"
        self.cwd.mkdir(exist_ok=True)
        self.scenario()

    def scenario(self, *turns: list[dict[str, Any]], **extra: Any) -> None:
        self.scenario_path.write_text(json.dumps({"turns": list(turns), **extra}))

    def config(self, **overrides: Any) -> BrainConfig:
        env = {
            "FAKE_CLAUDE_SCENARIO": str(self.scenario_path),
            "FAKE_CLAUDE_LOG": str(self.log_path),
        }
        env.update(overrides.pop("env", {}))
        fields: dict[str, Any] = {
            "session_id": "chat-1",
            "cwd": str(self.cwd),
            "command": (sys.executable, str(FAKE_CLAUDE)),
            "env": env,
        }
        fields.update(overrides)
        return BrainConfig(**fields)

    def entries(self) -> list[dict[str, Any]]:
        if not self.log_path.exists():
            return []
        return [json.loads(line) for line in self.log_path.read_text().splitlines()]

    def starts(self) -> list[dict[str, Any]]:
        """One entry per process the fake ran: its argv, cwd and environment."""
        return [e for e in self.entries() if "argv" in e]

    def stdin(self) -> list[dict[str, Any]]:
        return [e["stdin"] for e in self.entries() if "stdin" in e]

    def control_responses(self) -> dict[str, dict[str, Any]]:
        """The host's control responses keyed by request id (later ones win)."""
        out: dict[str, dict[str, Any]] = {}
        for line in self.stdin():
            if line.get("type") == "control_response":
                out[line["response"]["request_id"]] = line["response"]
        return out

    def control_requests(self) -> list[dict[str, Any]]:
        return [line["request"] for line in self.stdin() if line.get("type") == "control_request"]


class EventRecorder:
    """Collects a brain's events in a background task so tests can wait for them."""

    def __init__(self, brain: Brain) -> None:
        self.events: list[BrainEvent] = []
        self.closed = False
        self._changed = asyncio.Event()
        self._task = asyncio.create_task(self._run(brain))

    async def _run(self, brain: Brain) -> None:
        try:
            async for event in brain.events():
                self.events.append(event)
                self._changed.set()
        finally:
            self.closed = True
            self._changed.set()

    def of(self, kind: type[Any]) -> list[Any]:
        return [e for e in self.events if isinstance(e, kind)]

    async def wait_for(
        self,
        condition: type[BrainEvent] | Callable[[BrainEvent], bool],
        *,
        count: int = 1,
        timeout: float = 10.0,
    ) -> list[BrainEvent]:
        """Wait until ``count`` events match; return every event seen so far."""
        if isinstance(condition, type):
            kind = condition

            def matches(event: BrainEvent) -> bool:
                return isinstance(event, kind)
        else:
            matches = condition

        async def run() -> None:
            while sum(map(matches, self.events)) < count:
                if self.closed:
                    raise AssertionError(f"events ended early: {self.events!r}"[:2000])
                self._changed.clear()
                await self._changed.wait()

        try:
            await asyncio.wait_for(run(), timeout)
        except TimeoutError:
            raise AssertionError(f"timed out; saw {self.events!r}"[:2000]) from None
        return list(self.events)

    async def wait_closed(self, timeout: float = 10.0) -> None:
        await asyncio.wait_for(asyncio.shield(self._task), timeout)

    async def cancel(self) -> None:
        self._task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self._task


StartBrain = Callable[..., Awaitable[tuple[ClaudeBrain, EventRecorder]]]


@pytest.fixture
def claude_files(tmp_path: Path) -> FakeClaudeFiles:
    return FakeClaudeFiles(tmp_path)


@pytest.fixture
async def start_brain(claude_files: FakeClaudeFiles) -> AsyncIterator[StartBrain]:
    """Start a ClaudeBrain on the fake (config overrides as kwargs); stopped at teardown."""
    started: list[tuple[ClaudeBrain, EventRecorder]] = []

    async def start(**overrides: Any) -> tuple[ClaudeBrain, EventRecorder]:
        brain = ClaudeBrain(claude_files.config(**overrides))
        recorder = EventRecorder(brain)
        started.append((brain, recorder))
        await brain.start()
        return brain, recorder

    yield start
    for brain, recorder in started:
        await brain.stop()
        await recorder.cancel()
