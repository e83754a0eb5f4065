"""The ACP brain through the real transport and SDK, against the fake ACP agent."""

from __future__ import annotations

import asyncio
import os
import shutil
import signal
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest
from acp.schema import AllowedOutcome, McpCapabilities
from acp.schema import PermissionOption as AcpPermissionOption

from app.brains import available_backends, check_profile, get_brain_class
from app.brains.acp.brain import AcpBrain
from app.brains.acp.client import AcpClient, acp_mcp_servers, app_options, permission_response
from app.brains.base import Capability, PermissionAnswer
from app.brains.catalog import CatalogError, load_catalog
from app.brains.events import (
    AssistantText,
    BackendSession,
    BrainError,
    BrainEvent,
    BrainExited,
    Commands,
    ModeChanged,
    PermissionAsked,
    PermissionCancelled,
    Plan,
    TextDelta,
    Thought,
    TitleChanged,
    ToolCall,
    ToolResult,
    TurnEnded,
    Usage,
)
from app.errors import AgentNotFoundError, BrainStartError, ValidationFailed
from tests.brains.conftest import EventRecorder
from tests.fakes.fake_acp_agent import DEFAULT_OPTIONS, FakeAcpFiles

StartAcp = Callable[..., Awaitable[tuple[AcpBrain, EventRecorder]]]
MODES = {"current": "auto", "available": ["auto", "default", "acceptEdits", "plan"]}
BASH = {"id": "t1", "title": "touch made.txt", "kind": "execute", "input": {"command": "touch"}}
GEMINI_OPTIONS = [
    ["proceed_always", "Always allow", "allow_always"],
    ["proceed_once", "Allow once", "allow_once"],
    ["cancel", "Cancel", "reject_once"],
]


def _kinds(events: list[BrainEvent]) -> list[str]:
    return [type(e).__name__ for e in events]


@pytest.fixture
def acp_files(tmp_path: Path) -> FakeAcpFiles:
    return FakeAcpFiles(tmp_path)


@pytest.fixture
async def start_acp(acp_files: FakeAcpFiles) -> AsyncIterator[StartAcp]:
    """Start a brain (``backend`` kwarg, default "acp") on the fake; stopped at teardown."""
    started: list[tuple[AcpBrain, EventRecorder]] = []

    async def start(backend: str = "acp", **overrides: Any) -> tuple[AcpBrain, EventRecorder]:
        brain_cls = get_brain_class(backend)
        assert issubclass(brain_cls, AcpBrain)
        brain = brain_cls(acp_files.config(**overrides))
        recorder = EventRecorder(brain)
        started.append((brain, recorder))
        await brain.start()
        return brain, recorder

    yield start
    for brain, recorder in started:
        await brain.stop()
        await recorder.cancel()


async def _turn(brain: AcpBrain, rec: EventRecorder, text: str = "go", n: int = 1) -> None:
    await brain.send(text)
    await rec.wait_for(TurnEnded, count=n)


# -- registry and catalog -------------------------------------------------------------------
async def test_catalog_rows_are_brains() -> None:
    backends = set(available_backends())
    acp_classes = {"claude-acp", "codex", "copilot", "gemini", "grok", "opencode", "pi", "qwen"}
    assert backends == {"acp", "claude", *acp_classes}
    gemini = get_brain_class("gemini")
    assert gemini is get_brain_class("gemini") and issubclass(gemini, AcpBrain)
    assert (gemini.name, gemini.label, gemini.executable) == ("gemini", "Gemini CLI", "gemini")
    assert gemini.default_argv == ("gemini", "--acp") and gemini.instructions_file == "GEMINI.md"
    assert gemini.mode_map["bypassPermissions"] == "yolo"
    assert get_brain_class("opencode").default_argv == ("opencode", "acp")
    assert get_brain_class("claude-acp").default_argv == ("claude-agent-acp",)
    assert get_brain_class("codex").catalog_env == {"NO_BROWSER": "1"}
    assert Capability.PER_SESSION_MCP in get_brain_class("pi").capabilities
    assert get_brain_class("acp").default_argv == ()


def test_check_profile_names_what_cannot_be_enforced() -> None:
    everything = {"has_mcp_servers": True, "has_disallowed_tools": True, "has_allowed_tools": True}
    assert check_profile("claude", **everything) == []
    # gemini ignores session MCP servers in a folder it does not trust: refused, with why.
    (problem,) = check_profile("gemini", **everything)
    assert problem.startswith("Gemini CLI cannot use per-session MCP servers: ")
    assert "trusts" in problem
    # pi asks, denies and takes MCP servers through Angelia's gate extension.
    assert check_profile("pi", **everything) == []
    # Grok Build starts the session's MCP servers and asks before acting.
    assert check_profile("grok", **everything) == []
    assert check_profile("pi", has_mcp_servers=False, has_disallowed_tools=False,
                         has_allowed_tools=False) == []  # fmt: skip


