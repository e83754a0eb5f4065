"""A scripted fake model server for running real agent CLIs offline.

It speaks the Anthropic Messages API, OpenAI chat.completions, OpenAI's Responses API (Codex;
see ``responses_api``) and the Gemini generateContent API on 127.0.0.1, so a real ``claude``
(or an ACP agent) pointed at it via its base-URL setting runs end to end without any real
model. Standard library only, so it can also run as a plain
script next to CLIs that are started outside the test process.

Replies come from rules, checked in this order for every request:

0. The request asks for JSON output (Gemini ``generationConfig.responseJsonSchema`` or
   ``responseMimeType=application/json``, OpenAI ``response_format``, Responses
   ``text.format``) -> a small JSON value
   shaped by the schema; agents use these for routing and checks, never for the answer.
1. The last user message carries a tool result (Anthropic ``tool_result``, an OpenAI ``tool``
   message, a Gemini ``functionResponse``) -> the first of the ``after_tool_rules`` whose
   ``match`` occurs in the text of those results (case-insensitive; for Anthropic that is the
   string content, the text blocks and the tool names of ``tool_reference`` blocks), else the
   ``after_tool`` text. This scripts several steps in one turn: call a tool, and once its
   result is back call the next one.
2. Configured rules, then the default rules: the first whose ``match`` occurs in the last user
   message's text (case-insensitive) wins. A rule with ``tool`` fires only when the request
   offers that tool (names compared case-insensitively; ``Bash`` also matches ``bash``,
   ``shell``, Gemini's ``run_shell_command``, Grok's ``run_terminal_command`` and Codex's
   ``exec_command``; ``Write`` also matches Codex's ``apply_patch``), so side
   requests such as title generation never trigger tools. Rule keys: ``match``, ``tool`` +
   ``input``, ``text`` (sent before the tool call, or on its own), ``status`` + ``error``
   (answer with an HTTP error instead), ``force`` (call ``tool`` even when the request does not
   list it, e.g. a tool Claude Code only loads on demand through ToolSearch), ``quote_result``
   (an after-tool rule's text is followed by the tool results it matched, as a model
   reporting what it was told), ``unless`` (the rule is skipped when this text occurs too,
   e.g. an after-tool rule once the result of its own call is back), ``headers``
   (response headers sent with this reply, e.g. a 429's ``retry-after`` and the
   ``anthropic-ratelimit-unified-*`` figures).
3. Built in: ``BASH: <cmd>`` in the user text -> the shell tool with ``{"command": <cmd>}``.
4. Otherwise -> the ``default`` text.

Rules file/dict: ``{"rules": [...], "after_tool_rules": [...], "after_tool": "done",
"default": "hello from fake", "include_default_rules": true, "chunk_delay": 0.0,
"cache_usage": {}}``; every key is optional. ``cache_usage`` (``cache_read_input_tokens``,
``cache_creation_input_tokens``) goes into every Anthropic reply's usage, which otherwise
reports no cache use.
The top-level ``headers`` go with every model reply (a rule's own win), as a real API
sends its rate-limit figures on each response.

Every request is logged as one JSON line ``{ts, method, path, headers, body, reply}`` with
credential headers removed (``auth_digest``: a digest of the ``authorization`` header).

Script use::

    python fake_model_server.py --rules rules.json --log requests.jsonl
    # prints "LISTENING <port>" and serves until killed
"""

from __future__ import annotations

import argparse
import copy
import gzip
import hashlib
import json
import re
import signal
import sys
import threading
import time
import uuid
import zlib
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

DEFAULT_RULES: list[dict[str, Any]] = [
    {"match": "run ls", "tool": "Bash", "input": {"command": "ls"}},
    {
        "match": "run touch",
        "tool": "Bash",
        "input": {"command": "touch made_by_fake.txt", "description": "create a file"},
    },
]
DEFAULT_AFTER_TOOL = "done"
DEFAULT_TEXT = "hello from fake"

# Different agents name the same shell tool differently; a rule written for one works for all.
TOOL_ALIASES: dict[str, set[str]] = {
    "bash": {"bash", "shell", "run_shell_command", "run_terminal_command", "exec_command"},
    "write": {"write", "apply_patch"},
}

REDACTED_HEADERS = {
    "authorization",
    "proxy-authorization",
    "x-api-key",
    "x-goog-api-key",
    "api-key",
    "cookie",
}

MODEL_IDS = ["claude-fake-1", "fake-model"]


def credential_digest(header: str) -> str:
    """A short digest of an ``authorization`` header, logged as ``auth_digest`` so that a
    test can tell which key an agent sent while the log holds no key."""
    return hashlib.sha256(header.encode()).hexdigest()[:16]


if __package__:
    from tests.fakes import responses_api
else:  # run as a script: the module lies beside this file, on sys.path
    import responses_api

RulesSource = Mapping[str, Any] | Path | str | None


# --------------------------------------------------------------------------- rules


