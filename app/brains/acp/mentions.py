"""``@path`` mentions in a message, as embedded resources for ACP agents that take them.

The composer puts a mentioned file in the text as ``@<path relative to the folder>``.
Claude Code reads such files itself; an ACP agent whose ``promptCapabilities`` include
``embeddedContext`` also gets each one's content as a ``resource`` block (file URI and
text), the way editors attach files. Only regular text files inside the session's folder
are embedded, each cut at ``MAX_EMBEDDED_BYTES``; anything else stays a path in the text.
"""

from __future__ import annotations

import re
from pathlib import Path

from acp import embedded_text_resource, resource_block
from acp.schema import EmbeddedResourceContentBlock

# Per file and per message: a mention is context, not an upload.
MAX_EMBEDDED_BYTES = 256 * 1024
MAX_EMBEDDED_FILES = 20
# "@" at the start or after whitespace, up to the next whitespace.
MENTION = re.compile(r"(?:^|(?<=\s))@(\S+)")
# Sentence punctuation a mention may be followed by without a space.
TRAILING = ".,;:!?)]}'\""


def mentioned_files(text: str, cwd: str) -> list[Path]:
    """The files ``text`` mentions that exist inside ``cwd``, in order, each once."""
    root = Path(cwd).resolve()
    found: list[Path] = []
    for match in MENTION.finditer(text):
        word = match.group(1)
        for candidate in (word, word.rstrip(TRAILING)):
            path = _inside(root, candidate)
            if path is not None:
                if path not in found:
                    found.append(path)
                break
        if len(found) >= MAX_EMBEDDED_FILES:
            break
    return found


def _inside(root: Path, rel: str) -> Path | None:
    if not rel or rel.startswith(("/", "~")):
        return None
    try:
        path = (root / rel).resolve()
    except (OSError, RuntimeError, ValueError):
        return None
    # Links that lead out of the folder, and "..", are not followed.
    if not path.is_relative_to(root) or not path.is_file():
        return None
    return path


def resource_blocks(text: str, cwd: str) -> list[EmbeddedResourceContentBlock]:
    """A ``resource`` block per mentioned text file (binary ones are left as paths)."""
    blocks = []
    for path in mentioned_files(text, cwd):
        try:
            with path.open("rb") as f:
                data = f.read(MAX_EMBEDDED_BYTES + 1)
        except OSError:
            continue
        if b"\0" in data:
            continue
        content = data[:MAX_EMBEDDED_BYTES].decode("utf-8", errors="ignore")
        if len(data) > MAX_EMBEDDED_BYTES:
            content += f"\n[cut at {MAX_EMBEDDED_BYTES // 1024} KiB]"
        blocks.append(resource_block(embedded_text_resource(path.as_uri(), content)))
    return blocks
