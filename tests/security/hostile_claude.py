"""The fake ``claude`` with one more step shape, for hostile tool output.

    {"tool": "Bash", "input": {...}, "output": "...", "is_error": false}

plays a tool_use and then a tool_result whose content is ``output`` (the stock fake always
answers "ran"). A scenario-level ``"result_extra": {...}`` is merged into every ``result``
message, and ``"raw_result": "..."`` replaces the result line with that text verbatim (for
numbers Python's json cannot write, such as ``1e400``). Every other step is the stock
fake's (``tests/fakes/fake_claude.py``).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from tests.fakes.fake_claude import FakeClaude  # noqa: E402


class HostileClaude(FakeClaude):
    def tool(self, step: dict[str, Any]) -> bool | None:
        if "output" not in step:
            return super().tool(step)
        tool_use_id = self.next_id("toolu")
        block = {
            "type": "tool_use",
            "id": tool_use_id,
            "name": step["tool"],
            "input": step.get("input", {}),
        }
        self.out(self.assistant(self.next_id("msg"), block))
        result = {
            "type": "tool_result",
            "tool_use_id": tool_use_id,
            "content": [{"type": "text", "text": step["output"]}],
            "is_error": bool(step.get("is_error", False)),
        }
        self.out(self.user([result]))
        return None

    def result(self, subtype: str, started: float, text: str, **fields: Any) -> None:
        raw = self.scenario.get("raw_result")
        if raw is not None:
            sys.stdout.write(raw.replace("SESSION_ID", self.session_id) + "\n")
            sys.stdout.flush()
            return
        super().result(
            subtype, started, text, **{**fields, **self.scenario.get("result_extra", {})}
        )


if __name__ == "__main__":
    HostileClaude(sys.argv[1:]).run()