def load_rules(source: RulesSource = None) -> dict[str, Any]:
    """Normalise a rules dict, a path to a JSON rules file, or None into a full rules dict."""
    if source is None:
        raw: dict[str, Any] = {}
    elif isinstance(source, Mapping):
        raw = copy.deepcopy(dict(source))
    else:
        raw = json.loads(Path(source).read_text())
    rules = list(raw.get("rules") or [])
    if raw.get("include_default_rules", True):
        rules += copy.deepcopy(DEFAULT_RULES)
    after_tool_rules = list(raw.get("after_tool_rules") or [])
    for rule in rules + after_tool_rules:
        if "match" not in rule:
            raise ValueError(f"rule without 'match': {rule!r}")
    return {
        "rules": rules,
        "after_tool_rules": after_tool_rules,
        "after_tool": raw.get("after_tool", DEFAULT_AFTER_TOOL),
        "default": raw.get("default", DEFAULT_TEXT),
        "chunk_delay": float(raw.get("chunk_delay", 0.0)),
        "cache_usage": dict(raw.get("cache_usage") or {}),
        "headers": {str(k): str(v) for k, v in (raw.get("headers") or {}).items()},
    }


@dataclass
class Reply:
    """What to answer, independent of the wire protocol."""

    text: str = ""
    tool: str | None = None
    tool_input: dict[str, Any] = field(default_factory=dict)
    status: int = 200
    error: str = ""
    why: str = "default"
    # Extra response headers (rate-limit figures, retry-after).
    headers: dict[str, str] = field(default_factory=dict)

    def summary(self) -> dict[str, Any]:
        out: dict[str, Any] = {"why": self.why}
        if self.status != 200:
            out.update(status=self.status, error=self.error)
        if self.text:
            out["text"] = self.text
        if self.tool:
            out.update(tool=self.tool, input=self.tool_input)
        if self.headers:
            out["headers"] = self.headers
        return out


@dataclass
class Conversation:
    """The parts of a request the rules look at."""

    user_text: str
    after_tool: bool
    offered_tools: list[str]
    json_schema: Any = None
    wants_json: bool = False
    # The text of the tool results in the last user message (what ``after_tool_rules`` match).
    tool_result_text: str = ""
    # Each offered tool's input schema, where the request format carries one.
    tool_schemas: dict[str, Any] = field(default_factory=dict)


def _offered_name(wanted: str, offered: list[str]) -> str | None:
    names = TOOL_ALIASES.get(wanted.lower(), {wanted.lower()})
    for name in offered:
        if name.lower() in names:
            return name
    return None


def _first_rule(
    rules: list[dict[str, Any]], text: str, offered: list[str], kind: str
) -> Reply | None:
    """The reply of the first rule whose ``match`` is in ``text`` and whose tool is offered."""
    lowered = text.lower()
    for rule in rules:
        if str(rule["match"]).lower() not in lowered:
            continue
        if "unless" in rule and str(rule["unless"]).lower() in lowered:
            continue
        why = f"{kind}:{rule['match']}"
        headers = {str(k): str(v) for k, v in (rule.get("headers") or {}).items()}
        if "status" in rule:
            error = str(rule.get("error", ""))
            return Reply(status=int(rule["status"]), error=error, why=why, headers=headers)
        if "tool" in rule:
            wanted = str(rule["tool"])
            name = _offered_name(wanted, offered) or (wanted if rule.get("force") else None)
            if name is None:
                continue
            tool_input = copy.deepcopy(rule.get("input") or {})
            said = str(rule.get("text", ""))
            return Reply(text=said, tool=name, tool_input=tool_input, why=why, headers=headers)
        quoted = text if rule.get("quote_result") else ""
        return Reply(text=str(rule.get("text", "")) + quoted, why=why, headers=headers)
    return None


def decide(rules: dict[str, Any], conv: Conversation) -> Reply:
    reply = _decide(rules, conv)
    reply.headers = {**rules.get("headers", {}), **reply.headers}
    return reply


def _decide(rules: dict[str, Any], conv: Conversation) -> Reply:
    if conv.wants_json:
        example = example_from_schema(conv.json_schema) if conv.json_schema is not None else {}
        return Reply(text=json.dumps(example), why="json_schema")
    if conv.after_tool:
        after = rules.get("after_tool_rules") or []
        reply = _first_rule(after, conv.tool_result_text, conv.offered_tools, "after_tool_rule")
        return reply or Reply(text=str(rules["after_tool"]), why="after_tool")
    reply = _first_rule(rules["rules"], conv.user_text, conv.offered_tools, "rule")
    if reply is not None:
        return _with_required(reply, conv)
    m = re.search(r"BASH:[ \t]*(.+)", conv.user_text)
    if m:
        name = _offered_name("Bash", conv.offered_tools)
        if name is not None:
            reply = Reply(tool=name, tool_input={"command": m.group(1).strip()}, why="BASH:")
            return _with_required(reply, conv)
    return Reply(text=str(rules["default"]), why="default")


