"""What a permission prompt shows: exactly what will run or change.

Computed when the request arrives, so the card still shows the file as it was when
the user was asked (a Write is diffed against the file on disk at that moment).
"""

from __future__ import annotations

import difflib
from pathlib import Path
from typing import Any

from app.services.rules import file_path_of

MAX_FILE_BYTES = 2 * 1024 * 1024
MAX_DIFF_LINES = 4000


def unified_diff(old: str, new: str, path: str) -> str:
    lines = difflib.unified_diff(
        old.splitlines(keepends=True),
        new.splitlines(keepends=True),
        fromfile=f"a/{path}",
        tofile=f"b/{path}",
        n=3,
    )
    out = []
    for i, line in enumerate(lines):
        if i >= MAX_DIFF_LINES:
            out.append("… (diff truncated)\n")
            break
        out.append(line if line.endswith("\n") else line + "\n")
    return "".join(out)


def _read_current(path: str, cwd: str) -> str | None:
    """The file's text now, or None if it does not exist / is not readable text."""
    p = Path(path)
    if not p.is_absolute():
        p = Path(cwd) / p
    try:
        if not p.is_file() or p.stat().st_size > MAX_FILE_BYTES:
            return None
        return p.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None


def build_preview(tool: str, tool_input: dict[str, Any], cwd: str) -> dict[str, Any]:
    """A small, template-friendly description of the request."""
    if tool == "Bash":
        return {
            "kind": "command",
            "command": str(tool_input.get("command", "")),
            "description": str(tool_input.get("description", "")),
        }
    path = file_path_of(tool_input)
    if tool == "Edit" and path:
        old = str(tool_input.get("old_string", ""))
        new = str(tool_input.get("new_string", ""))
        return {"kind": "diff", "path": path, "diff": unified_diff(old, new, path)}
    if tool == "MultiEdit" and path:
        parts = [
            unified_diff(str(e.get("old_string", "")), str(e.get("new_string", "")), path)
            for e in tool_input.get("edits", [])
            if isinstance(e, dict)
        ]
        return {"kind": "diff", "path": path, "diff": "".join(parts)}
    if tool == "Write" and path:
        current = _read_current(path, cwd)
        content = str(tool_input.get("content", ""))
        return {
            "kind": "diff",
            "path": path,
            "new_file": current is None,
            "diff": unified_diff(current or "", content, path),
        }
    if tool.startswith("mcp__"):
        _, server, name = (tool.split("__", 2) + ["", ""])[:3]
        return {"kind": "mcp", "server": server, "tool": name, "arguments": tool_input}
    if path:
        return {"kind": "path", "path": path}
    return {"kind": "input", "input": tool_input}
