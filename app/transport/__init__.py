"""Transport shared by every brain: an agent CLI child process and NDJSON framing.

Knows nothing about brains, protocols or the database; protocol layers build on
``AgentProcess.write_json`` and ``AgentProcess.messages``.
"""

from __future__ import annotations

from app.transport.framing import DEFAULT_MAX_LINE_BYTES, LineFramer, parse_json_line
from app.transport.process import AgentProcess, ProcessNotRunningError, build_env, describe_exit

__all__ = [
    "DEFAULT_MAX_LINE_BYTES",
    "AgentProcess",
    "LineFramer",
    "ProcessNotRunningError",
    "build_env",
    "describe_exit",
    "parse_json_line",
]
