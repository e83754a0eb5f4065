"""ClaudeBrain driven through the real transport against the fake ``claude`` executable."""

from __future__ import annotations

import os
import signal
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from app.brains import get_brain_class
from app.brains.base import Capability, PermissionAnswer
from app.brains.claude.brain import ClaudeBrain
from app.brains.events import (
    AssistantText,
    BackendSession,
    BrainError,
    BrainExited,
    ModeChanged,
    PermissionAsked,
    PermissionCancelled,
    SessionInfo,
    TextDelta,
    Thought,
    ToolCall,
    ToolResult,
    TurnEnded,
)
from app.errors import AgentNotFoundError, BrainStartError, ValidationFailed

if TYPE_CHECKING:
    from conftest import FakeClaudeFiles, StartBrain

BASH = {"tool": "Bash", "input": {"command": "ls -la"}, "permission": True}


def _kinds(events: list[object]) -> list[str]:
    return [type(e).__name__ for e in events]


async def test_registered_with_its_facts() -> None:
    assert get_brain_class("claude") is ClaudeBrain
    assert ClaudeBrain.install_hint == "npm i -g @anthropic-ai/claude-code"
    assert ClaudeBrain.instructions_file == "CLAUDE.md"
    assert set(ClaudeBrain.capabilities) == set(Capability)


async def test_streams_deltas_then_message_then_turn_end(
    claude_files: FakeClaudeFiles, start_brain: StartBrain
) -> None:
    claude_files.scenario([{"thinking": "let me see"}, {"text": "hello world", "chunks": 3}])
    brain, rec = await start_brain(model="sonnet")
    await brain.send("hi")
    events = await rec.wait_for(TurnEnded)

    # The id is recorded as soon as the CLI takes the turn up (its init line), so a crash
    # during the first turn can still resume.
    assert _kinds(events) == [
        "BackendSession",
        "SessionInfo",
        "Thought",
        "TextDelta",
        "TextDelta",
        "TextDelta",
        "AssistantText",
        "TurnEnded",
    ]
    info = rec.of(SessionInfo)[0]
    assert (info.model, info.permission_mode, info.cli_version) == ("sonnet", "default", "2.1.332")
    assert "Bash" in info.tools and "compact" in info.slash_commands
    assert rec.of(Thought)[0].text == "let me see"
    deltas = rec.of(TextDelta)
    message = rec.of(AssistantText)[0]
    assert "".join(d.text for d in deltas) == message.text == "hello world"
    assert message.message_id and {d.message_id for d in deltas} == {message.message_id}
    end = rec.of(TurnEnded)[0]
    assert (end.stop_reason, end.is_error, end.result) == ("success", False, "hello world")
    assert end.cost_usd == pytest.approx(0.0125)
    assert end.usage["input_tokens"] == 100 and isinstance(end.duration_ms, int)
    assert rec.of(BackendSession)[0].backend_session_id == brain.backend_session_id
    assert f"--session-id={brain.backend_session_id}" in claude_files.starts()[0]["argv"]


async def test_two_turns_share_one_process(
    claude_files: FakeClaudeFiles, start_brain: StartBrain
) -> None:
    claude_files.scenario([{"text": "one"}], [{"text": "two"}])
    brain, rec = await start_brain()
    pid = brain.pid
    await brain.send("first")
    await rec.wait_for(TurnEnded)
    await brain.send("second")
    await rec.wait_for(TurnEnded, count=2)

    assert brain.pid == pid and pid is not None
    assert [s["pid"] for s in claude_files.starts()] == [pid]
    assert [m.text for m in rec.of(AssistantText)] == ["one", "two"]
    assert len(rec.of(BackendSession)) == 1
    assert len(rec.of(SessionInfo)) == 2
    assert [t.cost_usd for t in rec.of(TurnEnded)] == pytest.approx([0.0125, 0.025])


