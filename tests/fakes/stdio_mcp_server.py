"""A tiny MCP server on stdio for real-CLI tests: one tool, ``mark``, that records each call.

Standard library only, so an agent can start it as ``python stdio_mcp_server.py LOG``. It
speaks the MCP stdio transport (one JSON-RPC message per line) far enough for an agent to
list and call its tool: ``initialize``, ``tools/list`` and ``tools/call``; notifications
(``notifications/initialized``, ``notifications/cancelled``) are accepted silently, and
any other request is answered "method not found".

Every message received is appended to LOG as one JSON line, so a test can tell that the
agent started the server and what it called. ``mark`` answers ``marked <text>``.

The values of its ``SECRET_*`` environment variables, if any, are the LOG's first line
(``{"env": {...}}``), so a test can tell that a server's env reached it.

Names after LOG add tools of the same shape (``python stdio_mcp_server.py LOG stamp``):
``stamp`` answers ``stamped <text>``, so a test can deny one tool of a server and use another.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

TOOL = {
    "name": "mark",
    "description": "Record a mark with the given text and answer with it.",
    "inputSchema": {
        "type": "object",
        "properties": {"text": {"type": "string", "description": "what to mark"}},
        "required": ["text"],
    },
}


def tools(extra: list[str]) -> list[dict[str, Any]]:
    """``mark`` and a tool of the same shape for each name in ``extra``."""
    return [TOOL] + [{**TOOL, "name": name, "description": f"{name} the text"} for name in extra]


def answer(request: dict[str, Any], extra: list[str] | None = None) -> dict[str, Any] | None:
    """The response to one message (None for a notification); ``extra``: more tools."""
    offered = tools(extra or [])
    method = request.get("method")
    if "id" not in request:
        return None
    reply: dict[str, Any] = {"jsonrpc": "2.0", "id": request["id"]}
    params = request.get("params") or {}
    if method == "initialize":
        reply["result"] = {
            # Echo the client's version: this server's three methods are the same in all.
            "protocolVersion": params.get("protocolVersion", "2025-06-18"),
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "angelia-test-mark", "version": "1.0"},
        }
    elif method == "tools/list":
        reply["result"] = {"tools": offered}
    elif method == "tools/call" and params.get("name") in [t["name"] for t in offered]:
        text = str((params.get("arguments") or {}).get("text", ""))
        done = f"{params['name']}ed {text}"
        reply["result"] = {"content": [{"type": "text", "text": done}]}
    elif method == "ping":
        reply["result"] = {}
    else:
        reply["error"] = {"code": -32601, "message": f"method not found: {method}"}
    return reply


def main() -> None:
    log = Path(sys.argv[1]) if len(sys.argv) > 1 else None
    extra = sys.argv[2:]
    secrets = {name: value for name, value in os.environ.items() if name.startswith("SECRET_")}
    if log is not None and secrets:
        with log.open("a") as f:
            f.write(json.dumps({"env": secrets}) + "\n")
    for line in sys.stdin:
        if not line.strip():
            continue
        request = json.loads(line)
        if log is not None:
            with log.open("a") as f:
                f.write(json.dumps(request) + "\n")
        reply = answer(request, extra)
        if reply is not None:
            sys.stdout.write(json.dumps(reply) + "\n")
            sys.stdout.flush()


if __name__ == "__main__":
    main()
