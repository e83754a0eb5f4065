"""The real Claude Code CLI over stream-json: the interactive parts of its wire protocol.

Questions to the user (AskUserQuestion), plan mode and its approval (ExitPlanMode), subagents
in the foreground and the background, model switching and other control requests, file
rewind with checkpointing, image input, and user messages sent while a turn runs. Each test
drives the raw CLI against the fake model server and asserts the exact shapes a host has to
handle, as CLI 2.1.332 produces them.
"""

from __future__ import annotations

import base64
import itertools
import re
import struct
import zlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.fakes.fake_model_server import FakeModelServer, request_images
from tests.real.test_real_claude_raw import ClaudeProcess, Msg, PermissionAnswer, allow

pytestmark = pytest.mark.real_cli

_request_ids = itertools.count(1)


# ----------------------------------------------------------------------------- driving


def user_message(content: str | list[Msg], uuid: str | None = None) -> Msg:
    message: Msg = {
        "type": "user",
        "message": {"role": "user", "content": content},
        "parent_tool_use_id": None,
        "session_id": "",
    }
    if uuid is not None:
        message["uuid"] = uuid
    return message


def reply(request_id: str, body: Msg) -> Msg:
    return {
        "type": "control_response",
        "response": {"subtype": "success", "request_id": request_id, "response": body},
    }


async def collect(
    claude: ClaudeProcess, answer: PermissionAnswer, done: Callable[[list[Msg]], bool]
) -> list[Msg]:
    """Read until ``done(messages)``, answering can_use_tool with ``answer`` and hooks with {}."""
    messages: list[Msg] = []
    while not done(messages):
        msg = await claude.read()
        messages.append(msg)
        if msg.get("type") == "control_request":
            request = msg["request"]
            body = answer(request) if request.get("subtype") == "can_use_tool" else {}
            await claude.send(reply(msg["request_id"], body))
    return messages


def results_seen(n: int) -> Callable[[list[Msg]], bool]:
    return lambda messages: len(of_type(messages, "result")) >= n


async def turn(
    claude: ClaudeProcess,
    content: str | list[Msg],
    answer: PermissionAnswer = allow,
    *,
    uuid: str | None = None,
) -> list[Msg]:
    """One user message, then everything up to its ``result``."""
    await claude.send(user_message(content, uuid))
    return await collect(claude, answer, results_seen(1))


async def control(claude: ClaudeProcess, request: Msg) -> Msg:
    """Send a control request; return the ``response`` envelope of its control_response."""
    request_id = f"req_test_{next(_request_ids)}"
    await claude.send({"type": "control_request", "request_id": request_id, "request": request})
    while True:
        msg = await claude.read()
        response = msg.get("response") if msg.get("type") == "control_response" else None
        if isinstance(response, dict) and response.get("request_id") == request_id:
            return response


def success(response: Msg) -> Msg:
    assert response["subtype"] == "success", response
    body: Msg = response["response"]
    return body


def write_rule(match: str, path: Path | str, content: str) -> Msg:
    """A fake-model rule: on ``match`` the model writes ``content`` to ``path``."""
    return {
        "match": match,
        "tool": "Write",
        "input": {"file_path": str(path), "content": content},
    }


def answer_with(body: Msg) -> PermissionAnswer:
    return lambda request: body


def deny_with(message: str) -> PermissionAnswer:
    return answer_with({"behavior": "deny", "message": message})


# ----------------------------------------------------------------------------- reading


def of_type(messages: list[Msg], kind: str, subtype: str | None = None) -> list[Msg]:
    return [
        m
        for m in messages
        if m.get("type") == kind and (subtype is None or m.get("subtype") == subtype)
    ]


def permission_requests(messages: list[Msg]) -> list[Msg]:
    return [
        m["request"]
        for m in of_type(messages, "control_request")
        if m["request"].get("subtype") == "can_use_tool"
    ]


def blocks(message: Msg, kind: str) -> list[Msg]:
    content = message["message"]["content"]
    return [b for b in content if b.get("type") == kind] if isinstance(content, list) else []


def tool_uses(messages: list[Msg], name: str) -> list[Msg]:
    return [
        b
        for m in of_type(messages, "assistant")
        for b in blocks(m, "tool_use")
        if b["name"] == name
    ]


