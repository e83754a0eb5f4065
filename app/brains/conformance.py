"""What each backend was shown to do against its real CLI: the conformance table.

``conformance.json`` beside this module is written by ``scripts/conformance.py`` from the
test suite (every cell names the tests behind it) and read here for ``angelia doctor``,
the welcome page and the backends page, so what the app claims is what a test proved.
A backend with no row was never run in the suite: its features are unknown, not absent.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import Any

__all__ = [
    "FEATURES",
    "RESULTS",
    "Cell",
    "Row",
    "cells_from_json",
    "summary",
    "table",
]

# The table's columns, in order: key → what a user reads.
FEATURES: dict[str, str] = {
    "stream": "streamed answer",
    "tool_prompt": "asks before a tool",
    "allow_always": "allow always",
    "deny_rule": "deny rule enforced",
    "interrupt": "interrupt",
    "resume": "resume after a restart",
    "mcp": "per-session MCP",
    "model_switch": "model switch",
    "images": "images",
    "plan_mode": "plan mode",
}

# How a test can end a cell: the feature works, the CLI lacks it (and the app offers
# nothing in its place), or the app refuses it with the reason because the CLI would
# not honour it.
RESULTS: dict[str, str] = {"yes": "✓", "no": "✗", "refused": "refused by the app"}


@dataclass(frozen=True)
class Cell:
    feature: str
    result: str
    tests: tuple[str, ...]

    @property
    def label(self) -> str:
        return FEATURES[self.feature]

    @property
    def has(self) -> bool:
        return self.result == "yes"

    @property
    def mark(self) -> str:
        return RESULTS[self.result]


@dataclass(frozen=True)
class Row:
    """One backend's cells in ``FEATURES`` order; ``version`` is the CLI version tested."""

    backend: str
    version: str
    cells: tuple[Cell, ...]


def cells_from_json(data: dict[str, Any]) -> dict[str, Row]:
    """Rows from the JSON ``scripts/conformance.py`` writes; malformed data raises."""
    rows: dict[str, Row] = {}
    for backend, entry in data["backends"].items():
        cells = []
        for feature in FEATURES:
            cell = entry["features"].get(feature)
            if cell is None:
                continue
            if cell["result"] not in RESULTS:
                raise ValueError(f"{backend}.{feature}: unknown result {cell['result']!r}")
            cells.append(Cell(feature, cell["result"], tuple(cell["tests"])))
        rows[backend] = Row(backend, str(entry.get("version", "")), tuple(cells))
    return rows


@cache
def table() -> dict[str, Row]:
    """The table shipped with the app (read once)."""
    text = resources.files("app.brains").joinpath("conformance.json").read_text("utf-8")
    return cells_from_json(json.loads(text))


def summary(backend: str) -> str:
    """One line for a terminal or a page: what the table says of ``backend``."""
    row = table().get(backend)
    if row is None:
        return "not run in Angelia's test suite: which features work is unknown"
    by_result: dict[str, list[str]] = {r: [] for r in RESULTS}
    for cell in row.cells:
        by_result[cell.result].append(cell.label)
    tested = {cell.feature for cell in row.cells}
    parts = [f"{len(by_result['yes'])} of {len(FEATURES)} features shown to work"]
    if by_result["no"]:
        parts.append("lacks " + ", ".join(by_result["no"]))
    if by_result["refused"]:
        parts.append("refused by the app: " + ", ".join(by_result["refused"]))
    untested = [label for key, label in FEATURES.items() if key not in tested]
    if untested:
        parts.append("untested: " + ", ".join(untested))
    return f"tested with {row.version}: " + "; ".join(parts)
