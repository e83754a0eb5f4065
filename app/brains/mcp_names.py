"""Claude Code's names for the MCP tools of agents that name them their own way.

Rules and disallowed tools are written in Claude Code's vocabulary for every backend
(``mcp__<server>__<tool>``), while OpenCode calls a tool ``<server>_<tool>`` and GitHub
Copilot CLI ``<server>-<tool>``. No imports beyond the standard library, so listing the
backends stays cheap.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

__all__ = ["McpNames"]

# Characters a tool name cannot hold; the agents are taken to write them as "_" in their
# tool names (only plain server names were measured).
_UNSAFE = re.compile(r"[^A-Za-z0-9_-]")


class McpNames:
    """``mcp__<server>__<tool>`` for an agent's ``<server><separator><tool>``."""

    def __init__(self, servers: Iterable[str], separator: str) -> None:
        # Longest first, so a server whose name extends another's is matched whole.
        self._prefixes = sorted(
            ((_UNSAFE.sub("_", name) + separator, name) for name in servers),
            key=lambda pair: -len(pair[0]),
        )

    def claude_name(self, tool: str) -> str | None:
        """Claude Code's name of ``tool``, or None when it is no profile server's tool."""
        for prefix, server in self._prefixes:
            if tool.startswith(prefix) and len(tool) > len(prefix):
                return f"mcp__{server}__{tool[len(prefix) :]}"
        return None