async def test_permission_allow_runs_the_tool(
    claude_files: FakeClaudeFiles, start_brain: StartBrain
) -> None:
    step = {**BASH, "reason": "Path is outside allowed working directories", "blocked_path": "/x"}
    claude_files.scenario([step, {"text": "done"}])
    brain, rec = await start_brain()
    await brain.send("list files")
    await rec.wait_for(PermissionAsked)

    call = rec.of(ToolCall)[0]
    assert (call.tool, call.title, call.tool_kind) == ("Bash", "ls -la", "execute")
    asked = rec.of(PermissionAsked)[0]
    assert (asked.tool, asked.input, asked.tool_call_id) == (
        "Bash",
        BASH["input"],
        call.tool_call_id,
    )
    assert asked.reason.startswith("Path is outside") and asked.blocked_path == "/x"
    assert [o.choice for o in asked.options] == ["allow_once", "allow_always", "deny", "deny_stop"]

    await brain.answer_permission(asked.request_id, PermissionAnswer("allow_once"))
    await rec.wait_for(TurnEnded)
    result = rec.of(ToolResult)[0]
    assert (result.tool_call_id, result.output, result.is_error) == (
        call.tool_call_id,
        "ran",
        False,
    )
    sent = claude_files.control_responses()[asked.request_id]
    assert sent["subtype"] == "success"
    assert sent["response"] == {"behavior": "allow", "updatedInput": {"command": "ls -la"}}


async def test_allow_always_sends_the_edited_input_and_no_cli_rule(
    claude_files: FakeClaudeFiles, start_brain: StartBrain
) -> None:
    suggestion = {
        "type": "addRules",
        "rules": [{"toolName": "Bash", "ruleContent": "ls:*"}],
        "behavior": "allow",
        "destination": "localSettings",
    }
    claude_files.scenario([{**BASH, "suggestions": [suggestion]}])
    brain, rec = await start_brain()
    await brain.send("go")
    await rec.wait_for(PermissionAsked)
    asked = rec.of(PermissionAsked)[0]
    edited = {"command": "ls"}
    await brain.answer_permission(
        asked.request_id, PermissionAnswer("allow_always", updated_input=edited)
    )
    await rec.wait_for(TurnEnded)

    # "Always" is an app-side rule; a CLI rule would let later calls skip the prompt
    # (and the app's audit log).
    body = claude_files.control_responses()[asked.request_id]["response"]
    assert body == {"behavior": "allow", "updatedInput": edited}


async def test_deny_with_message_lets_the_turn_continue(
    claude_files: FakeClaudeFiles, start_brain: StartBrain
) -> None:
    claude_files.scenario([BASH, {"text": "ok, not running it"}])
    brain, rec = await start_brain()
    await brain.send("go")
    await rec.wait_for(PermissionAsked)
    request_id = rec.of(PermissionAsked)[0].request_id
    await brain.answer_permission(request_id, PermissionAnswer("deny", message="not today"))
    await rec.wait_for(TurnEnded)

    result = rec.of(ToolResult)[0]
    assert (result.output, result.is_error) == ("not today", True)
    assert claude_files.control_responses()[request_id]["response"] == {
        "behavior": "deny",
        "message": "not today",
    }
    assert rec.of(TurnEnded)[0].stop_reason == "success"
    assert [m.text for m in rec.of(AssistantText)] == ["ok, not running it"]


async def test_deny_stop_ends_the_turn(
    claude_files: FakeClaudeFiles, start_brain: StartBrain
) -> None:
    claude_files.scenario([BASH, {"text": "never said"}])
    brain, rec = await start_brain()
    await brain.send("go")
    await rec.wait_for(PermissionAsked)
    request_id = rec.of(PermissionAsked)[0].request_id
    await brain.answer_permission(request_id, PermissionAnswer("deny_stop"))
    await rec.wait_for(TurnEnded)

    assert claude_files.control_responses()[request_id]["response"] == {
        "behavior": "deny",
        "message": "The user denied this tool call.",
        "interrupt": True,
    }
    end = rec.of(TurnEnded)[0]
    # The user's stop, so it reads as a cancelled turn and not as a failure.
    assert (end.stop_reason, end.is_error) == ("cancelled", False)
    assert rec.of(AssistantText) == []
    assert brain.alive