def tool_result_line(messages: list[Msg], tool_use_id: str) -> Msg:
    """The ``user`` line carrying the result of ``tool_use_id``."""
    for m in of_type(messages, "user"):
        if any(b["tool_use_id"] == tool_use_id for b in blocks(m, "tool_result")):
            return m
    raise AssertionError(f"no tool_result for {tool_use_id}")


def tool_result(messages: list[Msg], tool_use_id: str) -> Msg:
    line = tool_result_line(messages, tool_use_id)
    return next(b for b in blocks(line, "tool_result") if b["tool_use_id"] == tool_use_id)


def mode_changes(messages: list[Msg]) -> list[str]:
    return [
        m["permissionMode"] for m in of_type(messages, "system", "status") if "permissionMode" in m
    ]


def last_user_content(fake: FakeModelServer, why: str | None = None) -> Any:
    """The content of the last user message in the newest model request (answered for ``why``)."""
    entries = [e for e in fake.message_requests() if why is None or e["reply"]["why"] == why]
    assert entries, [e["reply"] for e in fake.message_requests()]
    users = [m for m in entries[-1]["body"]["messages"] if m.get("role") == "user"]
    return users[-1]["content"]


def without_cache_control(content: Any) -> Any:
    """Request blocks as sent, minus the ``cache_control`` marks the CLI adds to the last one."""
    if not isinstance(content, list):
        return content
    return [{k: v for k, v in b.items() if k != "cache_control"} for b in content]


# ------------------------------------------------------------------- AskUserQuestion


def question(text: str, header: str, labels: list[str], multi: bool) -> Msg:
    """One entry of AskUserQuestion's ``questions``, as the model writes it."""
    options = [{"label": label, "description": label.lower()} for label in labels]
    return {"question": text, "header": header, "options": options, "multiSelect": multi}


COLOR = question("Which color?", "Color", ["Red", "Blue"], multi=False)
TOPPINGS = question("Which toppings?", "Toppings", ["Cheese", "Ham", "Egg"], multi=True)


def answering(answers: dict[str, str]) -> PermissionAnswer:
    return lambda request: {
        "behavior": "allow",
        "updatedInput": {**request["input"], "answers": answers},
    }


async def test_ask_user_question_is_answered_through_updated_input(
    claude_bin: Path, claude_env: dict[str, str], fake_model: FakeModelServer, project_dir: Path
) -> None:
    fake_model.set_rules(
        {
            "rules": [
                {"match": "ask color", "tool": "AskUserQuestion", "input": {"questions": [COLOR]}},
                {
                    "match": "ask toppings",
                    "tool": "AskUserQuestion",
                    "input": {"questions": [TOPPINGS]},
                },
            ]
        }
    )
    claude = await ClaudeProcess.start(claude_bin, claude_env, project_dir)
    try:
        # One choice: the request carries the questions; the answer rides on updatedInput.
        messages = await turn(claude, "ask color", answering({"Which color?": "Red"}))
        (call,) = tool_uses(messages, "AskUserQuestion")
        assert permission_requests(messages) == [
            {
                "subtype": "can_use_tool",
                "tool_name": "AskUserQuestion",
                "display_name": "AskUserQuestion",
                "input": {"questions": [COLOR]},
                "tool_use_id": call["id"],
                "requires_user_interaction": True,
            }
        ]
        answered = (
            'Your questions have been answered: "Which color?"="Red". '
            "You can now continue with these answers in mind."
        )
        assert tool_result(messages, call["id"]) == {
            "type": "tool_result",
            "content": answered,
            "tool_use_id": call["id"],
        }
        line = tool_result_line(messages, call["id"])
        assert line["tool_use_result"] == {"questions": [COLOR], "answers": {"Which color?": "Red"}}
        assert line["tool_result_meta"] == [
            {
                "id": call["id"],
                "permission_decision": {"decision": "accept", "source": "user_temporary"},
            }
        ]
        assert without_cache_control(last_user_content(fake_model, "after_tool")) == [
            {"type": "tool_result", "content": answered, "tool_use_id": call["id"]}
        ]

        # Several choices: the labels joined with ", ".
        messages = await turn(claude, "ask toppings", answering({"Which toppings?": "Cheese, Egg"}))
        (call,) = tool_uses(messages, "AskUserQuestion")
        assert permission_requests(messages)[0]["input"] == {"questions": [TOPPINGS]}
        assert tool_result(messages, call["id"])["content"] == (
            'Your questions have been answered: "Which toppings?"="Cheese, Egg". '
            "You can now continue with these answers in mind."
        )

        # A denial's message is the model's tool result.
        messages = await turn(claude, "ask color", deny_with("I will not answer that"))
        (call,) = tool_uses(messages, "AskUserQuestion")
        assert tool_result(messages, call["id"]) == {
            "type": "tool_result",
            "content": "I will not answer that",
            "is_error": True,
            "tool_use_id": call["id"],
        }
        assert tool_result_line(messages, call["id"])["tool_use_result"] == (
            "Error: I will not answer that"
        )
        assert messages[-1]["permission_denials"] == [
            {
                "tool_name": "AskUserQuestion",
                "tool_use_id": call["id"],
                "tool_input": {"questions": [COLOR]},
            }
        ]

        # Allowed without answers: the model hears that nobody answered.
        messages = await turn(claude, "ask color", allow)
        (call,) = tool_uses(messages, "AskUserQuestion")
        assert tool_result(messages, call["id"])["content"] == (
            "The user did not answer the questions."
        )
        assert tool_result_line(messages, call["id"])["tool_use_result"]["answers"] == {}
        assert await claude.close() == 0
    finally:
        await claude.kill()