def _with_required(reply: Reply, conv: Conversation) -> Reply:
    """The reply with the required fields its input lacks filled from the tool's schema,
    so one rule serves agents whose shell tools differ (Grok's needs a ``description``)."""
    schema = conv.tool_schemas.get(reply.tool or "")
    if not isinstance(schema, Mapping) or not isinstance(reply.tool_input, dict):
        return reply
    props = schema.get("properties") or {}
    for key in schema.get("required") or []:
        if key not in reply.tool_input:
            reply.tool_input[key] = example_from_schema(props.get(key), 1)
    return reply


def example_from_schema(schema: Any, depth: int = 0) -> Any:
    """A small value that satisfies a JSON schema (Gemini's OBJECT/STRING spelling included)."""
    if not isinstance(schema, Mapping) or depth > 10:
        return {}
    if "const" in schema:
        return schema["const"]
    if schema.get("enum"):
        return schema["enum"][0]
    if "default" in schema:
        return schema["default"]
    for key in ("anyOf", "oneOf", "allOf"):
        options = [s for s in schema.get(key) or [] if not _is_null_schema(s)]
        if options:
            return example_from_schema(options[0], depth + 1)
    kind = schema.get("type")
    if isinstance(kind, list):
        kind = next((k for k in kind if str(k).lower() != "null"), "null")
    kind = str(kind).lower() if kind is not None else ""
    if kind == "object" or "properties" in schema:
        props = schema.get("properties") or {}
        return {k: example_from_schema(v, depth + 1) for k, v in props.items()}
    if kind == "array":
        count = int(schema.get("minItems", 0))
        return [example_from_schema(schema.get("items"), depth + 1) for _ in range(count)]
    if kind == "string":
        return "fake".ljust(int(schema.get("minLength", 0)), "x")
    if kind in ("integer", "number"):
        low = schema.get("minimum", 0)
        return int(low) if kind == "integer" else low
    if kind == "boolean":
        return False
    if kind == "null":
        return None
    return {}


def _is_null_schema(s: Any) -> bool:
    return isinstance(s, Mapping) and str(s.get("type", "")).lower() == "null"


# ----------------------------------------------------------------- request parsing


def _anthropic_text(content: Any) -> str:
    """The text blocks of a message's content; images and other blocks are skipped."""
    if isinstance(content, str):
        return content
    parts = []
    for block in content if isinstance(content, list) else []:
        if isinstance(block, Mapping) and block.get("type") == "text":
            parts.append(str(block.get("text", "")))
    return "\n".join(parts)


def tool_result_text(content: Any) -> str:
    """The text of the ``tool_result`` blocks in a user message's content.

    A result's content is a string or a list of blocks: text blocks give their text,
    ``tool_reference`` blocks (what ToolSearch returns) the name of the tool they load.
    """
    parts: list[str] = []
    for block in content if isinstance(content, list) else []:
        if not isinstance(block, Mapping) or block.get("type") != "tool_result":
            continue
        inner = block.get("content")
        if isinstance(inner, str):
            parts.append(inner)
            continue
        for item in inner if isinstance(inner, list) else []:
            if not isinstance(item, Mapping):
                continue
            if item.get("type") == "text":
                parts.append(str(item.get("text", "")))
            elif item.get("type") == "tool_reference":
                parts.append(str(item.get("tool_name", "")))
    return "\n".join(parts)


def anthropic_conversation(body: Mapping[str, Any]) -> Conversation:
    # Claude Code puts role "system" entries mid-conversation, so only look at role "user".
    messages = [m for m in body.get("messages") or [] if isinstance(m, Mapping)]
    last_user = next((m for m in reversed(messages) if m.get("role") == "user"), None)
    content = last_user.get("content") if last_user else None
    after_tool = isinstance(content, list) and any(
        isinstance(b, Mapping) and b.get("type") == "tool_result" for b in content
    )
    tools = [str(t.get("name", "")) for t in body.get("tools") or [] if isinstance(t, Mapping)]
    return Conversation(
        _anthropic_text(content), after_tool, tools, tool_result_text=tool_result_text(content)
    )


def _is_reminder(message: Mapping[str, Any]) -> bool:
    content = message.get("content")
    text = content if isinstance(content, str) else ""
    if isinstance(content, list):
        text = "\n".join(str(p.get("text", "")) for p in content if isinstance(p, Mapping))
    text = text.strip()
    return text.startswith("<system-reminder>") and text.endswith("</system-reminder>")