async def test_each_request_is_answered_once(
    claude_files: FakeClaudeFiles, start_brain: StartBrain
) -> None:
    claude_files.scenario([BASH])
    brain, rec = await start_brain()
    await brain.send("go")
    await rec.wait_for(PermissionAsked)
    request_id = rec.of(PermissionAsked)[0].request_id
    await brain.answer_permission(request_id, PermissionAnswer("cancelled"))
    await brain.answer_permission(request_id, PermissionAnswer("allow_once"))
    await brain.answer_permission("no-such-request", PermissionAnswer("allow_once"))
    await rec.wait_for(TurnEnded)

    answers = [
        line["response"]
        for line in claude_files.stdin()
        if line.get("type") == "control_response"
        and line["response"]["request_id"] in (request_id, "no-such-request")
    ]
    assert [a["response"] for a in answers] == [{"behavior": "deny", "message": "cancelled"}]


async def test_withdrawn_request_is_cancelled_and_not_answered(
    claude_files: FakeClaudeFiles, start_brain: StartBrain
) -> None:
    claude_files.scenario([{**BASH, "cancel_after": 0.2}])
    brain, rec = await start_brain()
    await brain.send("go")
    await rec.wait_for(PermissionCancelled)
    request_id = rec.of(PermissionAsked)[0].request_id
    assert rec.of(PermissionCancelled)[0].request_id == request_id
    await brain.answer_permission(request_id, PermissionAnswer("allow_once"))
    await rec.wait_for(TurnEnded)
    assert request_id not in claude_files.control_responses()


async def test_hook_callbacks_and_unknown_requests_are_answered(
    claude_files: FakeClaudeFiles, start_brain: StartBrain
) -> None:
    claude_files.scenario(
        [
            {"control_request": "hook_callback", "fields": {"callback_id": "hook_0"}},
            {"control_request": "elicitation"},
            {"text": "after"},
        ]
    )
    brain, rec = await start_brain()
    await brain.send("go")
    await rec.wait_for(TurnEnded)
    replies = list(claude_files.control_responses().values())
    assert {"subtype": "success", "request_id": replies[0]["request_id"], "response": {}} in replies
    errors = [r for r in replies if r["subtype"] == "error"]
    assert len(errors) == 1 and "elicitation" in errors[0]["error"]
    assert rec.of(AssistantText)[0].text == "after"


async def test_interrupt_stops_the_turn_and_keeps_the_process(
    claude_files: FakeClaudeFiles, start_brain: StartBrain
) -> None:
    slow = {"text": "a long answer that takes a while", "chunks": 30, "delay": 0.1}
    claude_files.scenario([slow, {"text": "never said"}], [{"text": "next turn"}])
    brain, rec = await start_brain()
    await brain.send("go")
    await rec.wait_for(TextDelta)
    await brain.interrupt()
    await rec.wait_for(TurnEnded)

    end = rec.of(TurnEnded)[0]
    assert (end.stop_reason, end.is_error) == ("cancelled", False)
    assert len(rec.of(TextDelta)) < 30 and rec.of(AssistantText) == []
    assert {"subtype": "interrupt"} in claude_files.control_requests()
    await brain.send("again")
    await rec.wait_for(TurnEnded, count=2)
    assert [m.text for m in rec.of(AssistantText)] == ["next turn"]


async def test_crash_mid_turn_reports_error_and_unexpected_exit(
    claude_files: FakeClaudeFiles, start_brain: StartBrain
) -> None:
    claude_files.scenario([{"text": "partial"}, {"crash": 3, "stderr": "boom: out of cheese"}])
    brain, rec = await start_brain()
    await brain.send("go")
    await rec.wait_closed()

    assert _kinds(rec.events)[-2:] == ["BrainError", "BrainExited"]
    error = rec.of(BrainError)[0]
    assert "code 3" in error.message and "middle of a turn" in error.message
    assert "boom: out of cheese" in error.detail and error.fatal
    exited = rec.of(BrainExited)[0]
    assert (exited.exit_code, exited.expected) == (3, False)
    assert "boom: out of cheese" in exited.stderr_tail
    assert not brain.alive and rec.of(TurnEnded) == []


