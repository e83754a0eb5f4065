"""The fake model server: wire shapes of the four APIs, rule order, logging, script mode."""

from __future__ import annotations

import http.client
import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.fakes.fake_model_server import (
    FakeModelServer,
    anthropic_conversation,
    example_from_schema,
    load_rules,
    read_log,
    request_images,
    request_texts,
    start_fake_model_server,
    tool_result_text,
)

SCRIPT = Path(__file__).parent / "fake_model_server.py"
BASH_TOOL = {"name": "Bash", "input_schema": {"type": "object"}}


@pytest.fixture
def fake(tmp_path: Path) -> Iterator[FakeModelServer]:
    server = start_fake_model_server(None, tmp_path / "log.jsonl")
    try:
        yield server
    finally:
        server.stop()


def call(
    server: FakeModelServer,
    method: str,
    path: str,
    body: Any = None,
    headers: dict[str, str] | None = None,
) -> tuple[int, dict[str, str], bytes]:
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=10)
    try:
        payload = json.dumps(body).encode() if body is not None else None
        hdrs = {"Content-Type": "application/json", **(headers or {})}
        conn.request(method, path, body=payload, headers=hdrs)
        resp = conn.getresponse()
        return resp.status, {k.lower(): v for k, v in resp.getheaders()}, resp.read()
    finally:
        conn.close()


def sse(raw: bytes) -> list[tuple[str | None, Any]]:
    events: list[tuple[str | None, Any]] = []
    for frame in raw.decode().split("\n\n"):
        name, data = None, None
        for line in frame.splitlines():
            if line.startswith("event: "):
                name = line[len("event: ") :]
            elif line.startswith("data: "):
                data = line[len("data: ") :]
        if data is not None:
            events.append((name, data if data == "[DONE]" else json.loads(data)))
    return events


def messages_body(messages: list[dict[str, Any]], *, tools: bool = True, **kw: Any) -> Any:
    body: dict[str, Any] = {"model": "claude-test", "max_tokens": 100, "messages": messages, **kw}
    if tools:
        body["tools"] = [BASH_TOOL, {"name": "Read", "input_schema": {"type": "object"}}]
    return body


def user(content: Any) -> dict[str, Any]:
    return {"role": "user", "content": content}


def reply_of(server: FakeModelServer, body: Any) -> dict[str, Any]:
    status, _, raw = call(server, "POST", "/v1/messages?beta=true", body)
    assert status == 200
    message: dict[str, Any] = json.loads(raw)
    return message


# ---------------------------------------------------------------- Anthropic streaming


def test_streamed_text_reply_has_the_messages_api_event_sequence(fake: FakeModelServer) -> None:
    body = messages_body([user("say hi")], stream=True)
    status, headers, raw = call(fake, "POST", "/v1/messages?beta=true", body)
    assert status == 200
    assert headers["content-type"] == "text/event-stream"
    assert headers["transfer-encoding"] == "chunked"
    events = sse(raw)
    for name, data in events:
        assert name == data["type"]
    types = [name for name, _ in events]
    deltas = [d["delta"]["text"] for _, d in events if d["type"] == "content_block_delta"]
    assert types == [
        "message_start",
        "ping",
        "content_block_start",
        *["content_block_delta"] * len(deltas),
        "content_block_stop",
        "message_delta",
        "message_stop",
    ]
    assert len(deltas) >= 3 and "".join(deltas) == "hello from fake"
    start = events[0][1]["message"]
    assert start["model"] == "claude-test" and start["content"] == []
    assert start["usage"]["input_tokens"] > 0
    delta = events[-2][1]
    assert delta["delta"]["stop_reason"] == "end_turn"
    assert delta["usage"]["output_tokens"] > 0


