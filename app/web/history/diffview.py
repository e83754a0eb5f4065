"""A unified diff as rows for the Changes tab: line by line (unified) or side by side (split).

Each line of the file knows its line number on its side (``new`` for added and context
lines, ``old`` for removed ones), which the page writes on it (unified: the line; split:
each side's cell) as ``data-side`` / ``data-line`` for review comments to anchor to.
The hunk headers' counts say where a hunk ends, so git's file headers (``diff --git``,
``index``, ``---``/``+++``) are left out and a removed line that reads ``-- x`` is still
a line of the file.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass

__all__ = ["SplitRow", "UnifiedRow", "split_rows", "unified_rows"]

# "\ No newline at end of file", and the cut a permission preview marks with "…".
_NOTES = ("\\", "…")
_HUNK = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")


@dataclass(frozen=True)
class _Line:
    kind: str  # hunk, del, add, ctx or meta ("\ No newline at end of file")
    text: str  # without the +/-/space marker for file lines
    old_no: int | None = None
    new_no: int | None = None


def _lines(diff: str) -> Iterator[_Line]:
    old_no = new_no = 0
    old_left = new_left = 0  # lines of the current hunk still to come, per side
    in_hunk = False
    # Only "\n" ends a line: a form feed or a lone "\r" inside one is part of its text.
    for line in diff.removesuffix("\n").split("\n") if diff else []:
        if not in_hunk or (old_left <= 0 and new_left <= 0):
            in_hunk = False
            if m := _HUNK.match(line):
                old_no, new_no = int(m[1]), int(m[3])
                old_left = 1 if m[2] is None else int(m[2])
                new_left = 1 if m[4] is None else int(m[4])
                in_hunk = True
                yield _Line("hunk", line)
            elif line.startswith(_NOTES):
                yield _Line("meta", line)
            continue
        marker, rest = line[:1], line[1:]
        if marker == "-":
            yield _Line("del", rest, old_no=old_no)
            old_no, old_left = old_no + 1, old_left - 1
        elif marker == "+":
            yield _Line("add", rest, new_no=new_no)
            new_no, new_left = new_no + 1, new_left - 1
        elif line.startswith(_NOTES):
            yield _Line("meta", line)
        else:  # " ", or an empty line where a tool stripped the trailing space
            yield _Line("ctx", rest, old_no=old_no, new_no=new_no)
            old_no, new_no = old_no + 1, new_no + 1
            old_left, new_left = old_left - 1, new_left - 1


@dataclass(frozen=True)
class UnifiedRow:
    """One line of the unified view: ``text`` as the diff has it (marker included)."""

    kind: str
    text: str
    side: str | None = None  # "new" or "old" for a line of the file; None for the rest
    line: int | None = None


def unified_rows(diff: str) -> list[UnifiedRow]:
    rows: list[UnifiedRow] = []
    for ln in _lines(diff):
        if ln.kind == "del":
            rows.append(UnifiedRow("del", "-" + ln.text, "old", ln.old_no))
        elif ln.kind == "add":
            rows.append(UnifiedRow("add", "+" + ln.text, "new", ln.new_no))
        elif ln.kind == "ctx":
            rows.append(UnifiedRow("ctx", " " + ln.text, "new", ln.new_no))
        else:
            rows.append(UnifiedRow(ln.kind, ln.text))
    return rows


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
    removed: list[tuple[int | None, str]] = []
    added: list[tuple[int | None, str]] = []

    def pair() -> None:
        for i in range(max(len(removed), len(added))):
            o = removed[i] if i < len(removed) else (None, None)
            n = added[i] if i < len(added) else (None, None)
            rows.append(SplitRow("change", o[0], o[1], n[0], n[1]))
        removed.clear()
        added.clear()

    for ln in _lines(diff):
        if ln.kind == "hunk":
            pair()
            rows.append(SplitRow("hunk", old=ln.text))
        elif ln.kind == "del":
            removed.append((ln.old_no, ln.text))
        elif ln.kind == "add":
            added.append((ln.new_no, ln.text))
        elif ln.kind == "ctx":
            pair()
            rows.append(SplitRow("ctx", ln.old_no, ln.text, ln.new_no, ln.text))
    pair()
    return rows