# ------------------------------------------------------------------------- plan mode

PLAN = "# Plan\n1. write hello.txt\n"
EDITED_PLAN = "# Plan\n1. write hello.txt\n2. test it\n"


async def test_plan_mode_approval_goes_through_exit_plan_mode(
    claude_bin: Path, claude_env: dict[str, str], fake_model: FakeModelServer, project_dir: Path
) -> None:
    claude = await ClaudeProcess.start(
        claude_bin, claude_env, project_dir, "--permission-mode", "plan"
    )
    try:
        init = success(await claude.initialize())
        assert init["current_permission_mode"] == "plan"

        # The plan file's path is only in the system prompt of plan mode.
        messages = await turn(claude, "look around")
        assert of_type(messages, "system", "init")[0]["permissionMode"] == "plan"
        prompt = str(fake_model.message_requests()[-1]["body"])
        found = re.search(r"create your plan at (\S+?\.md) using the Write tool", prompt)
        assert found, prompt[:2000]
        plan_file = found.group(1)
        assert plan_file.startswith(claude_env["HOME"] + "/.claude/plans/")

        exit_plan = {"tool": "ExitPlanMode", "input": {}, "force": True}
        fake_model.set_rules(
            {
                "rules": [
                    {"match": "inline plan", **exit_plan, "input": {"plan": "inline plan"}},
                    {"match": "approve now", **exit_plan},
                    write_rule("plan it", plan_file, PLAN),
                    write_rule("write it", project_dir / "hello.txt", "hi\n"),
                ],
                "after_tool_rules": [
                    {
                        "match": f"File created successfully at: {plan_file}",
                        "tool": "ToolSearch",
                        "input": {"query": "select:ExitPlanMode"},
                    },
                    {"match": "ExitPlanMode", "tool": "ExitPlanMode", "input": {}},
                ],
            }
        )

        # Without a plan file the request's input is {}: the plan is only in the tool_use.
        messages = await turn(
            claude, "inline plan", answer_with({"behavior": "allow", "updatedInput": {}})
        )
        (call,) = tool_uses(messages, "ExitPlanMode")
        assert call["input"] == {"plan": "inline plan"}
        assert permission_requests(messages) == [
            {
                "subtype": "can_use_tool",
                "tool_name": "ExitPlanMode",
                "display_name": "ExitPlanMode",
                "input": {},
                "tool_use_id": call["id"],
                "requires_user_interaction": True,
            }
        ]
        assert tool_result(messages, call["id"])["content"] == (
            "User has approved exiting plan mode. You can now proceed."
        )
        assert tool_result_line(messages, call["id"])["tool_use_result"] == {
            "plan": None,
            "isAgent": False,
            "filePath": plan_file,
        }
        # Approval leaves plan mode by itself.
        assert mode_changes(messages) == ["default"]
        assert success(
            await control(claude, {"subtype": "set_permission_mode", "mode": "plan"})
        ) == {"mode": "plan"}

        # The usual path: the plan goes into the plan file (no prompt), ToolSearch loads the
        # deferred ExitPlanMode (no prompt), and ExitPlanMode carries the file's plan.
        messages = await turn(claude, "plan it", deny_with("Please add tests to the plan"))
        assert [r["tool_name"] for r in permission_requests(messages)] == ["ExitPlanMode"]
        (search,) = tool_uses(messages, "ToolSearch")
        assert search["input"] == {"query": "select:ExitPlanMode"}
        assert tool_result(messages, search["id"])["content"] == [
            {"type": "tool_reference", "tool_name": "ExitPlanMode"}
        ]
        (call,) = tool_uses(messages, "ExitPlanMode")
        plan_input = {"plan": PLAN, "planFilePath": plan_file}
        assert call["input"] == plan_input
        request = permission_requests(messages)[0]
        assert request["input"] == plan_input and request["tool_use_id"] == call["id"]
        assert request["requires_user_interaction"] is True
        # ExitPlanMode is not offered until ToolSearch has loaded it.
        offered = [
            [t["name"] for t in e["body"]["tools"]]
            for e in fake_model.message_requests()
            if e["reply"].get("tool") in ("ToolSearch", "ExitPlanMode")
        ][-2:]
        assert "ExitPlanMode" not in offered[0] and "ExitPlanMode" in offered[1]
        # A denial's message is what the model reads.
        assert tool_result(messages, call["id"]) == {
            "type": "tool_result",
            "content": "Please add tests to the plan",
            "is_error": True,
            "tool_use_id": call["id"],
        }
        # The only mode line is the one for set_permission_mode above; a denial keeps plan.
        assert mode_changes(messages) == ["plan"]

        # Approved as is: the model gets the plan back; the mode drops to default.
        messages = await turn(claude, "approve now", allow)
        assert of_type(messages, "system", "init")[0]["permissionMode"] == "plan"
        (call,) = tool_uses(messages, "ExitPlanMode")
        assert permission_requests(messages)[0]["input"] == plan_input
        approved = tool_result(messages, call["id"])["content"]
        assert approved.startswith("User has approved your plan. You can now start coding.")
        assert f"Your plan has been saved to: {plan_file}\n" in approved
        assert approved.endswith(f"\n\n## Approved Plan:\n{PLAN}")
        assert tool_result_line(messages, call["id"])["tool_use_result"] == {
            "plan": PLAN,
            "isAgent": False,
            "filePath": plan_file,
        }
        assert mode_changes(messages) == ["default"]

        # Approved with an edited plan: the edit is saved and sent as "edited by user".
        await control(claude, {"subtype": "set_permission_mode", "mode": "plan"})
        edited = {"behavior": "allow", "updatedInput": {**plan_input, "plan": EDITED_PLAN}}
        messages = await turn(claude, "approve now", answer_with(edited))
        (call,) = tool_uses(messages, "ExitPlanMode")
        assert tool_result(messages, call["id"])["content"].endswith(
            f"\n\n## Approved Plan (edited by user):\n{EDITED_PLAN}"
        )
        assert tool_result_line(messages, call["id"])["tool_use_result"]["planWasEdited"] is True
        assert Path(plan_file).read_text() == EDITED_PLAN

        # The host picks the mode to go on with; acceptEdits lets Write run unasked.
        response = await control(claude, {"subtype": "set_permission_mode", "mode": "acceptEdits"})
        assert success(response) == {"mode": "acceptEdits"}
        messages = await turn(claude, "write it", deny_with("must not be asked"))
        assert permission_requests(messages) == []
        assert mode_changes(messages) == ["acceptEdits"]
        (call,) = tool_uses(messages, "Write")
        assert tool_result_line(messages, call["id"])["tool_result_meta"][0][
            "permission_decision"
        ] == {"decision": "accept", "source": "config", "reason_type": "mode"}
        assert (project_dir / "hello.txt").read_text() == "hi\n"
        assert await claude.close() == 0
    finally:
        await claude.kill()