def test_streamed_tool_use_sends_the_input_as_json_deltas(fake: FakeModelServer) -> None:
    body = messages_body([user("please run touch now")], stream=True)
    _, _, raw = call(fake, "POST", "/v1/messages", body)
    events = [data for _, data in sse(raw)]
    start = next(e for e in events if e["type"] == "content_block_start")
    assert start["content_block"]["type"] == "tool_use"
    assert start["content_block"]["name"] == "Bash" and start["content_block"]["input"] == {}
    assert start["content_block"]["id"].startswith("toolu_")
    parts = [e["delta"]["partial_json"] for e in events if e["type"] == "content_block_delta"]
    assert len(parts) > 1
    assert json.loads("".join(parts)) == {
        "command": "touch made_by_fake.txt",
        "description": "create a file",
    }
    assert next(e for e in events if e["type"] == "message_delta")["delta"]["stop_reason"] == (
        "tool_use"
    )


def test_non_streaming_reply_is_one_message(fake: FakeModelServer) -> None:
    message = reply_of(fake, messages_body([user("run touch")]))
    assert message["type"] == "message" and message["role"] == "assistant"
    assert message["stop_reason"] == "tool_use"
    assert message["content"][0]["input"]["command"] == "touch made_by_fake.txt"
    assert message["usage"]["output_tokens"] > 0


# -------------------------------------------------------------------------- rules


def text_of(message: dict[str, Any]) -> str:
    return "".join(b["text"] for b in message["content"] if b["type"] == "text")


def tool_of(message: dict[str, Any]) -> dict[str, Any] | None:
    return next((b for b in message["content"] if b["type"] == "tool_use"), None)


def test_tool_result_wins_over_matching_text(fake: FakeModelServer) -> None:
    messages = [
        user("run touch"),
        {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "Bash"}]},
        user(
            [
                {"type": "tool_result", "tool_use_id": "t1", "content": "ok"},
                {"type": "text", "text": "run touch"},
            ]
        ),
    ]
    message = reply_of(fake, messages_body(messages))
    assert tool_of(message) is None and text_of(message) == "done"


def test_rules_fire_only_when_the_tool_is_offered(fake: FakeModelServer) -> None:
    message = reply_of(fake, messages_body([user("run touch")], tools=False))
    assert tool_of(message) is None and text_of(message) == "hello from fake"
    only_read = messages_body([user("run touch")], tools=False)
    only_read["tools"] = [{"name": "Read"}]
    assert text_of(reply_of(fake, only_read)) == "hello from fake"


def test_tool_names_match_case_insensitively(fake: FakeModelServer) -> None:
    body = messages_body([user("RUN TOUCH")], tools=False)
    body["tools"] = [{"name": "bash"}]
    tool = tool_of(reply_of(fake, body))
    assert tool is not None and tool["name"] == "bash"


def test_builtin_bash_rule(fake: FakeModelServer) -> None:
    tool = tool_of(reply_of(fake, messages_body([user("BASH: echo hi > out.txt")])))
    assert tool is not None and tool["input"] == {"command": "echo hi > out.txt"}


def test_mid_conversation_system_entries_are_tolerated(fake: FakeModelServer) -> None:
    after_tool = [
        user("run touch"),
        {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "Bash"}]},
        user([{"type": "tool_result", "tool_use_id": "t1", "content": "ok"}]),
        {"role": "system", "content": "a reminder"},
    ]
    assert text_of(reply_of(fake, messages_body(after_tool))) == "done"
    plain = [user("say hi"), {"role": "system", "content": [{"type": "text", "text": "run touch"}]}]
    assert text_of(reply_of(fake, messages_body(plain))) == "hello from fake"