def openai_conversation(body: Mapping[str, Any]) -> Conversation:
    messages = [m for m in body.get("messages") or [] if isinstance(m, Mapping)]
    # Grok appends "MCP server connected" as a user message of its own once a server comes
    # up mid-turn; a model still answers the user's words before it, and so does the fake.
    last_user_idx = max(
        (i for i, m in enumerate(messages) if m.get("role") == "user" and not _is_reminder(m)),
        default=-1,
    )
    tool_messages = [m for m in messages[last_user_idx + 1 :] if m.get("role") == "tool"]
    after_tool = bool(tool_messages)
    results = "\n".join(
        c if isinstance(c, str) else json.dumps(c)
        for c in (m.get("content") for m in tool_messages)
        if c is not None
    )
    text = ""
    if last_user_idx >= 0:
        content = messages[last_user_idx].get("content")
        if isinstance(content, str):
            text = content
        elif isinstance(content, list):
            text = "\n".join(
                str(p.get("text", "")) for p in content if isinstance(p, Mapping) and "text" in p
            )
    tools: list[str] = []
    schemas: dict[str, Any] = {}
    for t in body.get("tools") or []:
        if isinstance(t, Mapping) and isinstance(t.get("function"), Mapping):
            tools.append(str(t["function"].get("name", "")))
            schemas[tools[-1]] = t["function"].get("parameters")
    for f in body.get("functions") or []:
        if isinstance(f, Mapping):
            tools.append(str(f.get("name", "")))
    schema: Any = None
    wants_json = False
    fmt = body.get("response_format")
    if isinstance(fmt, Mapping) and fmt.get("type") in ("json_schema", "json_object"):
        wants_json = True
        js = fmt.get("json_schema")
        schema = js.get("schema") if isinstance(js, Mapping) else None
    return Conversation(text, after_tool, tools, schema, wants_json, results, schemas)


def responses_conversation(request: responses_api.ResponsesRequest) -> Conversation:
    return Conversation(
        request.user_text,
        request.after_tool,
        request.offered_tools,
        request.json_schema,
        request.wants_json,
        request.tool_result_text,
        request.tool_schemas,
    )


def gemini_conversation(body: Mapping[str, Any]) -> Conversation:
    contents = [c for c in body.get("contents") or [] if isinstance(c, Mapping)]
    last_user = next((c for c in reversed(contents) if c.get("role", "user") == "user"), None)
    parts = [p for p in (last_user or {}).get("parts") or [] if isinstance(p, Mapping)]
    after_tool = any("functionResponse" in p for p in parts)
    results = "\n".join(json.dumps(p["functionResponse"]) for p in parts if "functionResponse" in p)
    text = "\n".join(str(p["text"]) for p in parts if "text" in p)
    tools: list[str] = []
    for t in body.get("tools") or []:
        if isinstance(t, Mapping):
            for decl in t.get("functionDeclarations") or t.get("function_declarations") or []:
                if isinstance(decl, Mapping):
                    tools.append(str(decl.get("name", "")))
    config = body.get("generationConfig") or {}
    schema = config.get("responseJsonSchema") or config.get("responseSchema")
    wants_json = schema is not None or config.get("responseMimeType") == "application/json"
    return Conversation(text, after_tool, tools, schema, wants_json, results)


# ------------------------------------------------------------------ reply shaping


def text_chunks(text: str) -> list[str]:
    """Split on word boundaries, keeping whitespace, so a streamed reply arrives in pieces."""
    return re.findall(r"\s*\S+\s*", text) or ([text] if text else [])


def json_chunks(value: Any, size: int = 12) -> list[str]:
    raw = json.dumps(value)
    return [raw[i : i + size] for i in range(0, len(raw), size)] or [raw]


def _new_id(prefix: str) -> str:
    return f"{prefix}{uuid.uuid4().hex[:24]}"


def _output_tokens(reply: Reply) -> int:
    return max(1, len(text_chunks(reply.text)) + len(json_chunks(reply.tool_input)))


def anthropic_usage(
    input_tokens: int, output_tokens: int, cache: Mapping[str, int] | None = None
) -> dict[str, Any]:
    return {
        "input_tokens": input_tokens,
        "output_tokens": output_tokens,
        "cache_creation_input_tokens": 0,
        "cache_read_input_tokens": 0,
        "service_tier": "standard",
        **(cache or {}),
    }


def anthropic_message(
    reply: Reply, model: str, input_tokens: int, cache: Mapping[str, int] | None = None
) -> dict[str, Any]:
    content: list[dict[str, Any]] = []
    if reply.text:
        content.append({"type": "text", "text": reply.text})
    if reply.tool:
        content.append(
            {
                "type": "tool_use",
                "id": _new_id("toolu_"),
                "name": reply.tool,
                "input": reply.tool_input,
            }
        )
    return {
        "id": _new_id("msg_"),
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": content,
        "stop_reason": "tool_use" if reply.tool else "end_turn",
        "stop_sequence": None,
        "usage": anthropic_usage(input_tokens, _output_tokens(reply), cache),
    }