# ------------------------------------------------------------------------- subagents

AGENT_INPUT = {"description": "Make a file", "subagent_type": "general-purpose"}


def subagent_lines(messages: list[Msg], agent_call: str) -> list[tuple[str, str]]:
    """(type, first block type) of the lines a subagent produced, in order."""
    return [
        (m["type"], m["message"]["content"][0]["type"])
        for m in messages
        if m.get("type") in ("user", "assistant") and m.get("parent_tool_use_id") == agent_call
    ]


async def test_subagent_lines_carry_the_agent_call_and_ask_with_agent_id(
    claude_bin: Path, claude_env: dict[str, str], fake_model: FakeModelServer, project_dir: Path
) -> None:
    fake_model.set_rules(
        {
            "rules": [
                {
                    "match": "delegate fg",
                    "tool": "Agent",
                    "input": {
                        **AGENT_INPUT,
                        "prompt": "BASH: touch fg.txt",
                        "run_in_background": False,
                    },
                },
                {
                    "match": "delegate bg",
                    "tool": "Agent",
                    "input": {**AGENT_INPUT, "prompt": "BASH: touch bg.txt"},
                },
            ]
        }
    )
    claude = await ClaudeProcess.start(claude_bin, claude_env, project_dir)
    try:
        # Foreground: the turn waits for the subagent; its result is the Agent tool result.
        messages = await turn(claude, "delegate fg")
        assert len(of_type(messages, "result")) == 1
        (agent_call,) = tool_uses(messages, "Agent")
        (started,) = of_type(messages, "system", "task_started")
        task_id = started["task_id"]
        assert started == {
            "type": "system",
            "subtype": "task_started",
            "task_id": task_id,
            "run_id": started["run_id"],
            "tool_use_id": agent_call["id"],
            "description": "Make a file",
            "subagent_type": "general-purpose",
            "is_backgrounded": False,
            "spawn_depth": 1,
            "task_type": "local_agent",
            "prompt": "BASH: touch fg.txt",
            "uuid": started["uuid"],
            "session_id": started["session_id"],
        }
        # The subagent's prompt, tool call and tool result come with the Agent call's id;
        # its final text does not (it is the Agent tool result), and no stream_event does.
        assert subagent_lines(messages, agent_call["id"]) == [
            ("user", "text"),
            ("assistant", "tool_use"),
            ("user", "tool_result"),
        ]
        for m in messages:
            if m.get("parent_tool_use_id") == agent_call["id"]:
                assert m["agent_id"] == task_id
                assert m["subagent_type"] == "general-purpose"
                assert m["task_description"] == "Make a file"
        assert [m for m in of_type(messages, "stream_event") if m["parent_tool_use_id"]] == []
        # The subagent's Bash is asked like any other, plus agent_id; no parent id.
        (bash,) = tool_uses(messages, "Bash")
        (request,) = permission_requests(messages)
        assert request["tool_name"] == "Bash" and request["tool_use_id"] == bash["id"]
        assert request["agent_id"] == task_id
        assert "parent_tool_use_id" not in request
        assert (project_dir / "fg.txt").exists()

        (progress,) = of_type(messages, "system", "task_progress")
        assert progress["task_id"] == task_id and progress["tool_use_id"] == agent_call["id"]
        assert progress["description"] == "Running touch fg.txt"
        assert progress["last_tool_name"] == "Bash"
        assert set(progress["usage"]) == {"total_tokens", "tool_uses", "duration_ms"}
        (updated,) = of_type(messages, "system", "task_updated")
        assert updated["task_id"] == task_id
        assert updated["patch"]["status"] == "completed"
        assert isinstance(updated["patch"]["end_time"], int)
        (note,) = of_type(messages, "system", "task_notification")
        assert note["task_id"] == task_id and note["tool_use_id"] == agent_call["id"]
        assert (note["status"], note["summary"]) == ("completed", "done")
        assert note["output_file"].endswith(f"/tasks/{task_id}.output")
        result_line = tool_result_line(messages, agent_call["id"])
        assert result_line["parent_tool_use_id"] is None
        (text,) = tool_result(messages, agent_call["id"])["content"]
        assert "\n  done\n" in text["text"] and f"agentId: {task_id} " in text["text"]
        assert result_line["tool_use_result"]["status"] == "completed"
        assert result_line["tool_use_result"]["agentId"] == task_id

        # Background (the default): the Agent call returns at once, the turn ends, and when
        # the subagent finishes the CLI starts a turn of its own to tell the model.
        await claude.send(user_message("delegate bg"))

        def finished(messages: list[Msg]) -> bool:
            return len(of_type(messages, "result")) == 2

        messages = await collect(claude, allow, finished)
        (agent_call,) = tool_uses(messages, "Agent")
        (started,) = of_type(messages, "system", "task_started")
        task_id = started["task_id"]
        assert started["is_backgrounded"] is True
        launched = tool_result_line(messages, agent_call["id"])
        assert launched["tool_use_result"]["status"] == "async_launched"
        assert launched["tool_use_result"]["isAsync"] is True
        (text,) = tool_result(messages, agent_call["id"])["content"]
        assert text["text"].startswith("Async agent launched successfully.")
        changed = of_type(messages, "system", "background_tasks_changed")
        assert [[t["task_id"] for t in m["tasks"]] for m in changed] == [[task_id], []]
        assert set(changed[0]["tasks"][0]) == {
            "task_id",
            "run_id",
            "task_type",
            "subagent_type",
            "description",
        }
        assert subagent_lines(messages, agent_call["id"]) == [
            ("assistant", "tool_use"),
            ("user", "tool_result"),
            ("assistant", "text"),
        ]
        (request,) = permission_requests(messages)
        assert request["agent_id"] == task_id
        (note,) = of_type(messages, "system", "task_notification")
        assert note["summary_is_report"] is True
        first, second = of_type(messages, "result")
        assert "origin" not in first
        assert second["origin"]["kind"] == "task-notification"
        # The unasked turn opens with its own init line, after the notification.
        assert messages.index(note) < messages.index(of_type(messages, "system", "init")[-1])
        notified = last_user_content(fake_model)[-1]["text"]
        assert (
            f"<task-id>{task_id}</task-id>" in notified and "<status>completed</status>" in notified
        )
        assert (project_dir / "bg.txt").exists()
        assert await claude.close() == 0
    finally:
        await claude.kill()