def test_configured_rules_come_first_and_defaults_stay(fake: FakeModelServer) -> None:
    fake.set_rules(
        {
            "rules": [
                {"match": "touch", "tool": "Bash", "input": {"command": "touch other.txt"}},
                {"match": "greet", "text": "greetings"},
                {"match": "explain then act", "text": "Sure.", "tool": "Bash", "input": {}},
                {"match": "overload", "status": 529, "error": "overloaded"},
            ],
            "after_tool": "finished",
            "default": "fallback",
        }
    )
    tool = tool_of(reply_of(fake, messages_body([user("run touch")])))
    assert tool is not None and tool["input"] == {"command": "touch other.txt"}
    assert text_of(reply_of(fake, messages_body([user("greet me")]))) == "greetings"
    both = reply_of(fake, messages_body([user("explain then act")]))
    assert [b["type"] for b in both["content"]] == ["text", "tool_use"]
    tool = tool_of(reply_of(fake, messages_body([user("run ls")])))
    assert tool is not None and tool["input"] == {"command": "ls"}
    assert text_of(reply_of(fake, messages_body([user("anything")]))) == "fallback"
    status, _, raw = call(fake, "POST", "/v1/messages", messages_body([user("overload")]))
    assert status == 529 and json.loads(raw)["error"]["type"] == "overloaded_error"

    fake.set_rules({"rules": [], "include_default_rules": False})
    assert tool_of(reply_of(fake, messages_body([user("run touch")]))) is None


def test_a_broken_rule_answers_500_and_is_logged(fake: FakeModelServer) -> None:
    fake.set_rules({"rules": [{"match": "boom", "status": "not a number"}]})
    status, _, raw = call(fake, "POST", "/v1/messages", messages_body([user("boom")]))
    assert status == 500 and json.loads(raw)["error"]["type"] == "api_error"
    assert fake.requests()[-1]["reply"]["why"] == "fake server error"
    assert text_of(reply_of(fake, messages_body([user("hi")]))) == "hello from fake"


def test_rules_load_from_a_file(tmp_path: Path) -> None:
    rules = tmp_path / "rules.json"
    rules.write_text(json.dumps({"default": "from file"}))
    with start_fake_model_server(rules) as server:
        assert text_of(reply_of(server, messages_body([user("hi")]))) == "from file"


# ------------------------------------------------- several steps after tool results

EXIT_PLAN = {"match": "ExitPlanMode", "tool": "ExitPlanMode", "input": {"plan": "1. do it"}}


def tool_turn(result: Any, *extra: dict[str, Any]) -> list[dict[str, Any]]:
    """A conversation whose last user message carries one tool result (plus ``extra`` blocks)."""
    return [
        user("plan it"),
        {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "ToolSearch"}]},
        user([{"type": "tool_result", "tool_use_id": "t1", "content": result}, *extra]),
    ]


def test_tool_result_text_reads_strings_text_blocks_and_tool_references() -> None:
    content = [
        {"type": "text", "text": "not a result"},
        {"type": "tool_result", "tool_use_id": "a", "content": "plain output"},
        {
            "type": "tool_result",
            "tool_use_id": "b",
            "content": [
                {"type": "tool_reference", "tool_name": "ExitPlanMode"},
                {"type": "text", "text": "more output"},
                {"type": "image", "source": {"type": "base64", "data": "AAAA"}},
            ],
        },
        {"type": "tool_result", "tool_use_id": "c"},
        "junk",
    ]
    assert tool_result_text(content) == "plain output\nExitPlanMode\nmore output"
    assert tool_result_text("a plain user string") == ""
    assert tool_result_text(None) == ""


