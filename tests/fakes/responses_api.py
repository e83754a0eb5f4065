"""The OpenAI Responses API dialect of the fake model server (``POST …/responses``), as Codex
speaks it: the request's ``input`` items are read into what the rules look at, and a reply is
written as the Responses SSE events Codex accepts.

Standard library only and free of imports from the server, so the server can load it both
as a package module and as a plain script beside it.

What Codex sends and expects (codex 0.166 behind codex-acp 2.6.0):

* ``input`` holds the whole conversation. Codex adds user messages of its own
  (``<environment_context>…``, ``<turn_aborted>…``) and developer messages ("Approved command
  prefix saved"); neither is the user's prompt.
* Tools are ``{"type": "function", "name": …, "parameters": …}``, ``{"type": "custom",
  "name": "apply_patch", …}`` (freeform input) or ``{"type": "namespace", "tools": […]}``.
* Tool results come back as ``function_call_output`` / ``custom_tool_call_output`` items
  after the last prompt.
* Side requests (a title, the "guardian" review) ask for JSON with ``text.format`` of type
  ``json_schema``; they offer no tools.
"""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "ResponsesRequest",
    "call_input",
    "guessed",
    "images_of",
    "read_request",
    "reply_events",
    "texts_of",
]

# Codex's own user messages, which wrap context in tags, never the typed prompt.
_OWN_MESSAGE = re.compile(r"^\s*<[a-z_]+>")
# Codex's tool for finding the tools it defers (a profile's MCP tools): offered as
# ``{"type": "tool_search"}``, called with a ``tool_search_call`` item.
TOOL_SEARCH = "tool_search"


@dataclass
class ResponsesRequest:
    """What the rules look at in one Responses request."""

    user_text: str = ""
    after_tool: bool = False
    tool_result_text: str = ""
    offered_tools: list[str] = field(default_factory=list)
    tool_schemas: dict[str, Any] = field(default_factory=dict)
    # Which offered tools take freeform text (``custom``) rather than JSON arguments.
    custom_tools: set[str] = field(default_factory=set)
    json_schema: Any = None
    wants_json: bool = False
    # Tools of a namespace (MCP servers), offered or found by a tool search, by their
    # Claude Code name (``mcp__<server>__<tool>``): (namespace, name) to call them by.
    namespaced: dict[str, tuple[str, str]] = field(default_factory=dict)


def _parts_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    parts = content if isinstance(content, list) else []
    return "\n".join(
        str(p.get("text", ""))
        for p in parts
        if isinstance(p, Mapping) and p.get("type") in ("input_text", "output_text", "text")
    )


def _is_prompt(item: Mapping[str, Any]) -> bool:
    if item.get("type", "message") != "message" or item.get("role") != "user":
        return False
    return not _OWN_MESSAGE.match(_parts_text(item.get("content")))


def read_request(body: Mapping[str, Any]) -> ResponsesRequest:
    """The prompt, the tool results after it, the tools offered and any JSON format asked."""
    items = [i for i in body.get("input") or [] if isinstance(i, Mapping)]
    last = max((n for n, item in enumerate(items) if _is_prompt(item)), default=-1)
    outputs = [i for i in items[last + 1 :] if str(i.get("type", "")).endswith("_output")]
    results = []
    for item in outputs:
        # A tool search answers with the tools it found, not with an output.
        out = item.get("tools") if item.get("type") == "tool_search_output" else item.get("output")
        results.append(out if isinstance(out, str) else json.dumps(out))
    request = ResponsesRequest(
        user_text=_parts_text(items[last].get("content")) if last >= 0 else "",
        after_tool=bool(outputs),
        tool_result_text="\n".join(results),
    )
    for tool in body.get("tools") or []:
        if not isinstance(tool, Mapping):
            continue
        inner = tool.get("tools") if tool.get("type") == "namespace" else [tool]
        for t in inner if isinstance(inner, list) else []:
            name = str(t.get("name") or t.get("type") or "")
            request.offered_tools.append(name)
            request.tool_schemas[name] = t.get("parameters")
            if t.get("type") == "custom":
                request.custom_tools.add(name)
        if tool.get("type") == "namespace":
            _add_namespace(request, tool)
    # What a tool search found is callable from then on.
    for item in items:
        if item.get("type") == "tool_search_output":
            for tool in item.get("tools") or []:
                if isinstance(tool, Mapping) and tool.get("type") == "namespace":
                    _add_namespace(request, tool)
    fmt = (body.get("text") or {}).get("format") if isinstance(body.get("text"), Mapping) else None
    if isinstance(fmt, Mapping) and fmt.get("type") in ("json_schema", "json_object"):
        request.wants_json = True
        request.json_schema = fmt.get("schema")
    return request


def _add_namespace(request: ResponsesRequest, namespace: Mapping[str, Any]) -> None:
    space = str(namespace.get("name") or "")
    for t in namespace.get("tools") or []:
        if isinstance(t, Mapping) and t.get("name"):
            full = f"{space}__{t['name']}"
            request.offered_tools.append(full)
            request.tool_schemas[full] = t.get("parameters")
            request.namespaced[full] = (space, str(t["name"]))


def guessed(tool: str) -> tuple[str, str]:
    """(namespace, name) to call ``tool`` by when no tool list named it: ``mcp__<server>__<t>``
    in the namespace ``mcp__<server>``, anything else by its own name."""
    server, sep, name = tool.removeprefix("mcp__").partition("__")
    if tool.startswith("mcp__") and sep and server and name:
        return f"mcp__{server}", name
    return "", tool


