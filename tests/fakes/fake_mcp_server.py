"""A minimal MCP server on stdio for tests: one tool, ``mark``, that records its calls.

Newline-delimited JSON-RPC 2.0 as the MCP stdio transport has it. It answers
``initialize`` (echoing the client's protocol version), ``tools/list``, ``tools/call`` and
``ping``; notifications are ignored and any other request gets -32601. Each call of
``mark`` appends ``{"text": ...}`` as a JSON line to the file named by ``FAKE_MCP_LOG``
and answers ``marked: <text>``. Standard library only, run as a plain script.
"""

from __future__ import annotations

import json
import os
import sys
from typing import Any

TOOL = {
    "name": "mark",
    "description": "Record a short text with the test's MCP server.",
    "inputSchema": {
        "type": "object",
        "properties": {"text": {"type": "string", "description": "What to record"}},
        "required": ["text"],
    },
}


def answer(request: dict[str, Any]) -> dict[str, Any]:
    method = request.get("method")
    params = request.get("params") or {}
    if method == "initialize":
        return {
            "protocolVersion": params.get("protocolVersion", "2025-06-18"),
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "fake-mcp", "version": "1.0.0"},
        }
    if method == "tools/list":
        return {"tools": [TOOL]}
    if method == "tools/call" and params.get("name") == "mark":
        text = str((params.get("arguments") or {}).get("text", ""))
        if log := os.environ.get("FAKE_MCP_LOG"):
            with open(log, "a", encoding="utf-8") as f:
                f.write(json.dumps({"text": text}) + "\n")
        return {"content": [{"type": "text", "text": f"marked: {text}"}]}
    if method == "ping":
        return {}
    raise LookupError(str(method))


def main() -> None:
    for line in sys.stdin:
        if not line.strip():
            continue
        request = json.loads(line)
        if "id" not in request:
            continue  # a notification
        reply: dict[str, Any] = {"jsonrpc": "2.0", "id": request["id"]}
        try:
            reply["result"] = answer(request)
        except LookupError as exc:
            reply["error"] = {"code": -32601, "message": f"Method not found: {exc}"}
        sys.stdout.write(json.dumps(reply) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