def test_after_tool_rules_script_the_next_step(fake: FakeModelServer) -> None:
    fake.set_rules(
        {
            "after_tool_rules": [
                {"match": "missing tool", "tool": "NotOffered", "input": {}},
                EXIT_PLAN,
                {"match": "ANSWERED", "text": "thanks for the answer"},
            ],
            "after_tool": "plain after tool",
        }
    )
    reference = [{"type": "tool_reference", "tool_name": "ExitPlanMode"}]
    body = messages_body(tool_turn(reference))
    body["tools"].append({"name": "ExitPlanMode"})
    tool = tool_of(reply_of(fake, body))
    assert tool is not None and (tool["name"], tool["input"]) == (
        "ExitPlanMode",
        {"plan": "1. do it"},
    )
    assert fake.requests()[-1]["reply"]["why"] == "after_tool_rule:ExitPlanMode"

    # The rule's tool must be offered, as for ordinary rules: without it the next rule is tried.
    assert text_of(reply_of(fake, messages_body(tool_turn(reference)))) == "plain after tool"
    # Matching is a case-insensitive substring of the result text, string content included.
    answered = tool_turn("Your questions have been answered: ...")
    assert text_of(reply_of(fake, messages_body(answered))) == "thanks for the answer"
    # Text blocks next to the result are not part of it.
    beside = tool_turn("ok", {"type": "text", "text": "ExitPlanMode"})
    assert text_of(reply_of(fake, messages_body(beside))) == "plain after tool"
    # Without a tool result in the last user message the ordinary rules apply.
    assert tool_of(reply_of(fake, messages_body([user("ExitPlanMode")]))) is None


def test_force_calls_a_tool_the_request_does_not_offer(fake: FakeModelServer) -> None:
    fake.set_rules(
        {
            "rules": [{"match": "exit now", "tool": "ExitPlanMode", "input": {}, "force": True}],
            "after_tool_rules": [dict(EXIT_PLAN, force=True)],
        }
    )
    tool = tool_of(reply_of(fake, messages_body([user("exit now")])))
    assert tool is not None and tool["name"] == "ExitPlanMode"
    reference = [{"type": "tool_reference", "tool_name": "ExitPlanMode"}]
    tool = tool_of(reply_of(fake, messages_body(tool_turn(reference), tools=False)))
    assert tool is not None and tool["name"] == "ExitPlanMode"


def test_after_tool_rules_for_openai_and_gemini(fake: FakeModelServer) -> None:
    fake.set_rules({"after_tool_rules": [{"match": "exit code 0", "text": "it worked"}]})
    reply = openai_after_tool(fake, "exit code 0")
    assert reply["choices"][0]["message"]["content"] == "it worked"
    gemini = {
        "contents": [
            {"role": "user", "parts": [{"text": "run touch"}]},
            {"role": "model", "parts": [{"functionCall": {"name": "run_shell_command"}}]},
            {
                "role": "user",
                "parts": [
                    {"functionResponse": {"name": "x", "response": {"output": "exit code 0"}}}
                ],
            },
        ]
    }
    reply = json.loads(call(fake, "POST", "/v1beta/models/g:generateContent", gemini)[2])
    assert reply["candidates"][0]["content"]["parts"] == [{"text": "it worked"}]


def test_after_tool_rules_need_a_match_key() -> None:
    with pytest.raises(ValueError, match="without 'match'"):
        load_rules({"after_tool_rules": [{"tool": "Bash"}]})


# -------------------------------------------------------------------------- images

IMAGE = {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "iVBO"}}


def test_images_are_skipped_when_matching_and_listed_from_the_log(fake: FakeModelServer) -> None:
    tool = tool_of(
        reply_of(fake, messages_body([user([IMAGE, {"type": "text", "text": "run ls"}])]))
    )
    assert tool is not None and tool["input"] == {"command": "ls"}
    assert text_of(reply_of(fake, messages_body([user([IMAGE])]))) == "hello from fake"
    assert anthropic_conversation(messages_body([user([IMAGE, "junk"])])).user_text == ""

    screenshot = dict(IMAGE, source=dict(IMAGE["source"], data="c2hvdA=="))
    result = {"type": "tool_result", "tool_use_id": "t1", "content": [screenshot]}
    with_result = [user([IMAGE]), {"role": "assistant", "content": "x"}, user([result])]
    reply_of(fake, messages_body(with_result))
    first, second, third = fake.message_requests()
    assert request_images(first) == [IMAGE]
    assert request_images(third) == [IMAGE, screenshot]
    assert request_images({"body": "not json"}) == []