def call_input(tool: str, tool_input: dict[str, Any], custom: bool) -> dict[str, Any] | str:
    """A rule's input in the shape Codex's tool takes.

    Rules are written in Claude Code's names (``Bash`` ``{"command"}``, ``Write``
    ``{"file_path", "content"}``), so one rule serves every dialect: Codex's ``exec_command``
    takes ``cmd``, and ``apply_patch`` takes a patch (freeform text when the tool is custom).
    """
    args = dict(tool_input)
    if tool == "exec_command" and "command" in args:
        # ``command`` wins over a ``cmd`` the server filled in from the tool's schema.
        args["cmd"] = args.pop("command")
        args.pop("description", None)
    if tool != "apply_patch":
        return args
    patch = args.get("input") or args.get("patch")
    if not isinstance(patch, str):
        path = str(args.get("file_path") or args.get("path") or "new.txt")
        body = "\n".join("+" + line for line in str(args.get("content", "")).split("\n"))
        patch = f"*** Begin Patch\n*** Add File: {path}\n{body}\n*** End Patch\n"
    return patch if custom else {"input": patch}


def _id(prefix: str) -> str:
    return f"{prefix}_{uuid.uuid4().hex[:24]}"


def reply_events(
    model: str,
    pieces: list[str],
    tool: tuple[str, dict[str, Any] | str] | None,
    input_tokens: int,
    output_tokens: int,
    namespace: str = "",
) -> Iterator[dict[str, Any]]:
    """The SSE events of one reply: text streamed in ``pieces``, then the tool call, if any
    (in ``namespace``, if given)."""
    rid = _id("resp")
    head = {"id": rid, "object": "response", "model": model, "status": "in_progress"}
    yield {"type": "response.created", "response": dict(head, output=[])}
    index = 0
    if pieces:
        yield from _message(index, pieces)
        index += 1
    if tool is not None:
        yield from _tool_call(index, *tool, namespace=namespace)
    usage = {
        "input_tokens": input_tokens,
        "input_tokens_details": {"cached_tokens": 0},
        "output_tokens": output_tokens,
        "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": input_tokens + output_tokens,
    }
    done = dict(head, status="completed", output=[], usage=usage)
    yield {"type": "response.completed", "response": done}


def _message(index: int, pieces: list[str]) -> Iterator[dict[str, Any]]:
    mid = _id("msg")
    text = "".join(pieces)
    item = {"type": "message", "id": mid, "role": "assistant", "status": "in_progress"}
    added = dict(item, content=[])
    yield {"type": "response.output_item.added", "output_index": index, "item": added}
    where = {"item_id": mid, "output_index": index, "content_index": 0}
    part = {"type": "output_text", "text": "", "annotations": []}
    yield {"type": "response.content_part.added", **where, "part": part}
    for piece in pieces:
        yield {"type": "response.output_text.delta", **where, "delta": piece}
    yield {"type": "response.output_text.done", **where, "text": text}
    content = [dict(part, text=text)]
    done = dict(item, status="completed", content=content)
    yield {"type": "response.output_item.done", "output_index": index, "item": done}


def _tool_call(
    index: int, name: str, args: dict[str, Any] | str, namespace: str = ""
) -> Iterator[dict[str, Any]]:
    if name == TOOL_SEARCH and isinstance(args, dict):
        yield from _tool_search_call(index, args)
        return
    custom = isinstance(args, str)
    kind, key = ("custom_tool_call", "input") if custom else ("function_call", "arguments")
    raw = args if isinstance(args, str) else json.dumps(args)
    item = {"type": kind, "id": _id("fc"), "call_id": _id("call"), "name": name}
    if namespace:
        item["namespace"] = namespace
    added = dict(item, status="in_progress", **{key: ""})
    yield {"type": "response.output_item.added", "output_index": index, "item": added}
    delta = (
        "response.custom_tool_call_input.delta"
        if custom
        else ("response.function_call_arguments.delta")
    )
    yield {"type": delta, "item_id": item["id"], "output_index": index, "delta": raw}
    done = dict(item, status="completed", **{key: raw})
    yield {"type": "response.output_item.done", "output_index": index, "item": done}


def _tool_search_call(index: int, args: dict[str, Any]) -> Iterator[dict[str, Any]]:
    """A call of Codex's ``tool_search``: an item of its own, run by the client (Codex), whose
    arguments are an object, not a JSON string."""
    item = {
        "type": "tool_search_call",
        "id": _id("ts"),
        "call_id": _id("call"),
        "execution": "client",
        "arguments": args,
    }
    added = dict(item, status="in_progress")
    yield {"type": "response.output_item.added", "output_index": index, "item": added}
    done = dict(item, status="completed")
    yield {"type": "response.output_item.done", "output_index": index, "item": done}


def texts_of(body: Mapping[str, Any]) -> list[str]:
    """Every message text, tool call and tool output in a Responses request's ``input``."""
    out: list[str] = []
    for item in body.get("input") or []:
        if not isinstance(item, Mapping):
            continue
        kind = str(item.get("type", "message"))
        if kind == "message":
            out.append(_parts_text(item.get("content")))
        elif kind.endswith("_output"):
            output = item.get("output")
            out.append(output if isinstance(output, str) else json.dumps(output))
        elif kind in ("function_call", "custom_tool_call"):
            out.append(str(item.get("arguments") or item.get("input") or ""))
    return out


def images_of(body: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Every ``input_image`` part of the messages in a Responses request's ``input``, in order
    (Codex sends a pasted image as one, with a ``data:`` URL)."""
    out: list[dict[str, Any]] = []
    for item in body.get("input") or []:
        content = item.get("content") if isinstance(item, Mapping) else None
        for part in content if isinstance(content, list) else []:
            if isinstance(part, Mapping) and part.get("type") == "input_image":
                out.append(dict(part))
    return out