# ------------------------------------------- models, other control requests, mid-turn

MODEL_VALUES = ["default", "opus", "fable", "sonnet", "haiku"]


async def test_models_control_requests_and_messages_sent_mid_turn(
    claude_bin: Path, claude_env: dict[str, str], fake_model: FakeModelServer, project_dir: Path
) -> None:
    rules: dict[str, Any] = {
        "rules": [{"match": "long text", "text": " ".join(f"word{i}" for i in range(12))}]
    }
    fake_model.set_rules(rules)
    claude = await ClaudeProcess.start(claude_bin, claude_env, project_dir)
    try:
        envelope = await claude.initialize()
        # Beside the body the envelope lists what still waits for an answer.
        assert envelope["pending_permission_requests"] == []
        assert envelope["pending_user_dialog_requests"] == []
        models = success(envelope)["models"]
        assert [m["value"] for m in models] == MODEL_VALUES
        for model in models:
            assert {"value", "resolvedModel", "displayName", "description"} <= set(model)
        assert models[0]["resolvedModel"] == "claude-opus-5-5"
        assert success(await control(claude, {"subtype": "list_models"})) == {"models": models}

        settings = success(await control(claude, {"subtype": "get_settings"}))
        assert {"effective", "sources", "applied"} <= set(settings)
        assert settings["applied"]["model"] == "claude-opus-5-5"
        response = await control(claude, {"subtype": "no_such_request"})
        assert response == {
            "subtype": "error",
            "request_id": response["request_id"],
            "error": "Unsupported control request subtype: no_such_request",
            "error_code": "unsupported_request",
        }
        # Rewinding needs CLAUDE_CODE_ENABLE_SDK_FILE_CHECKPOINTING.
        response = await control(claude, {"subtype": "rewind_files", "user_message_id": "x"})
        assert (response["subtype"], response["error"]) == (
            "error",
            "File rewinding is not enabled.",
        )

        messages: list[Msg]
        # set_model answers with the resolved id, and the next request uses it.
        response = await control(claude, {"subtype": "set_model", "model": "sonnet"})
        assert success(response) == {"model": "claude-sonnet-5-5"}
        messages = await turn(claude, "say hi")
        assert of_type(messages, "system", "init")[0]["model"] == "claude-sonnet-5-5"
        assert of_type(messages, "assistant")[0]["message"]["model"] == "claude-sonnet-5-5"
        assert fake_model.message_requests()[-1]["body"]["model"] == "claude-sonnet-5-5"
        # Any id is taken as it is; null goes back to the default.
        response = await control(claude, {"subtype": "set_model", "model": "claude-fake-1"})
        assert success(response) == {"model": "claude-fake-1"}
        await turn(claude, "say hi")
        assert fake_model.message_requests()[-1]["body"]["model"] == "claude-fake-1"
        response = await control(claude, {"subtype": "set_model", "model": None})
        assert success(response) == {"model": "claude-opus-5-5"}

        # A message sent while a tool waits for permission joins the running turn: it reaches
        # the model beside the tool result, and no second turn follows.
        await claude.send(user_message("run touch"))
        messages = []
        while not of_type(messages, "result"):
            msg = await claude.read()
            messages.append(msg)
            if msg.get("type") == "control_request":
                await claude.send(user_message("mid-turn note"))
                await claude.send(reply(msg["request_id"], allow(msg["request"])))
        assert len(permission_requests(messages)) == 1
        assert fake_model.message_requests()[-1]["body"]["model"] == "claude-opus-5-5"
        content = without_cache_control(last_user_content(fake_model, "after_tool"))
        assert [b["type"] for b in content] == ["tool_result", "text"]
        assert content[1]["text"].startswith(
            "The user sent a new message while you were working:\nmid-turn note\n\n"
        )
        assert messages[-1]["result"] == "done"
        messages = await turn(claude, "say hi")
        assert messages[-1]["result"] == "hello from fake"
        assert last_user_content(fake_model)[-1]["text"] == "say hi"

        # A message sent while text streams waits: it becomes the next turn of its own.
        fake_model.set_rules({**rules, "chunk_delay": 0.05})
        await claude.send(user_message("long text"))
        messages = []
        while not of_type(messages, "result"):
            msg = await claude.read()
            messages.append(msg)
            deltas = [
                m
                for m in of_type(messages, "stream_event")
                if m["event"]["type"] == "content_block_delta"
            ]
            if len(deltas) == 2 and msg is deltas[-1]:
                await claude.send(user_message("second message"))
        assert messages[-1]["result"].startswith("word0 word1")
        fake_model.set_rules(rules)
        messages = await collect(claude, allow, results_seen(1))
        assert of_type(messages, "system", "init"), "the queued message starts a new turn"
        assert messages[-1]["result"] == "hello from fake"
        assert without_cache_control(last_user_content(fake_model)) == [
            {"type": "text", "text": "second message"}
        ]
        assert await claude.close() == 0
    finally:
        await claude.kill()