# ------------------------------------------------------------- other endpoints, log


def test_other_endpoints(fake: FakeModelServer) -> None:
    status, _, raw = call(fake, "POST", "/v1/messages/count_tokens?beta=true", {"messages": []})
    assert status == 200 and json.loads(raw)["input_tokens"] >= 1
    status, _, raw = call(fake, "GET", "/v1/models")
    models = json.loads(raw)
    assert status == 200 and models["object"] == "list" and models["data"]
    assert {"id", "type", "object", "display_name", "owned_by"} <= set(models["data"][0])
    for method in ("GET", "POST", "PUT", "PATCH", "DELETE"):
        status, _, raw = call(fake, method, "/api/whatever?x=1", {"a": 1})
        assert (status, json.loads(raw)) == (200, {})
    status, _, raw = call(fake, "HEAD", "/")
    assert status == 200 and raw == b""


def test_requests_are_logged_without_credentials(fake: FakeModelServer) -> None:
    body = messages_body([user("say hi")])
    call(fake, "POST", "/v1/messages?beta=true", body, {"x-api-key": "sk-secret", "X-App": "t"})
    call(fake, "GET", "/v1/models", headers={"Authorization": "Bearer sk-secret"})
    entries = fake.requests()
    assert [(e["method"], e["path"]) for e in entries] == [
        ("POST", "/v1/messages?beta=true"),
        ("GET", "/v1/models"),
    ]
    assert entries[0]["body"] == body and entries[0]["headers"]["X-App"] == "t"
    assert entries[0]["reply"] == {"why": "default", "text": "hello from fake"}
    assert isinstance(entries[0]["ts"], float)
    assert fake.log_path is not None
    assert "sk-secret" not in fake.log_path.read_text()
    assert read_log(fake.log_path) == json.loads(json.dumps(entries))
    assert [e["path"] for e in fake.message_requests()] == ["/v1/messages?beta=true"]


# -------------------------------------------------------------------------- OpenAI

OPENAI_TOOLS = [{"type": "function", "function": {"name": "bash", "parameters": {}}}]


def openai_after_tool(server: FakeModelServer, result: str) -> Any:
    """The non-streamed reply to a conversation that ends with a tool message ``result``."""
    messages = [
        user("run touch"),
        {"role": "assistant", "content": None, "tool_calls": [{"id": "c1", "type": "function"}]},
        {"role": "tool", "tool_call_id": "c1", "content": result},
    ]
    body = {"model": "m", "messages": messages, "tools": OPENAI_TOOLS}
    return json.loads(call(server, "POST", "/v1/chat/completions", body)[2])


def test_openai_streamed_tool_call(fake: FakeModelServer) -> None:
    body = {"model": "m", "stream": True, "messages": [user("run touch")], "tools": OPENAI_TOOLS}
    status, headers, raw = call(fake, "POST", "/v1/chat/completions", body)
    assert status == 200 and headers["transfer-encoding"] == "chunked"
    events = sse(raw)
    assert events[-1] == (None, "[DONE]")
    chunks = [data for _, data in events[:-1]]
    calls = [c["choices"][0]["delta"].get("tool_calls") for c in chunks]
    calls = [tc[0] for tc in calls if tc]
    assert calls[0]["function"]["name"] == "bash" and calls[0]["id"].startswith("call_")
    arguments = "".join(c["function"]["arguments"] for c in calls)
    assert json.loads(arguments)["command"] == "touch made_by_fake.txt"
    assert chunks[-1]["choices"][0]["finish_reason"] == "tool_calls"
    assert chunks[-1]["usage"]["total_tokens"] > 0


