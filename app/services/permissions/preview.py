"""What a permission prompt shows: exactly what will run or change.

Computed when the request arrives, so the card still shows the file as it was when
the user was asked (a Write is diffed against the file on disk at that moment).
"""

from __future__ import annotations

import difflib
import re
from pathlib import Path
from typing import Any

from app.services.permissions.rules import file_path_of

MAX_FILE_BYTES = 2 * 1024 * 1024
MAX_DIFF_LINES = 4000
_HUNK = re.compile(r"^@@ -(\d+)((?:,\d+)?) \+(\d+)((?:,\d+)?) @@")


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


def hunk_header(header: str, offset: int | None) -> str:
    """A hunk header of a diff between two snippets, moved ``offset`` lines down to where
    the first snippet is in its file.

    ``None``: that place is unknown, so the header carries no numbers rather than the
    snippet's own (``@@ -1 +1 @@`` for a change on line 40)."""
    found = _HUNK.match(header)
    if found is None:
        return header
    if offset is None:
        return "@@" + header[found.end() :]
    old, old_len, new, new_len = found.groups()
    # An empty side counts from the line before it (0 for the top), as in difflib.
    return (
        f"@@ -{int(old) + offset}{old_len} +{int(new) + offset}{new_len} @@" + header[found.end() :]
    )


def _numbered(diff: str, offset: int | None) -> str:
    return "".join(
        hunk_header(line, offset) if line.startswith("@@") else line
        for line in diff.splitlines(keepends=True)
    )


def _offset(text: str | None, old: str, replace_all: bool = False) -> int | None:
    """Lines above where ``old`` starts in ``text``; None if not there exactly once."""
    if text is None or not old:
        return None
    at = text.find(old)
    if at < 0 or (replace_all and text.count(old) > 1):
        return None
    return text.count("\n", 0, at)


def edit_diffs(edits: list[tuple[str, str, bool]], path: str, current: str | None) -> str:
    """The diff of each (old, new, replace_all) edit in turn, numbered by the place of
    ``old`` in the file as the edits before it leave it; unnumbered where the file could
    not be read or does not hold ``old``."""
    parts = []
    text = current
    for old, new, replace_all in edits:
        offset = _offset(text, old, replace_all)
        parts.append(_numbered(unified_diff(old, new, path), offset))
        if text is not None:
            text = text.replace(old, new, -1 if replace_all else 1) if offset is not None else None
    return "".join(parts)


def _edits(tool_input: dict[str, Any], tool: str) -> list[tuple[str, str, bool]]:
    raw = tool_input.get("edits", []) if tool == "MultiEdit" else [tool_input]
    return [
        (str(e.get("old_string", "")), str(e.get("new_string", "")), e.get("replace_all") is True)
        for e in raw
        if isinstance(e, dict)
    ]


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
    if tool in ("Edit", "MultiEdit") and path:
        current = _read_current(path, cwd)
        diff = edit_diffs(_edits(tool_input, tool), path, current)
        return {"kind": "diff", "path": path, "diff": diff}
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
