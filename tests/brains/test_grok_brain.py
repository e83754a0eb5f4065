"""The Grok Build brain against a fake ``grok`` executable on PATH (the fake ACP agent)."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest

from app.brains import get_brain_class
from app.brains.acp.agents.grok import GrokBrain
from app.brains.base import Capability, PermissionAnswer
from app.brains.events import (
    AssistantText,
    BrainEvent,
    PermissionAsked,
    ToolCall,
    ToolResult,
    TurnEnded,
)
from app.errors import AgentNotFoundError, BrainStartError, ValidationFailed
from tests.brains.conftest import EventRecorder
from tests.fakes.fake_acp_agent import FakeAcpFiles

StartGrok = Callable[..., Awaitable[tuple[GrokBrain, EventRecorder]]]
TOOL = {"id": "t1", "title": "rm -rf build", "kind": "execute", "input": {"command": "rm"}}


def _kinds(events: list[BrainEvent]) -> list[str]:
    return [type(e).__name__ for e in events]


@pytest.fixture
def grok_files(tmp_path: Path) -> FakeAcpFiles:
    return FakeAcpFiles(tmp_path)


@pytest.fixture
async def start_grok(grok_files: FakeAcpFiles) -> AsyncIterator[StartGrok]:
    """Start a GrokBrain that finds the fake ``grok`` on its PATH; stopped at teardown."""
    started: list[tuple[GrokBrain, EventRecorder]] = []
    path = f"{grok_files.grok_bin()}{os.pathsep}{os.environ.get('PATH', '')}"

    async def start(**overrides: Any) -> tuple[GrokBrain, EventRecorder]:
        overrides.setdefault("command", ())
        env = {"PATH": path, **overrides.pop("env", {})}
        brain = GrokBrain(grok_files.config(env=env, **overrides))
        recorder = EventRecorder(brain)
        started.append((brain, recorder))
        await brain.start()
        return brain, recorder

    yield start
    for brain, recorder in started:
        await brain.stop()
        await recorder.cancel()


def test_registered_with_its_facts() -> None:
    assert get_brain_class("grok") is GrokBrain
    assert GrokBrain.instructions_file == "CLAUDE.md"
    assert GrokBrain.executable == "grok"
    assert GrokBrain.resume_methods == ("load",)
    assert Capability.DENY_SINGLE_TOOL in GrokBrain.capabilities
    assert Capability.PER_SESSION_MCP in GrokBrain.capabilities
    # Only the modes the app keeps by answering grok's questions itself.
    assert GrokBrain.permission_modes == ("default", "bypassPermissions", "dontAsk")
    assert "Read" in GrokBrain.runs_unasked and "Bash" not in GrokBrain.runs_unasked


@pytest.mark.parametrize(
    ("fields", "argv"),
    [
        ({}, ["agent", "stdio"]),
        (
            {"model": "grok-4", "reasoning_effort": "high"},
            ["agent", "-m", "grok-4", "--reasoning-effort", "high", "stdio"],
        ),
        # grok ignores --permission-mode under `agent stdio`, and --always-approve would
        # let it act before the app's rules are asked: the app answers by mode instead.
        (
            {"permission_mode": "bypassPermissions", "model": "grok-4"},
            ["agent", "-m", "grok-4", "stdio"],
        ),
    ],
)  # fmt: skip
async def test_argv(
    grok_files: FakeAcpFiles, start_grok: StartGrok, fields: dict[str, Any], argv: list[str]
) -> None:
    brain, _rec = await start_grok(**fields)
    start = grok_files.starts()[0]
    assert start["argv"] == argv
    assert start["grok"]["always"] is False
    assert brain.build_argv() == ["grok", *argv]
    # The model went on the command line, not through a config option.
    assert "session/set_config_option" not in grok_files.methods()


async def test_only_the_modes_the_app_keeps_can_be_switched_to(start_grok: StartGrok) -> None:
    brain, _rec = await start_grok()
    await brain.set_permission_mode("bypassPermissions")
    await brain.set_permission_mode("dontAsk")
    await brain.set_permission_mode("default")
    for mode in ("plan", "acceptEdits"):
        with pytest.raises(ValidationFailed, match=f"no '{mode}' mode"):
            await brain.set_permission_mode(mode)


async def test_grok_missing_says_how_to_install(grok_files: FakeAcpFiles, tmp_path: Path) -> None:
    brain = GrokBrain(grok_files.config(command=(), env={"PATH": str(tmp_path / "nowhere")}))
    with pytest.raises(AgentNotFoundError, match="installer script"):
        await brain.start()


async def test_text_is_flushed_before_a_tool_call(
    grok_files: FakeAcpFiles, start_grok: StartGrok
) -> None:
    grok_files.scenario(
        [
            {"text": "Let me clean up.", "chunks": 2},
            {"tool": TOOL, "permission": True},
            {"text": "Done, build is gone."},
        ]
    )
    brain, rec = await start_grok()
    await brain.send("clean")
    await rec.wait_for(PermissionAsked)
    assert _kinds(rec.events)[-5:] == [
        "TextDelta",
        "TextDelta",
        "AssistantText",
        "ToolCall",
        "PermissionAsked",
    ]
    assert rec.of(AssistantText)[0].text == "Let me clean up."
    await brain.answer_permission(rec.of(PermissionAsked)[0].request_id, PermissionAnswer("deny"))
    await rec.wait_for(TurnEnded)
    first, second = rec.of(AssistantText)
    assert second.text == "Done, build is gone." and first.message_id != second.message_id
    assert rec.events.index(second) > rec.events.index(rec.of(ToolResult)[0])
    assert rec.of(ToolResult)[0].is_error
    assert grok_files.permission_outcomes()[0]["optionId"] == "reject-once"
    assert rec.of(TurnEnded)[0].result == "Done, build is gone."
    assert [c.tool for c in rec.of(ToolCall)] == ["rm -rf build"]


async def test_resume_uses_session_load(grok_files: FakeAcpFiles, start_grok: StartGrok) -> None:
    history = [{"user": "old question"}, {"text": "old answer"}, {"tool": TOOL}]
    grok_files.scenario([{"text": "new answer"}], load_session=True, resume=True, history=history)
    brain, rec = await start_grok(backend_session_id="grok-sess-9")
    assert grok_files.requests("session/load")[0]["sessionId"] == "grok-sess-9"
    assert "session/resume" not in grok_files.methods()
    await brain.send("continue")
    await rec.wait_for(TurnEnded)
    assert _kinds(rec.events) == ["TextDelta", "AssistantText", "TurnEnded"]


async def test_resume_needs_load_session(grok_files: FakeAcpFiles, start_grok: StartGrok) -> None:
    grok_files.scenario(resume=True)
    with pytest.raises(BrainStartError, match="cannot continue session grok-sess-9"):
        await start_grok(backend_session_id="grok-sess-9")


async def test_a_refused_command_line_fails_the_start(
    grok_files: FakeAcpFiles, start_grok: StartGrok
) -> None:
    grok = str(grok_files.grok_bin() / "grok")
    with pytest.raises(BrainStartError, match="exited with code 2") as info:
        await start_grok(command=(grok, "--no-such-flag"))
    assert "grok: expected" in info.value.detail