async def test_malformed_lines_are_skipped(
    claude_files: FakeClaudeFiles, start_brain: StartBrain
) -> None:
    claude_files.scenario([{"malformed": True}, {"text": "still here"}])
    brain, rec = await start_brain()
    await brain.send("go")
    await rec.wait_for(TurnEnded)
    assert [m.text for m in rec.of(AssistantText)] == ["still here"]
    assert rec.of(BrainError) == []


async def test_ten_megabyte_line_passes(
    claude_files: FakeClaudeFiles, start_brain: StartBrain
) -> None:
    claude_files.scenario([{"big_line_mb": 10}, {"text": "after the big one"}])
    brain, rec = await start_brain()
    await brain.send("go")
    await rec.wait_for(TurnEnded, timeout=30)
    texts = [m.text for m in rec.of(AssistantText)]
    assert len(texts[0]) == 10 * 1024 * 1024 and texts[1] == "after the big one"


async def test_resume_and_fork_use_the_stored_session(
    claude_files: FakeClaudeFiles, start_brain: StartBrain
) -> None:
    first, rec = await start_brain()
    await first.send("remember this")
    await rec.wait_for(TurnEnded)
    session = rec.of(BackendSession)[0].backend_session_id
    await first.stop()

    resumed, rec2 = await start_brain(backend_session_id=session)
    await resumed.send("what did I say?")
    await rec2.wait_for(TurnEnded)
    argv = claude_files.starts()[1]["argv"]
    assert f"--resume={session}" in argv
    assert not any(a.startswith("--session-id") for a in argv) and "--fork-session" not in argv
    assert rec2.of(BackendSession) == []  # same id: nothing new to store
    await resumed.stop()

    forked, rec3 = await start_brain(backend_session_id=session, fork=True)
    await forked.send("branch off")
    await rec3.wait_for(TurnEnded)
    argv = claude_files.starts()[2]["argv"]
    assert f"--resume={session}" in argv and "--fork-session" in argv
    new_id = rec3.of(BackendSession)[0].backend_session_id
    assert new_id and new_id != session and forked.backend_session_id == new_id


async def test_resume_of_unknown_session_fails_to_start(
    claude_files: FakeClaudeFiles, start_brain: StartBrain
) -> None:
    claude_files.scenario(unknown_resume=True)
    with pytest.raises(BrainStartError) as info:
        await start_brain(backend_session_id="0000-gone")
    assert "No conversation found with session ID: 0000-gone" in info.value.message
    assert "No conversation found" in info.value.detail


async def test_resume_failing_on_the_first_message_is_not_a_new_session(
    claude_files: FakeClaudeFiles, start_brain: StartBrain
) -> None:
    claude_files.scenario(unknown_resume="on_message")
    brain, rec = await start_brain(backend_session_id="0000-gone")
    await brain.send("hello?")
    await rec.wait_closed()

    assert _kinds(rec.events) == ["TurnEnded", "BrainError", "BrainExited"]
    end = rec.of(TurnEnded)[0]
    assert end.is_error and end.errors == ("No conversation found with session ID: 0000-gone",)
    assert "No conversation found" in rec.of(BrainError)[0].message
    exited = rec.of(BrainExited)[0]
    assert (exited.exit_code, exited.expected) == (1, False)