def test_openai_streamed_text_and_after_tool(fake: FakeModelServer) -> None:
    body = {"model": "m", "stream": True, "messages": [user("hi")], "tools": OPENAI_TOOLS}
    chunks = [data for _, data in sse(call(fake, "POST", "/v1/chat/completions", body)[2])[:-1]]
    pieces = [c["choices"][0]["delta"].get("content") for c in chunks]
    assert "".join(p for p in pieces if p) == "hello from fake"
    assert len([p for p in pieces if p]) >= 3
    reply = openai_after_tool(fake, "")
    assert reply["choices"][0]["message"]["content"] == "done"
    assert reply["choices"][0]["finish_reason"] == "stop"


def test_openai_non_streamed_tool_call(fake: FakeModelServer) -> None:
    body = {"model": "m", "messages": [user("run touch")], "tools": OPENAI_TOOLS}
    reply = json.loads(call(fake, "POST", "/chat/completions", body)[2])
    call_ = reply["choices"][0]["message"]["tool_calls"][0]
    assert call_["function"]["name"] == "bash"
    assert json.loads(call_["function"]["arguments"])["command"] == "touch made_by_fake.txt"


def test_openai_user_words_are_read_past_a_trailing_system_reminder(
    fake: FakeModelServer,
) -> None:
    # Grok's shape when an MCP server connects after the turn began.
    reminder = "<system-reminder>\nMCP server connected:\n- mark (1 tool)\n</system-reminder>"
    body = {
        "model": "m",
        "messages": [user("<user_query>\nrun touch\n</user_query>"), user(reminder)],
        "tools": OPENAI_TOOLS,
    }
    reply = json.loads(call(fake, "POST", "/v1/chat/completions", body)[2])
    call_ = reply["choices"][0]["message"]["tool_calls"][0]
    assert json.loads(call_["function"]["arguments"])["command"] == "touch made_by_fake.txt"
    # A user message that merely mentions a reminder is still the user's own.
    body["messages"] = [user("run touch"), user("say hi, <system-reminder> is a tag")]
    reply = json.loads(call(fake, "POST", "/v1/chat/completions", body)[2])
    assert reply["choices"][0]["message"]["content"] == "hello from fake"


# -------------------------------------------------------------------------- Gemini

GEMINI_TOOLS = [{"functionDeclarations": [{"name": "run_shell_command"}, {"name": "read_file"}]}]


def gemini_body(text: str, **kw: Any) -> dict[str, Any]:
    return {"contents": [{"role": "user", "parts": [{"text": text}]}], **kw}


def test_gemini_streamed_function_call(fake: FakeModelServer) -> None:
    path = "/v1beta/models/gemini-x:streamGenerateContent?alt=sse"
    _, _, raw = call(fake, "POST", path, gemini_body("run touch", tools=GEMINI_TOOLS))
    chunks = [data for _, data in sse(raw)]
    parts = [p for c in chunks for p in c["candidates"][0]["content"]["parts"]]
    assert parts[-1]["functionCall"] == {
        "name": "run_shell_command",
        "args": {"command": "touch made_by_fake.txt", "description": "create a file"},
    }
    assert chunks[-1]["candidates"][0]["finishReason"] == "STOP"
    assert chunks[-1]["usageMetadata"]["totalTokenCount"] > 0


def test_gemini_text_after_function_response(fake: FakeModelServer) -> None:
    body = {
        "contents": [
            {"role": "user", "parts": [{"text": "run touch"}]},
            {"role": "model", "parts": [{"functionCall": {"name": "run_shell_command"}}]},
            {"role": "user", "parts": [{"functionResponse": {"name": "run_shell_command"}}]},
        ],
        "tools": GEMINI_TOOLS,
    }
    path = "/v1beta/models/gemini-x:generateContent"
    reply = json.loads(call(fake, "POST", path, body)[2])
    assert reply["candidates"][0]["content"]["parts"] == [{"text": "done"}]
    # Without alt=sse the stream is a single JSON array.
    raw = call(fake, "POST", "/v1beta/models/gemini-x:streamGenerateContent", gemini_body("hi"))[2]
    pieces = [p["text"] for c in json.loads(raw) for p in c["candidates"][0]["content"]["parts"]]
    assert "".join(pieces) == "hello from fake" and len(pieces) >= 3