# ------------------------------------------------------- rewind, echoes and images


def tiny_png() -> bytes:
    """A valid 1x1 red PNG."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        crc = struct.pack(">I", zlib.crc32(kind + data))
        return struct.pack(">I", len(data)) + kind + data + crc

    header = struct.pack(">IIBBBBB", 1, 1, 8, 2, 0, 0, 0)
    pixels = zlib.compress(b"\x00\xff\x00\x00")
    return (
        b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", pixels) + chunk(b"IEND", b"")
    )


def echoes(messages: list[Msg]) -> list[Msg]:
    return [m for m in of_type(messages, "user") if m.get("isReplay")]


async def test_rewind_files_echoed_user_messages_and_images(
    claude_bin: Path, claude_env: dict[str, str], fake_model: FakeModelServer, project_dir: Path
) -> None:
    existing = project_dir / "existing.txt"
    existing.write_text("original line\n")
    created = project_dir / "new.txt"
    fake_model.set_rules(
        {
            "rules": [
                write_rule("write new", created, "brand new\n"),
                {"match": "edit existing", "tool": "Read", "input": {"file_path": str(existing)}},
            ],
            "after_tool_rules": [
                {
                    "match": "original line",
                    "tool": "Edit",
                    "input": {
                        "file_path": str(existing),
                        "old_string": "original line",
                        "new_string": "changed line",
                    },
                }
            ],
        }
    )
    env = dict(claude_env, CLAUDE_CODE_ENABLE_SDK_FILE_CHECKPOINTING="true")
    claude = await ClaudeProcess.start(claude_bin, env, project_dir, "--replay-user-messages")
    try:
        # The echo comes after init, with the CLI's uuid; the host's own permission answer
        # is echoed too.
        messages = await turn(claude, "write new")
        (echo,) = echoes(messages)
        assert echo == {
            "type": "user",
            "message": {"role": "user", "content": "write new"},
            "session_id": echo["session_id"],
            "parent_tool_use_id": None,
            "uuid": echo["uuid"],
            "timestamp": echo["timestamp"],
            "isReplay": True,
        }
        assert messages.index(of_type(messages, "system", "init")[0]) < messages.index(echo)
        (request,) = of_type(messages, "control_request")
        echoed = [
            m
            for m in of_type(messages, "control_response")
            if m["response"]["request_id"] == request["request_id"]
        ]
        assert echoed == [reply(request["request_id"], allow(request["request"]))]
        first_uuid = echo["uuid"]
        assert created.read_text() == "brand new\n"

        # A uuid the host sends is kept, and the CLI reports the message's lifecycle by it.
        second_uuid = "11111111-2222-3333-4444-555555555555"
        messages = await turn(claude, "edit existing", uuid=second_uuid)
        assert [e["uuid"] for e in echoes(messages)] == [second_uuid]
        lifecycle = [
            (m["command_uuid"], m["state"]) for m in of_type(messages, "command_lifecycle")
        ]
        assert lifecycle[:2] == [(second_uuid, "queued"), (second_uuid, "started")]
        assert existing.read_text() == "changed line\n"

        async def rewind(uuid: str, **extra: Any) -> Msg:
            return await control(
                claude, {"subtype": "rewind_files", "user_message_id": uuid, **extra}
            )

        # A dry run reports what a rewind would change and touches nothing.
        assert success(await rewind(second_uuid, dry_run=True)) == {
            "canRewind": True,
            "filesChanged": [str(existing)],
            "insertions": 1,
            "deletions": 1,
        }
        assert existing.read_text() == "changed line\n"
        # Rewinding to a message restores the files as they were before it.
        assert success(await rewind(second_uuid)) == {"canRewind": True, "skippedLinks": 0}
        assert existing.read_text() == "original line\n" and created.exists()
        assert success(await rewind(first_uuid, dry_run=True)) == {
            "canRewind": True,
            "filesChanged": [str(created)],
            "insertions": 0,
            "deletions": 1,
        }
        assert success(await rewind(first_uuid)) == {"canRewind": True, "skippedLinks": 0}
        assert not created.exists()
        unknown = await rewind("00000000-0000-0000-0000-000000000000")
        assert (unknown["subtype"], unknown["error"]) == (
            "error",
            "No file checkpoint found for this message.",
        )

        # An image block reaches the model as sent; the CLI appends where it saved it.
        image = {
            "type": "image",
            "source": {
                "type": "base64",
                "media_type": "image/png",
                "data": base64.b64encode(tiny_png()).decode(),
            },
        }
        content: list[Msg] = [{"type": "text", "text": "what is in this image"}, image]
        messages = await turn(claude, content)
        (echo,) = echoes(messages)
        assert echo["message"]["content"] == content
        sent = without_cache_control(last_user_content(fake_model))
        assert sent[:2] == content
        assert re.fullmatch(r"\[Image: source: /\S+/images/1\.png\]", sent[2]["text"]), sent[2]
        assert request_images(fake_model.message_requests()[-1]) == [image]
        assert await claude.close() == 0
    finally:
        await claude.kill()