def anthropic_events(
    reply: Reply, model: str, input_tokens: int, cache: Mapping[str, int] | None = None
) -> Iterator[dict[str, Any]]:
    """The Messages API SSE sequence for one reply."""
    message = anthropic_message(reply, model, input_tokens, cache)
    start = dict(message, content=[], stop_reason=None)
    start["usage"] = anthropic_usage(input_tokens, 1, cache)
    yield {"type": "message_start", "message": start}
    yield {"type": "ping"}
    for index, block in enumerate(message["content"]):
        if block["type"] == "text":
            yield {
                "type": "content_block_start",
                "index": index,
                "content_block": {"type": "text", "text": ""},
            }
            for piece in text_chunks(block["text"]):
                yield {
                    "type": "content_block_delta",
                    "index": index,
                    "delta": {"type": "text_delta", "text": piece},
                }
        else:
            yield {
                "type": "content_block_start",
                "index": index,
                "content_block": dict(block, input={}),
            }
            for piece in json_chunks(block["input"]):
                yield {
                    "type": "content_block_delta",
                    "index": index,
                    "delta": {"type": "input_json_delta", "partial_json": piece},
                }
        yield {"type": "content_block_stop", "index": index}
    yield {
        "type": "message_delta",
        "delta": {"stop_reason": message["stop_reason"], "stop_sequence": None},
        "usage": {"output_tokens": message["usage"]["output_tokens"]},
    }
    yield {"type": "message_stop"}


def anthropic_error(reply: Reply) -> dict[str, Any]:
    kinds = {400: "invalid_request_error", 401: "authentication_error", 429: "rate_limit_error"}
    kind = kinds.get(reply.status, "overloaded_error" if reply.status == 529 else "api_error")
    return {"type": "error", "error": {"type": kind, "message": reply.error or kind}}


def openai_tool_call(reply: Reply) -> dict[str, Any]:
    return {
        "id": _new_id("call_"),
        "type": "function",
        "function": {"name": reply.tool, "arguments": json.dumps(reply.tool_input)},
    }


def openai_usage(input_tokens: int, reply: Reply) -> dict[str, int]:
    out = _output_tokens(reply)
    return {
        "prompt_tokens": input_tokens,
        "completion_tokens": out,
        "total_tokens": input_tokens + out,
    }


def openai_completion(reply: Reply, model: str, input_tokens: int) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": reply.text or None}
    if reply.tool:
        message["tool_calls"] = [openai_tool_call(reply)]
    return {
        "id": _new_id("chatcmpl-"),
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": [
            {
                "index": 0,
                "message": message,
                "finish_reason": "tool_calls" if reply.tool else "stop",
            }
        ],
        "usage": openai_usage(input_tokens, reply),
    }


def openai_chunks(reply: Reply, model: str, input_tokens: int) -> Iterator[dict[str, Any]]:
    base = {
        "id": _new_id("chatcmpl-"),
        "object": "chat.completion.chunk",
        "created": int(time.time()),
        "model": model,
    }

    def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        return dict(base, choices=[{"index": 0, "delta": delta, "finish_reason": finish}])

    yield chunk({"role": "assistant", "content": ""})
    for piece in text_chunks(reply.text):
        yield chunk({"content": piece})
    if reply.tool:
        call = openai_tool_call(reply)
        head = dict(call, index=0, function={"name": reply.tool, "arguments": ""})
        yield chunk({"tool_calls": [head]})
        for piece in json_chunks(reply.tool_input):
            yield chunk({"tool_calls": [{"index": 0, "function": {"arguments": piece}}]})
    final = chunk({}, "tool_calls" if reply.tool else "stop")
    final["usage"] = openai_usage(input_tokens, reply)
    yield final


def openai_error(reply: Reply) -> dict[str, Any]:
    return {"error": {"message": reply.error or "fake error", "type": "server_error", "code": None}}


def gemini_chunks(reply: Reply, model: str, input_tokens: int) -> list[dict[str, Any]]:
    parts: list[dict[str, Any]] = [{"text": p} for p in text_chunks(reply.text)]
    if reply.tool:
        parts.append({"functionCall": {"name": reply.tool, "args": reply.tool_input}})
    if not parts:
        parts = [{"text": ""}]
    out = _output_tokens(reply)
    chunks = []
    for i, part in enumerate(parts):
        candidate: dict[str, Any] = {"content": {"role": "model", "parts": [part]}, "index": 0}
        chunk: dict[str, Any] = {"candidates": [candidate], "modelVersion": model}
        if i == len(parts) - 1:
            candidate["finishReason"] = "STOP"
            chunk["usageMetadata"] = {
                "promptTokenCount": input_tokens,
                "candidatesTokenCount": out,
                "totalTokenCount": input_tokens + out,
            }
        chunks.append(chunk)
    return chunks


def gemini_response(reply: Reply, model: str, input_tokens: int) -> dict[str, Any]:
    chunks = gemini_chunks(reply, model, input_tokens)
    merged = copy.deepcopy(chunks[-1])
    parts: list[dict[str, Any]] = []
    if reply.text:
        parts.append({"text": reply.text})
    if reply.tool:
        parts.append({"functionCall": {"name": reply.tool, "args": reply.tool_input}})
    merged["candidates"][0]["content"]["parts"] = parts or [{"text": ""}]
    return merged


def gemini_error(reply: Reply) -> dict[str, Any]:
    return {
        "error": {
            "code": reply.status,
            "message": reply.error or "fake error",
            "status": "UNAVAILABLE",
        }
    }