def test_gemini_json_schema_requests_get_schema_shaped_json(fake: FakeModelServer) -> None:
    schema = {
        "type": "object",
        "properties": {
            "reasoning": {"type": "string"},
            "model_choice": {"type": "string", "enum": ["flash", "pro"]},
            "score": {"type": "integer", "minimum": 1},
            "tags": {"type": "array", "items": {"type": "string"}},
        },
        "required": ["reasoning", "model_choice"],
    }
    body = gemini_body(
        "run touch", tools=GEMINI_TOOLS, generationConfig={"responseJsonSchema": schema}
    )
    reply = json.loads(call(fake, "POST", "/v1beta/models/lite:generateContent", body)[2])
    parts = reply["candidates"][0]["content"]["parts"]
    assert json.loads(parts[0]["text"]) == {
        "reasoning": "fake",
        "model_choice": "flash",
        "score": 1,
        "tags": [],
    }
    body = gemini_body("x", generationConfig={"responseMimeType": "application/json"})
    reply = json.loads(call(fake, "POST", "/v1beta/models/lite:generateContent", body)[2])
    assert json.loads(reply["candidates"][0]["content"]["parts"][0]["text"]) == {}
    status, _, raw = call(fake, "POST", "/v1beta/models/lite:countTokens", gemini_body("x"))
    assert status == 200 and json.loads(raw)["totalTokens"] >= 1


def test_example_from_schema_handles_gemini_spelling_and_unions() -> None:
    schema = {
        "type": "OBJECT",
        "properties": {
            "ok": {"type": "BOOLEAN"},
            "maybe": {"anyOf": [{"type": "null"}, {"type": "number"}]},
            "kind": {"type": ["null", "string"], "minLength": 6},
            "fixed": {"const": 3},
        },
    }
    assert example_from_schema(schema) == {"ok": False, "maybe": 0, "kind": "fakexx", "fixed": 3}


# ---------------------------------------------------------------------- script mode


