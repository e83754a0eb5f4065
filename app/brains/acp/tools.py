"""One ACP tool call, merged from its partial ``tool_call`` / ``tool_call_update``
notifications, and the text of ACP content blocks. Pure bookkeeping, no I/O."""

from __future__ import annotations

import difflib
import json
from dataclasses import dataclass, field
from typing import Any, TypeAlias

from acp.schema import (
    AudioContentBlock,
    ContentToolCallContent,
    EmbeddedResourceContentBlock,
    FileEditToolCallContent,
    ImageContentBlock,
    ResourceContentBlock,
    TerminalToolCallContent,
    TextContentBlock,
    TextResourceContents,
    ToolCallStart,
    ToolCallUpdate,
)

from app.brains.events import JsonDict

__all__ = ["ToolState", "content_text", "render_diff"]

ContentBlock: TypeAlias = (
    TextContentBlock
    | ImageContentBlock
    | AudioContentBlock
    | ResourceContentBlock
    | EmbeddedResourceContentBlock
)
ToolContent: TypeAlias = ContentToolCallContent | FileEditToolCallContent | TerminalToolCallContent


def content_text(block: ContentBlock) -> str:
    """A content block as Markdown text; media is only named, never inlined."""
    if isinstance(block, TextContentBlock):
        return block.text
    if isinstance(block, ResourceContentBlock):
        return f"[{block.title or block.name}]({block.uri})"
    if isinstance(block, EmbeddedResourceContentBlock):
        resource = block.resource
        if isinstance(resource, TextResourceContents):
            return resource.text
        return f"[{resource.uri}]"
    if isinstance(block, ImageContentBlock):
        return f"[image {block.mime_type}]"
    return f"[audio {block.mime_type}]"


def render_diff(path: str, old: str | None, new: str) -> str:
    """A unified diff of one ACP ``diff`` item (whole-file before/after texts)."""
    lines = difflib.unified_diff(
        (old or "").splitlines(),
        new.splitlines(),
        fromfile="/dev/null" if old is None else path,
        tofile=path,
        lineterm="",
    )
    return "\n".join(lines)


def _json_dict(value: Any) -> JsonDict:
    if value is None:
        return {}
    if isinstance(value, dict):
        return value
    return {"input": value}


@dataclass
class ToolState:
    """Everything known about one tool call, merged from its partial updates."""

    tool_call_id: str
    title: str = ""
    kind: str = "other"
    status: str = "pending"
    raw_input: Any = None
    raw_output: Any = None
    content: list[ToolContent] = field(default_factory=list)
    locations: list[str] = field(default_factory=list)
    announced: bool = False
    finished: bool = False

    @property
    def name(self) -> str:
        """What the app calls the tool: ACP has no tool names, only titles and kinds."""
        return self.title or self.kind

    @property
    def input(self) -> JsonDict:
        return _json_dict(self.raw_input)

    def as_claude_tool(self) -> tuple[str, JsonDict]:
        """The call in Claude Code's tool vocabulary, so one set of permission rules
        (``Bash(git add:*)``, ``Edit(src/**)``) works for every backend. ACP has only
        kinds and titles; anything without a clear equivalent keeps its own name."""
        raw = self.input
        if self.kind == "execute":
            command = raw.get("command") or raw.get("cmd")
            if isinstance(command, list):
                command = " ".join(str(c) for c in command)
            return "Bash", {**raw, "command": str(command or self.title)}
        path = next(
            (raw[k] for k in ("file_path", "path", "abs_path", "filePath") if raw.get(k)),
            self.locations[0] if self.locations else None,
        )
        named = {"edit": "Edit", "delete": "Edit", "move": "Edit", "read": "Read"}
        if self.kind in named and path:
            return named[self.kind], {**raw, "file_path": str(path)}
        if self.kind == "fetch" and raw.get("url"):
            return "WebFetch", raw
        return self.name, raw

    def merge(self, update: ToolCallStart | ToolCallUpdate) -> None:
        if update.title is not None:
            self.title = update.title
        if update.kind is not None:
            self.kind = update.kind
        if update.status is not None:
            self.status = update.status
        if update.raw_input is not None:
            self.raw_input = update.raw_input
        if update.raw_output is not None:
            self.raw_output = update.raw_output
        # Collections are replaced, not appended to (ACP tool-calls.mdx).
        if update.content is not None:
            self.content = list(update.content)
        if update.locations is not None:
            self.locations = [location.path for location in update.locations]

    def output(self) -> str:
        parts: list[str] = []
        for item in self.content:
            if isinstance(item, ContentToolCallContent):
                parts.append(content_text(item.content))
            elif isinstance(item, FileEditToolCallContent):
                parts.append(render_diff(item.path, item.old_text, item.new_text))
            else:
                parts.append(f"[terminal {item.terminal_id}]")
        if not parts and self.raw_output is not None:
            raw = self.raw_output
            parts.append(
                raw if isinstance(raw, str) else json.dumps(raw, indent=2, ensure_ascii=False)
            )
        return "\n".join(part for part in parts if part)