def models_list() -> dict[str, Any]:
    """Anthropic and OpenAI model-list shapes in one object; each client reads its own keys."""
    data = [
        {
            "type": "model",
            "object": "model",
            "id": m,
            "display_name": m,
            "created_at": "2025-01-01T00:00:00Z",
            "created": 1735689600,
            "owned_by": "fake",
        }
        for m in MODEL_IDS
    ]
    return {
        "object": "list",
        "data": data,
        "has_more": False,
        "first_id": MODEL_IDS[0],
        "last_id": MODEL_IDS[-1],
    }


# ----------------------------------------------------------------------- server


class _HTTPServer(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, addr: tuple[str, int], rules: dict[str, Any], log_path: Path | None):
        super().__init__(addr, _Handler)
        self.rules = rules
        self.log_path = log_path
        self.records: list[dict[str, Any]] = []
        self.lock = threading.Lock()

    def record(self, entry: dict[str, Any]) -> None:
        line = json.dumps(entry, default=str)
        with self.lock:
            self.records.append(entry)
            if self.log_path is not None:
                with self.log_path.open("a", encoding="utf-8") as f:
                    f.write(line + "\n")


class _Handler(BaseHTTPRequestHandler):
    # HTTP/1.1 so streamed replies can use chunked transfer-encoding, as the real APIs do.
    protocol_version = "HTTP/1.1"
    # Idle keep-alive connections must not pin handler threads forever.
    timeout = 120
    server: _HTTPServer
    _started = False  # whether this request's response has begun

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_GET(self) -> None:
        self._handle()

    def do_HEAD(self) -> None:
        self._handle()

    def do_POST(self) -> None:
        self._handle()

    def do_PUT(self) -> None:
        self._handle()

    def do_PATCH(self) -> None:
        self._handle()

    def do_DELETE(self) -> None:
        self._handle()

    def do_OPTIONS(self) -> None:
        self._handle()

    # -- plumbing

    def _read_body(self) -> bytes:
        if "chunked" in self.headers.get("Transfer-Encoding", "").lower():
            data = b""
            while True:
                size = int(self.rfile.readline().split(b";")[0].strip() or b"0", 16)
                if size == 0:
                    while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                        pass
                    break
                data += self.rfile.read(size)
                self.rfile.readline()
        else:
            data = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        encoding = self.headers.get("Content-Encoding", "").lower()
        try:
            if encoding == "gzip":
                data = gzip.decompress(data)
            elif encoding == "deflate":
                data = zlib.decompress(data)
        except (OSError, zlib.error):
            pass  # log the raw bytes rather than fail the request
        return data

    def _send_json(
        self, status: int, payload: Any, headers: Mapping[str, str] | None = None
    ) -> None:
        self._started = True
        raw = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(raw)))
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(raw)

    def _start_chunked(self, content_type: str, headers: Mapping[str, str] | None = None) -> None:
        self._started = True
        self.send_response(200)
        self.send_header("Content-Type", content_type)
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Transfer-Encoding", "chunked")
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()

    def _chunk(self, data: bytes) -> None:
        if data:
            self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
            self.wfile.flush()
            delay = self.server.rules.get("chunk_delay", 0.0)
            if delay:
                time.sleep(delay)

    def _end_chunked(self) -> None:
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()

    def _stream_sse(
        self,
        events: Iterator[tuple[str | None, Any]],
        done: bool = False,
        headers: Mapping[str, str] | None = None,
    ) -> None:
        self._start_chunked("text/event-stream", headers)
        for name, data in events:
            head = f"event: {name}\n" if name else ""
            self._chunk(f"{head}data: {json.dumps(data)}\n\n".encode())
        if done:
            self._chunk(b"data: [DONE]\n\n")
        self._end_chunked()

    # -- dispatch

    def _handle(self) -> None:
        self._started = False
        split = urlsplit(self.path)
        path = split.path
        query = parse_qs(split.query)
        raw = self._read_body()
        body: Any = None
        if raw:
            try:
                body = json.loads(raw)
            except ValueError:
                body = raw.decode("utf-8", "replace")
        headers = {k: v for k, v in self.headers.items() if k.lower() not in REDACTED_HEADERS}
        entry: dict[str, Any] = {
            "ts": time.time(),
            "method": self.command,
            "path": self.path,
            "headers": headers,
            "body": body,
        }
        if self.headers.get("authorization"):
            # Which credential came, without logging it (``credential_digest``).
            entry["auth_digest"] = credential_digest(self.headers["authorization"])
        obj = body if isinstance(body, Mapping) else {}
        rules = self.server.rules
        reply: Reply | None = None
        try:
            if self.command == "POST" and path.endswith("/messages/count_tokens"):
                self.server.record(entry)
                self._send_json(200, {"input_tokens": max(1, len(raw) // 4)})
            elif self.command == "POST" and path.endswith("/messages"):
                reply = decide(rules, anthropic_conversation(obj))
                entry["reply"] = reply.summary()
                self.server.record(entry)
                self._anthropic(reply, obj, len(raw) // 4)
            elif self.command == "POST" and path.endswith("/chat/completions"):
                reply = decide(rules, openai_conversation(obj))
                entry["reply"] = reply.summary()
                self.server.record(entry)
                self._openai(reply, obj, len(raw) // 4)
            elif self.command == "POST" and path.endswith("/responses"):
                request = responses_api.read_request(obj)
                reply = decide(rules, responses_conversation(request))
                entry["reply"] = reply.summary()
                self.server.record(entry)
                self._responses(reply, obj, request, len(raw) // 4)
            elif self.command == "POST" and ":" in path.rsplit("/", 1)[-1]:
                model, _, action = path.rsplit("/", 1)[-1].partition(":")
                if action == "countTokens":
                    self.server.record(entry)
                    self._send_json(200, {"totalTokens": max(1, len(raw) // 4)})
                elif action in ("generateContent", "streamGenerateContent"):
                    reply = decide(rules, gemini_conversation(obj))
                    entry["reply"] = reply.summary()
                    self.server.record(entry)
                    sse = query.get("alt") == ["sse"]
                    self._gemini(reply, model, len(raw) // 4, action, sse)
                else:
                    self.server.record(entry)
                    self._send_json(200, {})
            elif self.command == "GET" and path.rstrip("/").endswith("/models"):
                self.server.record(entry)
                self._send_json(200, models_list())
            elif self.command == "GET" and "/models/" in path:
                self.server.record(entry)
                model_id = path.rsplit("/", 1)[-1]
                self._send_json(200, dict(models_list()["data"][0], id=model_id))
            else:
                self.server.record(entry)
                self._send_json(200, {})
        except (BrokenPipeError, ConnectionResetError):
            # The client gave up mid-stream (e.g. an interrupted turn); nothing to answer.
            self.close_connection = True
        except Exception as exc:
            # A bad rule or an unexpected body must show up as an answer and in the log, not
            # as a dropped connection the CLI would retry or misreport.
            self.close_connection = True
            if "reply" not in entry:
                entry["reply"] = {"why": "fake server error", "error": repr(exc)}
                self.server.record(entry)
            if not self._started:
                error = {"type": "api_error", "message": repr(exc)}
                self._send_json(500, {"type": "error", "error": error})

    def _anthropic(self, reply: Reply, body: Mapping[str, Any], input_tokens: int) -> None:
        model = str(body.get("model") or MODEL_IDS[0])
        if reply.status != 200:
            self._send_json(reply.status, anthropic_error(reply), reply.headers)
        elif body.get("stream"):
            cache = self.server.rules.get("cache_usage")
            events = ((e["type"], e) for e in anthropic_events(reply, model, input_tokens, cache))
            self._stream_sse(events, headers=reply.headers)
        else:
            cache = self.server.rules.get("cache_usage")
            message = anthropic_message(reply, model, input_tokens, cache)
            self._send_json(200, message, reply.headers)

    def _openai(self, reply: Reply, body: Mapping[str, Any], input_tokens: int) -> None:
        model = str(body.get("model") or MODEL_IDS[-1])
        if reply.status != 200:
            self._send_json(reply.status, openai_error(reply))
        elif body.get("stream"):
            chunks = ((None, c) for c in openai_chunks(reply, model, input_tokens))
            self._stream_sse(chunks, done=True)
        else:
            self._send_json(200, openai_completion(reply, model, input_tokens))

    def _responses(
        self,
        reply: Reply,
        body: Mapping[str, Any],
        request: responses_api.ResponsesRequest,
        input_tokens: int,
    ) -> None:
        if reply.status != 200:
            self._send_json(reply.status, openai_error(reply))
            return
        tool = None
        namespace = ""
        if reply.tool:
            custom = reply.tool in request.custom_tools
            args = responses_api.call_input(reply.tool, reply.tool_input, custom)
            # An MCP tool is called by its name inside its server's namespace, also one no
            # search found (a forced ``mcp__<server>__<tool>``, as a model may guess it).
            namespace, name = request.namespaced.get(reply.tool) or responses_api.guessed(
                reply.tool
            )
            tool = (name, args)
        model = str(body.get("model") or MODEL_IDS[-1])
        pieces = text_chunks(reply.text)
        events = responses_api.reply_events(
            model, pieces, tool, input_tokens, _output_tokens(reply), namespace
        )
        if body.get("stream", True):
            self._stream_sse((e["type"], e) for e in events)
        else:
            self._send_json(200, list(events)[-1]["response"])

    def _gemini(self, reply: Reply, model: str, input_tokens: int, action: str, sse: bool) -> None:
        if reply.status != 200:
            self._send_json(reply.status, gemini_error(reply))
        elif action == "generateContent":
            self._send_json(200, gemini_response(reply, model, input_tokens))
        elif sse:
            self._stream_sse((None, c) for c in gemini_chunks(reply, model, input_tokens))
        else:
            # Without alt=sse the streaming endpoint returns one JSON array, sent piecewise.
            self._start_chunked("application/json")
            chunks = gemini_chunks(reply, model, input_tokens)
            for i, c in enumerate(chunks):
                self._chunk((("[" if i == 0 else ",") + json.dumps(c)).encode())
            self._chunk(b"]")
            self._end_chunked()


class FakeModelServer:
    """A running fake model server; use ``start_fake_model_server`` to get one."""

    def __init__(
        self,
        rules: RulesSource = None,
        log_path: Path | str | None = None,
        *,
        host: str = "127.0.0.1",
        port: int = 0,
    ) -> None:
        self.log_path = Path(log_path) if log_path is not None else None
        self._httpd = _HTTPServer((host, port), load_rules(rules), self.log_path)
        self.host = host
        self.port: int = self._httpd.server_address[1]
        self.url = f"http://{host}:{self.port}"
        self._thread: threading.Thread | None = None

    def start(self) -> FakeModelServer:
        # A short poll interval keeps stop() (and so test teardown) fast.
        self._thread = threading.Thread(
            target=self._httpd.serve_forever,
            kwargs={"poll_interval": 0.05},
            name=f"fake-model-{self.port}",
            daemon=True,
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._thread is not None:
            self._httpd.shutdown()
            self._thread.join(timeout=10)
            self._thread = None
        self._httpd.server_close()

    def set_rules(self, rules: RulesSource) -> None:
        """Swap the rules of a running server (takes effect on the next request)."""
        self._httpd.rules = load_rules(rules)

    def requests(self, path: str | None = None) -> list[dict[str, Any]]:
        """Logged requests so far, optionally only those whose path (without query) ends so."""
        with self._httpd.lock:
            entries = list(self._httpd.records)
        if path is not None:
            entries = [e for e in entries if urlsplit(e["path"]).path.endswith(path)]
        return entries

    def message_requests(self) -> list[dict[str, Any]]:
        """Anthropic ``POST /v1/messages`` requests, count_tokens excluded."""
        return [e for e in self.requests("/v1/messages") if e["method"] == "POST"]

    def __enter__(self) -> FakeModelServer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def start_fake_model_server(
    rules: RulesSource = None, log_path: Path | str | None = None
) -> FakeModelServer:
    """Start a fake model server on 127.0.0.1 and a free port, serving from a daemon thread."""
    return FakeModelServer(rules, log_path).start()


def read_log(path: Path | str) -> list[dict[str, Any]]:
    """Parse a request log written by the server (one JSON object per line)."""
    p = Path(path)
    if not p.exists():
        return []
    return [json.loads(line) for line in p.read_text(encoding="utf-8").splitlines() if line.strip()]


def request_texts(entry: Mapping[str, Any]) -> list[str]:
    """Every text, tool_use input and tool_result string in a logged Messages API request
    (or the texts, tool calls and outputs of a Responses API request)."""
    out: list[str] = []
    body = entry.get("body")
    if not isinstance(body, Mapping):
        return out
    if "input" in body and "messages" not in body:
        return responses_api.texts_of(body)
    for message in body.get("messages") or []:
        content = message.get("content") if isinstance(message, Mapping) else None
        if isinstance(content, str):
            out.append(content)
            continue
        for block in content or []:
            if not isinstance(block, Mapping):
                continue
            if block.get("type") == "text":
                out.append(str(block.get("text", "")))
            elif block.get("type") == "tool_use":
                out.append(json.dumps(block.get("input")))
            elif block.get("type") == "tool_result":
                inner = block.get("content")
                out.append(inner if isinstance(inner, str) else _anthropic_text(inner))
    return out


def request_images(entry: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The image blocks of a logged Messages API request, in order, tool results included
    (or the ``input_image`` parts of a Responses API request)."""
    out: list[dict[str, Any]] = []
    body = entry.get("body")
    if isinstance(body, Mapping) and "input" in body and "messages" not in body:
        return responses_api.images_of(body)

    def visit(content: Any) -> None:
        for block in content if isinstance(content, list) else []:
            if not isinstance(block, Mapping):
                continue
            if block.get("type") == "image":
                out.append(dict(block))
            elif block.get("type") == "tool_result":
                visit(block.get("content"))

    messages = body.get("messages") if isinstance(body, Mapping) else None
    for message in messages if isinstance(messages, list) else []:
        if isinstance(message, Mapping):
            visit(message.get("content"))
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--rules", type=Path, help="JSON rules file (default: built-in rules)")
    parser.add_argument("--log", type=Path, help="append one JSON line per request here")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0, help="0 picks a free port")
    parser.add_argument("--port-file", type=Path, help="also write the port to this file")
    args = parser.parse_args(argv)

    server = FakeModelServer(args.rules, args.log, host=args.host, port=args.port)

    def stop(signum: int, frame: object) -> None:
        raise SystemExit(0)

    signal.signal(signal.SIGTERM, stop)
    if args.port_file is not None:
        args.port_file.write_text(f"{server.port}\n")
    print(f"LISTENING {server.port}", flush=True)
    try:
        server._httpd.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server._httpd.server_close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