def test_catalog_rejects_malformed_rows() -> None:
    with pytest.raises(CatalogError, match="unknown fields"):
        load_catalog('[x]\nlabel = "X"\nargv = []\ninstall_hint = "h"\nargs = 1\n')
    with pytest.raises(CatalogError, match="argv"):
        load_catalog('[x]\nlabel = "X"\nargv = "x"\ninstall_hint = "h"\n')
    with pytest.raises(CatalogError, match="not a valid Capability"):
        load_catalog('[x]\nlabel = "X"\nargv = []\ninstall_hint = "h"\ncapabilities = ["fly"]\n')


# -- start-up ------------------------------------------------------------------------------
async def test_initialize_and_new_session(
    acp_files: FakeAcpFiles, start_acp: StartAcp, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CLAUDECODE", "1")
    monkeypatch.setenv("PROFILE_INHERITED", "from-parent")
    brain, rec = await start_acp(env={"PROFILE_VAR": "from-profile"})
    await rec.wait_for(BackendSession)

    init = acp_files.requests("initialize")[0]
    assert init["protocolVersion"] == 1
    assert init["clientInfo"]["name"] == "angelia" and init["clientInfo"]["version"]
    assert init["clientCapabilities"]["fs"] == {"readTextFile": True, "writeTextFile": True}
    assert not init["clientCapabilities"].get("terminal")
    assert acp_files.requests("session/new") == [{"cwd": str(acp_files.cwd), "mcpServers": []}]
    assert rec.of(BackendSession)[0].backend_session_id == "sess-1" == brain.session_id
    env = acp_files.starts()[0]["env"]
    assert "CLAUDECODE" not in env
    assert env["PROFILE_VAR"] == "from-profile" and env["PROFILE_INHERITED"] == "from-parent"
    assert brain.pid is not None and os.getpgid(brain.pid) == brain.pid


async def test_updates_before_session_new_returns_are_kept(
    acp_files: FakeAcpFiles, start_acp: StartAcp
) -> None:
    acp_files.scenario(early=[{"commands": ["init", "review"]}, {"title": "Early"}])
    _brain, rec = await start_acp()
    events = await rec.wait_for(TitleChanged)
    assert _kinds(events)[:3] == ["BackendSession", "Commands", "TitleChanged"]
    assert rec.of(Commands)[0].commands == (
        {"name": "init", "description": "the init command"},
        {"name": "review", "description": "the review command"},
    )


async def test_generic_acp_needs_a_command(acp_files: FakeAcpFiles) -> None:
    brain = get_brain_class("acp")(acp_files.config(command=()))
    with pytest.raises(BrainStartError, match="profile's command"):
        await brain.start()


async def test_missing_executable_names_the_install_command(
    acp_files: FakeAcpFiles, tmp_path: Path
) -> None:
    brain = get_brain_class("gemini")(acp_files.config(command=(), env={"PATH": str(tmp_path)}))
    with pytest.raises(AgentNotFoundError, match="npm i -g @google/gemini-cli"):
        await brain.start()


async def test_other_protocol_version_is_refused(
    acp_files: FakeAcpFiles, start_acp: StartAcp
) -> None:
    acp_files.scenario(protocol_version=2)
    with pytest.raises(BrainStartError, match="ACP version 2"):
        await start_acp()


async def test_login_required_says_so(acp_files: FakeAcpFiles, start_acp: StartAcp) -> None:
    acp_files.scenario(auth_required=True)
    with pytest.raises(BrainStartError, match=r"log in first \(fake login\)"):
        await start_acp()


# -- update kinds ------------------------------------------------------------------------
async def test_every_update_kind(acp_files: FakeAcpFiles, start_acp: StartAcp) -> None:
    edit = {
        "id": "e1",
        "title": "Edit a.txt",
        "kind": "edit",
        "locations": [f"{acp_files.cwd}/a.txt"],
    }
    diff = {"path": f"{acp_files.cwd}/a.txt", "old": "one\n", "new": "two\n"}
    select = {"id": "model", "name": "Model", "category": "model", "type": "select"}
    models = [{"value": "fast", "name": "Fast"}, {"value": "big", "name": "Big"}]
    acp_files.scenario(
        [
            {"thought": "let me "},
            {"thought": "think"},
            {"update": {"user": "echo of the prompt"}},
            {"text": "hello world", "chunks": 3, "message_id": "m1"},
            {"update": {"plan": [{"content": "edit", "priority": "high", "status": "pending"}]}},
            {"update": {"tool": {**edit, "input": {"path": "a.txt"}}}},
            {"update": {"tool_update": {"id": "e1", "status": "in_progress"}}},
            {"update": {"tool_update": {"id": "e1", "status": "completed", "diff": diff}}},
            {"update": {"usage": {"used": 1200, "size": 200000, "cost": 0.5}}},
            {"update": {"commands": ["init"]}},
            {"update": {"title": "Editing a.txt"}},
            {"update": {"mode": "plan"}},
            {"update": {"config": [{**select, "currentValue": "big", "options": models}]}},
            {"text": "done"},
        ]
    )
    brain, rec = await start_acp()
    await _turn(brain, rec)
    turn = rec.events[rec.events.index(rec.of(Thought)[0]) :]
    assert _kinds(turn) == [
        "Thought",
        "TextDelta",
        "TextDelta",
        "TextDelta",
        "Plan",
        "ToolCall",
        "ToolResult",
        "Usage",
        "Commands",
        "TitleChanged",
        "ModeChanged",
        "TextDelta",
        "AssistantText",
        "AssistantText",
        "TurnEnded",
    ]
    assert rec.of(Thought)[0].text == "let me think"
    first, second = rec.of(AssistantText)
    assert (first.text, first.message_id) == ("hello world", "m1")
    assert {d.message_id for d in rec.of(TextDelta)[:3]} == {"m1"}
    assert second.text == "done" and second.message_id != "m1"
    assert rec.of(Plan)[0].entries == (
        {"content": "edit", "priority": "high", "status": "pending"},
    )
    call = rec.of(ToolCall)[0]
    assert (call.tool_call_id, call.tool, call.title, call.tool_kind, call.input) == (
        "e1",
        "Edit a.txt",
        "Edit a.txt",
        "edit",
        {"path": "a.txt"},
    )
    result = rec.of(ToolResult)[0]
    assert result.output.splitlines()[-2:] == ["-one", "+two"]
    assert result.locations == (f"{acp_files.cwd}/a.txt",) and not result.is_error
    assert rec.of(Usage)[0] == Usage(used=1200, size=200000, cost_usd=0.5)
    assert rec.of(ModeChanged)[-1].mode == "plan"
    assert [o.current_value for o in brain.config_options] == ["big"]
    end = rec.of(TurnEnded)[0]
    assert (end.stop_reason, end.is_error, end.cost_usd, end.result) == (
        "end_turn",
        False,
        0.5,
        "done",
    )


async def test_tool_updates_merge_by_id(acp_files: FakeAcpFiles, start_acp: StartAcp) -> None:
    acp_files.scenario(
        [
            {"update": {"tool": {"id": "r1", "title": "Read", "kind": "read"}}},
            {"update": {"tool_update": {"id": "r1", "input": {"path": "x"}}}},
            {"update": {"tool_update": {"id": "r1", "title": "Read x", "locations": ["/p/x"]}}},
            {"update": {"tool_update": {"id": "r1", "status": "completed", "output": {"n": 1}}}},
            {"update": {"tool_update": {"id": "r1", "status": "completed", "content": "again"}}},
            {"update": {"tool": {"id": "f1", "title": "Fetch", "kind": "fetch"}}},
            {"update": {"tool_update": {"id": "f1", "status": "failed", "content": "404"}}},
        ]
    )
    brain, rec = await start_acp()
    await _turn(brain, rec)
    assert [c.tool_call_id for c in rec.of(ToolCall)] == ["r1", "f1"]
    assert rec.of(ToolCall)[0].input == {}
    read, fetch = rec.of(ToolResult)
    assert (read.output, read.locations, read.is_error) == ('{\n  "n": 1\n}', ("/p/x",), False)
    assert (fetch.output, fetch.is_error) == ("404", True)


async def test_stop_reasons(acp_files: FakeAcpFiles, start_acp: StartAcp) -> None:
    reasons = ["refusal", "max_tokens", "max_turn_requests", "end_turn"]
    acp_files.scenario(*([{"text": "partial"}, {"stop_reason": r}] for r in reasons))
    brain, rec = await start_acp()
    for n in range(1, len(reasons) + 1):
        await _turn(brain, rec, n=n)
    ends = rec.of(TurnEnded)
    assert [e.stop_reason for e in ends] == reasons
    assert [e.is_error for e in ends] == [True, True, True, False]
    assert "refused this prompt" in ends[0].errors[0] and ends[3].errors == ()
    assert [e.result for e in ends] == ["partial"] * 4


async def test_prompt_error_ends_the_turn(acp_files: FakeAcpFiles, start_acp: StartAcp) -> None:
    acp_files.scenario([{"error": {"code": -32000, "message": "Authentication required"}}])
    brain, rec = await start_acp()
    await _turn(brain, rec)
    end = rec.of(TurnEnded)[0]
    assert (end.stop_reason, end.is_error) == ("error", True)
    assert "log in first" in rec.of(BrainError)[0].message
    assert brain.alive


async def test_prompts_are_queued(acp_files: FakeAcpFiles, start_acp: StartAcp) -> None:
    acp_files.scenario([{"sleep": 0.2}, {"text": "one"}], [{"text": "two"}])
    brain, rec = await start_acp()
    await brain.send("first")
    await brain.send("second")
    await rec.wait_for(TurnEnded, count=2)
    assert [m.text for m in rec.of(AssistantText)] == ["one", "two"]
    prompts = acp_files.requests("session/prompt")
    assert [p["prompt"][0]["text"] for p in prompts] == ["first", "second"]


@pytest.mark.parametrize("embedded", [True, False])
async def test_mentioned_files_go_as_resources_only_to_agents_that_take_them(
    acp_files: FakeAcpFiles, start_acp: StartAcp, tmp_path: Path, embedded: bool
) -> None:
    (acp_files.cwd / "docs").mkdir()
    (acp_files.cwd / "docs" / "notes.txt").write_text("the notes\n")
    (acp_files.cwd / "image.bin").write_bytes(b"\0\1\2")
    (tmp_path / "outside.txt").write_text("private\n")
    (acp_files.cwd / "out").symlink_to(tmp_path / "outside.txt")
    acp_files.scenario(prompt_capabilities={"embeddedContext": embedded})
    brain, rec = await start_acp()
    text = "see @docs/notes.txt, @image.bin @out @../outside.txt @/etc/hostname @missing"
    await _turn(brain, rec, text)
    prompt = acp_files.requests("session/prompt")[0]["prompt"]
    # The path always stays in the text; only a text file inside the folder is embedded.
    assert prompt[0] == {"type": "text", "text": text}
    resources = [block["resource"] for block in prompt if block["type"] == "resource"]
    if embedded:
        uri = (acp_files.cwd / "docs" / "notes.txt").resolve().as_uri()
        assert resources == [{"uri": uri, "text": "the notes\n"}]
    else:
        assert resources == []


# -- permissions ---------------------------------------------------------------------------
def _options(rows: list[list[str]]) -> list[AcpPermissionOption]:
    return [
        AcpPermissionOption.model_validate({"optionId": i, "name": n, "kind": k})
        for i, n, k in rows
    ]


@pytest.mark.parametrize(
    ("rows", "choice", "expected"),
    [
        (DEFAULT_OPTIONS, "allow_once", "allow-once"),
        (DEFAULT_OPTIONS, "allow_always", "allow-always"),
        (DEFAULT_OPTIONS, "deny", "reject-once"),
        (DEFAULT_OPTIONS, "deny_stop", "reject-once"),
        (DEFAULT_OPTIONS, "cancelled", None),
        (GEMINI_OPTIONS, "allow_once", "proceed_once"),
        (GEMINI_OPTIONS, "allow_always", "proceed_always"),
        (GEMINI_OPTIONS, "deny", "cancel"),
        ([["always", "Always", "allow_always"], ["no", "No", "reject_always"]], "allow_once",
         "always"),
        ([["once", "Yes", "allow_once"], ["no", "No", "reject_always"]], "allow_always", "once"),
        ([["once", "Yes", "allow_once"], ["no", "No", "reject_always"]], "deny", "no"),
        ([["once", "Yes", "allow_once"]], "deny", None),
        ([["no", "No", "reject_once"]], "allow_once", None),
    ],
)  # fmt: skip
def test_answers_pick_the_matching_option(
    rows: list[list[str]], choice: Any, expected: str | None
) -> None:
    response = permission_response(_options(rows), PermissionAnswer(choice))
    outcome = response.outcome
    if expected is None:
        assert outcome.outcome == "cancelled"
    else:
        assert isinstance(outcome, AllowedOutcome) and outcome.option_id == expected


def test_options_keep_the_agents_order() -> None:
    mapped = app_options(_options(GEMINI_OPTIONS + [["never", "Never", "reject_always"]]))
    assert [(o.option_id, o.label, o.choice) for o in mapped] == [
        ("proceed_always", "Always allow", "allow_always"),
        ("proceed_once", "Allow once", "allow_once"),
        ("cancel", "Cancel", "deny"),
        ("never", "Never", "deny"),
    ]


@pytest.mark.parametrize(
    ("options", "choice", "expected"),
    [
        (None, "allow_once", "allow-once"),
        (GEMINI_OPTIONS, "allow_once", "proceed_once"),
        ([["once", "Yes", "allow_once"]], "deny", None),
    ],
)
async def test_permission_round_trip(
    acp_files: FakeAcpFiles,
    start_acp: StartAcp,
    options: list[list[str]] | None,
    choice: Any,
    expected: str | None,
) -> None:
    permission = {"options": options} if options else True
    acp_files.scenario([{"tool": BASH, "permission": permission}, {"text": "after"}])
    brain, rec = await start_acp()
    await brain.send("go")
    await rec.wait_for(PermissionAsked)
    asked = rec.of(PermissionAsked)[0]
    assert [o.option_id for o in asked.options] == [w[0] for w in options or DEFAULT_OPTIONS]
    # Named in Claude Code's vocabulary so the same permission rules apply to ACP agents.
    assert (asked.tool, asked.title, asked.tool_call_id) == ("Bash", "touch made.txt", "t1")
    assert asked.input == {"command": "touch"}
    assert rec.of(ToolCall)[0].tool_call_id == "t1"

    await brain.answer_permission(asked.request_id, PermissionAnswer(choice))
    await rec.wait_for(TurnEnded)
    outcome = acp_files.permission_outcomes()[0]
    if expected is None:
        assert outcome["outcome"] == "cancelled"
        assert rec.of(TurnEnded)[0].stop_reason == "cancelled"
    else:
        assert (outcome["outcome"], outcome["optionId"]) == ("selected", expected)
        assert rec.of(ToolResult)[0].output == "ran"


async def test_explicit_option_id_wins(acp_files: FakeAcpFiles, start_acp: StartAcp) -> None:
    acp_files.scenario([{"tool": BASH, "permission": True}])
    brain, rec = await start_acp()
    await brain.send("go")
    await rec.wait_for(PermissionAsked)
    asked = rec.of(PermissionAsked)[0]
    await brain.answer_permission(
        asked.request_id, PermissionAnswer("allow_once", option_id="allow-always")
    )
    await rec.wait_for(TurnEnded)
    assert acp_files.permission_outcomes()[0]["optionId"] == "allow-always"


async def test_each_question_is_answered_once(acp_files: FakeAcpFiles, start_acp: StartAcp) -> None:
    acp_files.scenario([{"tool": BASH, "permission": True}])
    brain, rec = await start_acp()
    await brain.send("go")
    await rec.wait_for(PermissionAsked)
    request_id = rec.of(PermissionAsked)[0].request_id
    await brain.answer_permission(request_id, PermissionAnswer("deny"))
    await brain.answer_permission(request_id, PermissionAnswer("allow_once"))
    await brain.answer_permission("no-such-request", PermissionAnswer("allow_once"))
    await rec.wait_for(TurnEnded)
    answers = acp_files.answers()
    assert [a["result"]["outcome"]["optionId"] for a in answers] == ["reject-once"]
    # The agent numbers its own requests from 0, like real agents do.
    assert answers[0]["id"] == 0
    assert rec.of(ToolResult)[0].is_error


async def test_deny_stop_rejects_then_cancels(acp_files: FakeAcpFiles, start_acp: StartAcp) -> None:
    acp_files.scenario([{"tool": BASH, "permission": True}, {"sleep": 30}, {"text": "never"}])
    brain, rec = await start_acp()
    await brain.send("go")
    await rec.wait_for(PermissionAsked)
    await brain.answer_permission(
        rec.of(PermissionAsked)[0].request_id, PermissionAnswer("deny_stop")
    )
    await rec.wait_for(TurnEnded)
    assert acp_files.permission_outcomes()[0]["optionId"] == "reject-once"
    assert acp_files.requests("session/cancel") == [{"sessionId": "sess-1"}]
    assert rec.of(TurnEnded)[0].stop_reason == "cancelled"
    assert rec.of(AssistantText) == []


# -- cancellation --------------------------------------------------------------------------
async def test_interrupt_cancels_open_questions(
    acp_files: FakeAcpFiles, start_acp: StartAcp
) -> None:
    acp_files.scenario([{"tool": BASH, "permission": True}, {"text": "never"}])
    brain, rec = await start_acp()
    await brain.send("go")
    await rec.wait_for(PermissionAsked)
    request_id = rec.of(PermissionAsked)[0].request_id
    await brain.interrupt()
    await rec.wait_for(TurnEnded)
    assert rec.of(PermissionCancelled)[0].request_id == request_id
    assert [o["outcome"] for o in acp_files.permission_outcomes()] == ["cancelled"]
    assert rec.of(TurnEnded)[0].stop_reason == "cancelled"
    await brain.answer_permission(request_id, PermissionAnswer("allow_once"))
    assert len(acp_files.answers()) == 1
    assert brain.alive


async def test_late_updates_after_cancel_are_kept(
    acp_files: FakeAcpFiles, start_acp: StartAcp
) -> None:
    late = [{"tool_update": {"id": "t1", "status": "failed", "content": "killed"}}]
    acp_files.scenario(
        [
            {"update": {"tool": {**BASH, "status": "in_progress"}}},
            {"text": "working"},
            {"sleep": 30, "late": late},
        ],
        [{"text": "next turn"}],
    )
    brain, rec = await start_acp()
    await brain.send("go")
    await rec.wait_for(TextDelta)
    await brain.interrupt()
    await brain.interrupt()
    await rec.wait_for(ToolResult)
    end = rec.of(TurnEnded)[0]
    assert end.stop_reason == "cancelled" and end.result == "working"
    result = rec.of(ToolResult)[0]
    assert (result.tool_call_id, result.output, result.is_error) == ("t1", "killed", True)
    assert rec.events.index(result) > rec.events.index(end)
    assert len(acp_files.requests("session/cancel")) == 1
    await _turn(brain, rec, n=2)
    assert rec.of(AssistantText)[-1].text == "next turn"


async def test_an_agent_deaf_to_cancel_is_abandoned(
    acp_files: FakeAcpFiles, start_acp: StartAcp
) -> None:
    acp_files.scenario([{"sleep": 30, "deaf": True}])
    brain, rec = await start_acp()
    brain.cancel_timeout = 0.3
    await brain.send("go")
    await asyncio.sleep(0.2)
    await brain.interrupt()
    await rec.wait_for(TurnEnded)
    end = rec.of(TurnEnded)[0]
    assert end.stop_reason == "cancelled" and "did not confirm the cancel" in end.errors[0]


# -- files -----------------------------------------------------------------------------------
async def test_files_inside_the_cwd_are_served(
    acp_files: FakeAcpFiles, start_acp: StartAcp
) -> None:
    cwd = acp_files.cwd
    (cwd / "a.txt").write_text("1\n2\n3\n4\n")
    acp_files.scenario(
        [
            {"read": f"{cwd}/a.txt", "line": 2, "limit": 2},
            {"read": f"{cwd}/sub/../a.txt"},
            {"write": f"{cwd}/new/dir/b.txt", "content": "hello"},
            {"read": f"{cwd}/missing.txt"},
        ]
    )
    brain, rec = await start_acp()
    await _turn(brain, rec)
    served = acp_files.fs()
    assert served[0] == {"read": f"{cwd}/a.txt", "content": "2\n3\n"}
    assert served[1]["content"] == "1\n2\n3\n4\n"
    assert served[2] == {"write": f"{cwd}/new/dir/b.txt", "ok": True}
    assert (cwd / "new" / "dir" / "b.txt").read_text() == "hello"
    assert served[3]["error"] == -32002
    assert rec.of(BrainError) == []


async def test_files_outside_the_cwd_are_refused(
    acp_files: FakeAcpFiles, start_acp: StartAcp, tmp_path: Path
) -> None:
    secret = tmp_path / "secret.txt"
    secret.write_text("top secret")
    cwd = acp_files.cwd
    (cwd / "link").symlink_to(tmp_path)
    (cwd / "evil.txt").symlink_to(secret)
    steps = [
        {"read": str(secret)},
        {"read": f"{cwd}/../secret.txt"},
        {"read": f"{cwd}/link/secret.txt"},
        {"read": "a.txt"},
        {"write": f"{cwd}/evil.txt", "content": "pwned"},
        {"write": f"{cwd}/link/new.txt", "content": "pwned"},
    ]
    acp_files.scenario([*steps, {"text": "carried on"}])
    brain, rec = await start_acp()
    await _turn(brain, rec)
    served = acp_files.fs()
    assert [s["error"] for s in served] == [-32602] * len(steps)
    assert all("Refused" in s["message"] and "content" not in s for s in served)
    assert "not absolute" in served[3]["message"]
    assert secret.read_text() == "top secret" and not (tmp_path / "new.txt").exists()
    errors = rec.of(BrainError)
    assert len(errors) == len(steps)
    assert all(e.message.startswith("Refused to") and not e.fatal for e in errors)
    assert rec.of(AssistantText)[0].text == "carried on"


async def test_terminals_are_not_offered(acp_files: FakeAcpFiles) -> None:
    brain = AcpBrain(acp_files.config())
    client = AcpClient(brain, str(acp_files.cwd))
    with pytest.raises(Exception, match="Method not found"):
        await client.create_terminal(session_id="s", command="ls")


# -- framing ---------------------------------------------------------------------------------
async def test_huge_line_and_stdout_noise(acp_files: FakeAcpFiles, start_acp: StartAcp) -> None:
    acp_files.scenario(
        [{"noise": "Migrating database... done"}, {"big_mb": 5}, {"noise": "{broken"}],
        [{"text": "still here"}],
        stderr="startup noise on stderr",
    )
    brain, rec = await start_acp()
    await _turn(brain, rec)
    big = rec.of(AssistantText)[0]
    assert len(big.text) == 5 * 1024 * 1024 and big.message_id == "big"
    await _turn(brain, rec, n=2)
    assert rec.of(AssistantText)[-1].text == "still here"
    assert rec.of(BrainError) == []


async def test_stderr_flood_does_not_stall(acp_files: FakeAcpFiles, start_acp: StartAcp) -> None:
    acp_files.scenario([{"stderr_kb": 300, "stderr": "STDERR-END"}, {"text": "ok"}])
    brain, rec = await start_acp()
    await _turn(brain, rec)
    assert rec.of(AssistantText)[0].text == "ok"


# -- resume ----------------------------------------------------------------------------------
HISTORY = [
    {"user": "earlier question"},
    {"text": "earlier answer"},
    {"tool": {"id": "old", "title": "old tool", "status": "completed"}},
    {"thought": "old thought"},
    {"commands": ["init"]},
    {"mode": "plan"},
]


async def test_resume_with_load_replays_nothing(
    acp_files: FakeAcpFiles, start_acp: StartAcp
) -> None:
    modes = {**MODES, "current": "plan"}
    acp_files.scenario([{"text": "fresh"}], load_session=True, history=HISTORY, modes=modes)
    brain, rec = await start_acp(backend_session_id="sess-old", permission_mode="plan")
    assert acp_files.requests("session/load") == [
        {"sessionId": "sess-old", "cwd": str(acp_files.cwd), "mcpServers": []}
    ]
    assert "session/new" not in acp_files.methods()
    # The replayed mode is current already, so no switch is needed.
    assert acp_files.requests("session/set_mode") == []
    await _turn(brain, rec)
    assert _kinds(rec.events) == ["TextDelta", "AssistantText", "TurnEnded"]
    assert brain.session_id == "sess-old"


async def test_resume_prefers_session_resume(acp_files: FakeAcpFiles, start_acp: StartAcp) -> None:
    acp_files.scenario(load_session=True, resume=True, history=HISTORY)
    brain, rec = await start_acp(backend_session_id="sess-old")
    assert acp_files.requests("session/resume") == [
        {"sessionId": "sess-old", "cwd": str(acp_files.cwd), "mcpServers": []}
    ]
    assert "session/load" not in acp_files.methods()
    await _turn(brain, rec)
    assert rec.of(BackendSession) == []


async def test_resume_without_support_fails_clearly(
    acp_files: FakeAcpFiles, start_acp: StartAcp
) -> None:
    with pytest.raises(BrainStartError, match="neither session/resume nor session/load"):
        await start_acp(backend_session_id="sess-old")


async def test_resume_of_an_unknown_session(acp_files: FakeAcpFiles, start_acp: StartAcp) -> None:
    acp_files.scenario(load_session=True, unknown_sessions=True)
    with pytest.raises(BrainStartError, match="cannot continue session sess-old"):
        await start_acp(backend_session_id="sess-old")


# -- modes and config options -----------------------------------------------------------------
@pytest.mark.parametrize("as_config_option", [False, True])
async def test_mode_is_switched_at_start(
    acp_files: FakeAcpFiles, start_acp: StartAcp, as_config_option: bool
) -> None:
    acp_files.scenario(modes=MODES, mode_config=as_config_option)
    brain, rec = await start_acp()
    if as_config_option:
        assert acp_files.requests("session/set_config_option") == [
            {"configId": "mode", "sessionId": "sess-1", "value": "default"}
        ]
    else:
        assert acp_files.requests("session/set_mode") == [
            {"sessionId": "sess-1", "modeId": "default"}
        ]
    assert brain.current_mode == "default"
    assert brain.available_modes == tuple(MODES["available"])


async def test_set_permission_mode_mid_session(
    acp_files: FakeAcpFiles, start_acp: StartAcp
) -> None:
    acp_files.scenario(modes=MODES)
    brain, rec = await start_acp()
    await brain.set_permission_mode("acceptEdits")
    await rec.wait_for(lambda e: isinstance(e, ModeChanged) and e.mode == "acceptEdits")
    assert acp_files.requests("session/set_mode")[-1]["modeId"] == "acceptEdits"
    # A mode the agent lacks but the app keeps: the agent asks in its default mode, and
    # its report of that switch does not replace the session's mode.
    await brain.set_permission_mode("bypassPermissions")
    assert acp_files.requests("session/set_mode")[-1]["modeId"] == "default"
    await brain.set_permission_mode("plan")
    await rec.wait_for(lambda e: isinstance(e, ModeChanged) and e.mode == "plan")
    assert [e.mode for e in rec.of(ModeChanged)] == ["default", "acceptEdits", "plan"]


async def test_catalog_modes_are_translated(acp_files: FakeAcpFiles, start_acp: StartAcp) -> None:
    acp_files.scenario(modes={"current": "default", "available": ["default", "autoEdit", "yolo"]})
    brain, rec = await start_acp("gemini", command=acp_files.command, permission_mode="acceptEdits")
    assert acp_files.requests("session/set_mode") == [{"sessionId": "sess-1", "modeId": "autoEdit"}]
    await brain.set_permission_mode("bypassPermissions")
    assert acp_files.requests("session/set_mode")[-1]["modeId"] == "yolo"
    # Reported back under the app's own name.
    await rec.wait_for(lambda e: isinstance(e, ModeChanged) and e.mode == "bypassPermissions")


async def test_agent_without_modes(acp_files: FakeAcpFiles, start_acp: StartAcp) -> None:
    brain, _rec = await start_acp(permission_mode="plan")
    assert "session/set_mode" not in acp_files.methods()
    with pytest.raises(ValidationFailed, match="its modes: none"):
        await brain.set_permission_mode("plan")


async def test_profile_model_goes_through_config_options(
    acp_files: FakeAcpFiles, start_acp: StartAcp
) -> None:
    models = {
        "id": "model",
        "name": "Model",
        "category": "model",
        "type": "select",
        "currentValue": "fast",
        "options": [{"value": "fast", "name": "Fast"}, {"value": "big", "name": "Big"}],
    }
    acp_files.scenario(config_options=[models])
    brain, rec = await start_acp(model="big")
    assert acp_files.requests("session/set_config_option") == [
        {"configId": "model", "sessionId": "sess-1", "value": "big"}
    ]
    await brain.stop()
    brain, rec = await start_acp(model="huge")
    assert "has no model 'huge'" in rec.of(BrainError)[0].message


async def test_a_model_or_effort_the_agent_cannot_take_is_said_not_dropped(
    acp_files: FakeAcpFiles, start_acp: StartAcp
) -> None:
    brain, rec = await start_acp(model="big", reasoning_effort="high")
    messages = [e.message for e in rec.of(BrainError)]
    agent = "ACP agent (your command)"
    assert messages == [
        f"{agent} offers no model choice, so the profile's model 'big' is not used.",
        f"{agent} offers no reasoning effort choice, so the profile's reasoning effort "
        "'high' is not used.",
    ], messages
    assert brain.alive


# -- MCP servers -------------------------------------------------------------------------------
async def test_mcp_servers_are_converted(acp_files: FakeAcpFiles, start_acp: StartAcp) -> None:
    acp_files.scenario(mcp_http=True)
    servers = {
        "files": {"command": "python3", "args": ["-m", "srv"], "env": {"TOKEN": "t"}},
        "web": {"type": "http", "url": "http://127.0.0.1:1/mcp", "headers": {"X-Key": "k"}},
    }
    await start_acp(mcp_servers=servers)
    sent = acp_files.requests("session/new")[0]["mcpServers"]
    assert sent == [
        {
            "name": "files",
            "command": shutil.which("python3"),
            "args": ["-m", "srv"],
            "env": [{"name": "TOKEN", "value": "t"}],
        },
        {
            "type": "http",
            "name": "web",
            "url": "http://127.0.0.1:1/mcp",
            "headers": [{"name": "X-Key", "value": "k"}],
        },
    ]


@pytest.mark.parametrize("kind", ["http", "sse"])
def test_remote_mcp_needs_the_agents_capability(kind: str) -> None:
    servers = {"web": {"type": kind, "url": "http://127.0.0.1:1/mcp"}}
    with pytest.raises(BrainStartError, match=f"cannot use the {kind} MCP server 'web'"):
        acp_mcp_servers(servers, McpCapabilities(), agent="Gemini CLI")
    allowed = acp_mcp_servers(servers, McpCapabilities(**{kind: True}), agent="Gemini CLI")
    assert allowed[0].type == kind


@pytest.mark.parametrize(
    ("spec", "problem"),
    [({"args": []}, "has no command"), ({"type": "ws"}, "type 'ws'"), ("npx", "not an object")],
)
def test_malformed_mcp_servers(spec: Any, problem: str) -> None:
    with pytest.raises(BrainStartError, match=problem):
        acp_mcp_servers({"bad": spec}, McpCapabilities(), agent="x")


async def test_start_refuses_mcp_the_agent_cannot_use(
    acp_files: FakeAcpFiles, start_acp: StartAcp
) -> None:
    servers = {"web": {"type": "http", "url": "http://127.0.0.1:1/mcp"}}
    with pytest.raises(BrainStartError, match="cannot use the http MCP server 'web'"):
        await start_acp(mcp_servers=servers)
    assert "session/new" not in acp_files.methods()


# -- exits -------------------------------------------------------------------------------------
async def test_crash_mid_turn_reports_stderr(acp_files: FakeAcpFiles, start_acp: StartAcp) -> None:
    acp_files.scenario([{"text": "partial"}, {"crash": 3, "stderr": "fatal: out of tokens"}])
    brain, rec = await start_acp()
    await brain.send("go")
    await rec.wait_closed()
    error = rec.of(BrainError)[0]
    assert error.fatal and "exited with code 3 in the middle of a turn" in error.message
    assert "fatal: out of tokens" in error.detail
    exited = rec.of(BrainExited)[0]
    assert (exited.exit_code, exited.expected) == (3, False)
    assert "fatal: out of tokens" in exited.stderr_tail
    assert rec.of(AssistantText)[0].text == "partial"
    assert rec.of(TurnEnded) == []
    with pytest.raises(Exception, match="not running"):
        await brain.send("again")


async def test_killed_agent_is_an_unexpected_exit(
    acp_files: FakeAcpFiles, start_acp: StartAcp
) -> None:
    brain, rec = await start_acp()
    assert brain.pid is not None
    os.kill(brain.pid, signal.SIGKILL)
    await rec.wait_closed()
    exited = rec.of(BrainExited)[0]
    assert (exited.exit_code, exited.expected) == (-signal.SIGKILL, False)
    assert "killed by SIGKILL" in rec.of(BrainError)[0].message


async def test_stop_during_a_question_is_clean(
    acp_files: FakeAcpFiles, start_acp: StartAcp
) -> None:
    acp_files.scenario([{"tool": BASH, "permission": True}])
    brain, rec = await start_acp()
    await brain.send("go")
    await rec.wait_for(PermissionAsked)
    await brain.stop()
    await rec.wait_closed()
    assert rec.of(PermissionCancelled)[0].request_id == rec.of(PermissionAsked)[0].request_id
    assert rec.of(BrainError) == []
    assert rec.of(BrainExited)[0].expected


async def test_exit_during_start_reports_stderr(
    acp_files: FakeAcpFiles, start_acp: StartAcp
) -> None:
    acp_files.scenario(stderr="cannot open config")
    crashing = ("sh", "-c", "echo 'cannot open config' >&2; exit 4")
    with pytest.raises(BrainStartError, match="exited with code 4") as info:
        await start_acp(command=crashing)
    assert "cannot open config" in info.value.detail
