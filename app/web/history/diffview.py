"""A unified diff laid out side by side (old left, new right) for the split view."""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = ["SplitRow", "split_rows"]

_HUNK = re.compile(r"^@@ -(\d+)(?:,\d+)? \+(\d+)(?:,\d+)? @@")


@dataclass(frozen=True)
class SplitRow:
    """One row: ``kind`` is hunk, ctx or change; a side is empty where it has no line."""

    kind: str
    old_no: int | None = None
    old: str | None = None
    new_no: int | None = None
    new: str | None = None


def split_rows(diff: str) -> list[SplitRow]:
    """Rows for a table: removed lines beside the lines added in their place."""
    rows: list[SplitRow] = []
    old_no = new_no = 0
    removed: list[tuple[int, str]] = []
    added: list[tuple[int, str]] = []

    def pair() -> None:
        for i in range(max(len(removed), len(added))):
            o = removed[i] if i < len(removed) else (None, None)
            n = added[i] if i < len(added) else (None, None)
            rows.append(SplitRow("change", o[0], o[1], n[0], n[1]))
        removed.clear()
        added.clear()

    for line in diff.splitlines():
        if line.startswith(("--- ", "+++ ")):
            continue
        if m := _HUNK.match(line):
            pair()
            old_no, new_no = int(m[1]), int(m[2])
            rows.append(SplitRow("hunk", old=line))
        elif line.startswith("-"):
            removed.append((old_no, line[1:]))
            old_no += 1
        elif line.startswith("+"):
            added.append((new_no, line[1:]))
            new_no += 1
        elif line.startswith(" "):
            pair()
            rows.append(SplitRow("ctx", old_no, line[1:], new_no, line[1:]))
            old_no += 1
            new_no += 1
    pair()
    return rows