def test_script_mode_prints_port_and_logs(tmp_path: Path) -> None:
    rules = tmp_path / "rules.json"
    rules.write_text(json.dumps({"default": "scripted"}))
    log = tmp_path / "log.jsonl"
    proc = subprocess.Popen(
        [sys.executable, str(SCRIPT), "--rules", str(rules), "--log", str(log)],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        word, port = proc.stdout.readline().split()
        assert word == "LISTENING"
        conn = http.client.HTTPConnection("127.0.0.1", int(port), timeout=10)
        conn.request("POST", "/v1/messages", body=json.dumps(messages_body([user("hi")])))
        reply = json.loads(conn.getresponse().read())
        conn.close()
        assert text_of(reply) == "scripted"
    finally:
        proc.terminate()
        assert proc.wait(timeout=10) == 0
    assert [e["reply"]["text"] for e in read_log(log)] == ["scripted"]


# ---------------------------------------------------------------- OpenAI Responses (Codex)

EXEC = {"type": "function", "name": "exec_command", "parameters": {"required": ["cmd"]}}
PATCH = {"type": "custom", "name": "apply_patch", "format": {"type": "grammar"}}
CONTEXT = {
    "type": "message",
    "role": "user",
    "content": [
        {
            "type": "input_text",
            "text": "<environment_context>\n  <cwd>/w</cwd>\n</environment_context>",
        }
    ],
}


def prompt(text: str) -> dict[str, Any]:
    return {"type": "message", "role": "user", "content": [{"type": "input_text", "text": text}]}


def responses(server: FakeModelServer, items: list[dict[str, Any]], **kw: Any) -> list[Any]:
    body = {"model": "gpt-5.5", "input": items, "stream": True, "tools": [EXEC, PATCH], **kw}
    status, headers, raw = call(server, "POST", "/v1/responses", body)
    assert status == 200 and headers["content-type"] == "text/event-stream"
    events = sse(raw)
    assert all(name == data["type"] for name, data in events), events
    return [data for _, data in events]


def items_of(events: list[Any], kind: str) -> list[dict[str, Any]]:
    return [e["item"] for e in events if e["type"] == kind]


def test_responses_text_streams_as_output_text_deltas_with_usage(fake: FakeModelServer) -> None:
    events = responses(fake, [prompt("say hi"), CONTEXT])
    types = [e["type"] for e in events]
    assert types[0] == "response.created" and types[-1] == "response.completed", types
    deltas = [e["delta"] for e in events if e["type"] == "response.output_text.delta"]
    assert len(deltas) == 3 and "".join(deltas) == "hello from fake"
    (message,) = items_of(events, "response.output_item.done")
    assert message["content"][0]["text"] == "hello from fake"
    usage = events[-1]["response"]["usage"]
    assert usage["total_tokens"] == usage["input_tokens"] + usage["output_tokens"] > 0
    assert set(usage) >= {"input_tokens_details", "output_tokens_details"}


def test_responses_bash_rule_calls_exec_command_with_cmd(fake: FakeModelServer) -> None:
    (call_item,) = items_of(responses(fake, [prompt("run touch")]), "response.output_item.done")
    assert (call_item["type"], call_item["name"]) == ("function_call", "exec_command")
    assert json.loads(call_item["arguments"]) == {"cmd": "touch made_by_fake.txt"}
    # Without the tool on offer (a title request), the same words get text.
    events = responses(fake, [prompt("run touch")], tools=[])
    assert items_of(events, "response.output_item.done")[0]["type"] == "message"


def test_responses_write_rule_is_an_apply_patch_custom_call(fake: FakeModelServer) -> None:
    rule = {"match": "write it", "tool": "Write", "input": {"file_path": "a.txt", "content": "x"}}
    fake.set_rules({"rules": [rule]})
    (call_item,) = items_of(responses(fake, [prompt("write it")]), "response.output_item.done")
    assert (call_item["type"], call_item["name"]) == ("custom_tool_call", "apply_patch")
    assert call_item["input"] == "*** Begin Patch\n*** Add File: a.txt\n+x\n*** End Patch\n"


def test_responses_tool_output_after_the_prompt_gets_the_after_tool_text(
    fake: FakeModelServer,
) -> None:
    fake.set_rules({"after_tool_rules": [{"match": "exited with code 0", "text": "it worked"}]})
    call_item = {
        "type": "function_call",
        "name": "exec_command",
        "call_id": "c1",
        "arguments": "{}",
    }
    output = {
        "type": "function_call_output",
        "call_id": "c1",
        "output": "Process exited with code 0",
    }
    events = responses(fake, [prompt("run touch"), call_item, output, CONTEXT])
    assert items_of(events, "response.output_item.done")[0]["content"][0]["text"] == "it worked"
    # A new prompt after that output is a new question, not an answer to the tool.
    events = responses(fake, [prompt("run touch"), call_item, output, prompt("say hi")])
    assert items_of(events, "response.output_item.done")[0]["content"][0]["text"] == (
        "hello from fake"
    )
    logged = fake.requests("/v1/responses")[-1]
    assert request_texts(logged) == ["run touch", "{}", "Process exited with code 0", "say hi"]


def test_responses_json_side_requests_get_schema_shaped_json(fake: FakeModelServer) -> None:
    schema = {"type": "object", "properties": {"title": {"type": "string"}}}
    fmt = {"type": "json_schema", "name": "title", "schema": schema}
    events = responses(fake, [prompt("run touch")], text={"format": fmt}, tools=[])
    (message,) = items_of(events, "response.output_item.done")
    assert json.loads(message["content"][0]["text"]) == {"title": "fake"}