async def test_argv_carries_the_profile(
    claude_files: FakeClaudeFiles, start_brain: StartBrain
) -> None:
    servers = {"srv": {"command": "srv", "args": ["--x"]}}
    brain, _ = await start_brain(
        model="opus",
        permission_mode="plan",
        allowed_tools=("Read", "Bash(git add:*)"),
        disallowed_tools=("Edit(src/**)", "WebFetch"),
        mcp_servers=servers,
    )
    argv = claude_files.starts()[0]["argv"]

    def value(flag: str) -> str:
        return str(argv[argv.index(flag) + 1])

    assert value("--output-format") == value("--input-format") == "stream-json"
    assert {"--verbose", "--include-partial-messages", "--strict-mcp-config"} <= set(argv)
    assert value("--permission-prompt-tool") == "stdio"
    assert (value("--model"), value("--permission-mode")) == ("opus", "plan")
    assert value("--allowedTools") == "Read,Bash(git add:*)"
    assert value("--disallowedTools") == "Edit(src/**),WebFetch"
    # The servers reached it in a file, gone once the CLI was ready.
    given = claude_files.starts()[0]["mcp_config"]
    assert (given["content"], given["mode"], given["folder_mode"]) == (
        {"mcpServers": servers},
        0o600,
        0o700,
    )
    assert not Path(value("--mcp-config")).exists()
    assert f"--session-id={brain.backend_session_id}" in argv
    assert claude_files.starts()[0]["cwd"] == str(claude_files.cwd)


async def test_claudecode_is_not_passed_to_the_child(
    claude_files: FakeClaudeFiles, start_brain: StartBrain, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CLAUDECODE", "1")
    await start_brain(env={"FAKE_PROFILE_VAR": "from-profile"})
    env = claude_files.starts()[0]["env"]
    assert "CLAUDECODE" not in env and env["FAKE_PROFILE_VAR"] == "from-profile"


async def test_set_permission_mode(claude_files: FakeClaudeFiles, start_brain: StartBrain) -> None:
    brain, rec = await start_brain()
    await brain.set_permission_mode("acceptEdits")
    await rec.wait_for(ModeChanged)
    assert rec.of(ModeChanged)[0].mode == "acceptEdits"
    with pytest.raises(ValidationFailed):
        await brain.set_permission_mode("yolo")
    sent = [r for r in claude_files.control_requests() if r["subtype"] == "set_permission_mode"]
    assert sent == [{"subtype": "set_permission_mode", "mode": "acceptEdits"}]


async def test_stop_is_graceful_and_idempotent(
    claude_files: FakeClaudeFiles, start_brain: StartBrain
) -> None:
    brain, rec = await start_brain()
    pid = brain.pid
    assert pid is not None and os.getpgid(pid) == pid
    await brain.stop()
    await brain.stop()
    await rec.wait_closed()
    assert _kinds(rec.events) == ["BrainExited"]
    exited = rec.of(BrainExited)[0]
    assert (exited.exit_code, exited.expected) == (0, True)
    assert not brain.alive


async def test_stop_escalates_when_the_cli_ignores_eof(
    claude_files: FakeClaudeFiles, start_brain: StartBrain
) -> None:
    claude_files.scenario(ignore_eof=True)
    brain, rec = await start_brain()
    brain.close_timeout = 0.2
    await brain.stop()
    await rec.wait_closed()
    exited = rec.of(BrainExited)[0]
    assert (exited.exit_code, exited.expected) == (-signal.SIGTERM, True)
    assert rec.of(BrainError) == []


async def test_stderr_flood_during_a_turn_does_not_stall_it(
    claude_files: FakeClaudeFiles, start_brain: StartBrain
) -> None:
    claude_files.scenario([{"stderr_kb": 300}, {"text": "still talking"}], [{"crash": 2}])
    brain, rec = await start_brain()
    await brain.send("go")
    await rec.wait_for(TurnEnded)
    assert rec.of(AssistantText)[0].text == "still talking"
    await brain.send("now crash")
    await rec.wait_closed()
    detail = rec.of(BrainError)[0].detail
    assert len(detail) <= 64 * 1024 and "STDERR-END" in detail


async def test_missing_executable_names_the_install_command(
    claude_files: FakeClaudeFiles, start_brain: StartBrain
) -> None:
    with pytest.raises(AgentNotFoundError) as info:
        await start_brain(command=("claude-not-installed-here",))
    assert "npm i -g @anthropic-ai/claude-code" in info.value.message
