"""What a session changed: every file its tools wrote, with one diff per file.

Built from the stored tool calls that succeeded (Claude Code's Write, Edit and
MultiEdit; an ACP agent's edits under the same names), minus the ones a rewind undid.
For each file the text *after* is the file on disk and the text *before* the session's
first change is: nothing for a file a tool created; found by undoing the session's edits
on the file, newest first, when it only had edits; else the file as the git repository's
HEAD has it. Replaying the session's steps on that text must give the file as it is now:
when it does not (or the file is gone), something else touched it since, and the file is
marked ``changed_outside`` and shows the session's own edits one by one instead of a
combined diff that would mix the two. Where the earlier text cannot be known (a Write
over a file outside any repository) the edits are shown one by one too, unmarked.

Files changed by shell commands are not seen (only the tool calls are).
"""

from __future__ import annotations

import os
from dataclasses import asdict, dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any, Literal

from app.services.git.repo import GitError, GitPlace, run
from app.services.permissions.preview import MAX_FILE_BYTES, unified_diff
from app.services.store.eventlog import EventLog

__all__ = ["FileChange", "changes_of", "session_changes"]

EDIT_TOOLS = ("Write", "Edit", "MultiEdit")
GIT_TIMEOUT_S = 5.0
# A tool's result is stored just after the CLI wrote the file; more than this later is
# someone else.
CLOCK_SLACK_S = 2.0


@dataclass
class _Step:
    """One change a tool made: a whole new text (``content``) or text replacements."""

    seq: int
    tool: str
    content: str | None = None
    replacements: list[tuple[str, str, bool]] = field(default_factory=list)
    created: bool = False
    # When its result was stored (ISO time): the file cannot be newer unless something
    # else wrote it since.
    at: str = ""


@dataclass
class FileChange:
    path: str  # relative to the session's folder where it is inside it
    status: Literal["created", "edited", "deleted"]
    # The combined diff from before the session's first change to now ("" when it cannot
    # be told apart from other changes; then step_diffs has each edit).
    diff: str
    additions: int
    deletions: int
    changed_outside: bool
    steps: int
    # When changed_outside: each edit's own diff, oldest first.
    step_diffs: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _text(value: object) -> str | None:
    return value if isinstance(value, str) else None


def _step(seq: int, tool: str, data: dict[str, Any], output: str) -> tuple[str, _Step] | None:
    path = _text(data.get("file_path")) or _text(data.get("filePath")) or _text(data.get("path"))
    if not path:
        return None
    step = _Step(seq, tool)
    content = _text(data.get("content"))
    old = _text(data.get("old_string")) or _text(data.get("oldString"))
    new = _text(data.get("new_string")) or _text(data.get("newString"))
    if tool == "MultiEdit":
        for e in data.get("edits") or []:
            if isinstance(e, dict) and isinstance(e.get("old_string"), str):
                step.replacements.append(
                    (e["old_string"], str(e.get("new_string", "")), bool(e.get("replace_all")))
                )
    elif content is not None and old is None:
        step.content = content
        step.created = "created" in output.lower()
    elif old is not None and new is not None:
        step.replacements.append((old, new, bool(data.get("replace_all"))))
    else:
        return None
    return path, step


def _steps(events: list[dict[str, Any]], cwd: Path) -> dict[Path, list[_Step]]:
    """Each file's successful changes, in order, without those a rewind undid."""
    calls: dict[str, tuple[int, str, dict[str, Any]]] = {}
    done: dict[str, tuple[str, str]] = {}
    for e in events:
        kind = e["kind"]
        if kind == "tool_call" and e.get("tool") in EDIT_TOOLS:
            calls[str(e.get("tool_call_id"))] = (e["seq"], str(e["tool"]), e.get("input") or {})
        elif kind == "tool_result" and not e.get("is_error"):
            done[str(e.get("tool_call_id"))] = (str(e.get("output") or ""), str(e.get("at", "")))
        elif kind == "rewind" and not e.get("dry_run"):
            target = int(e.get("event_seq") or 0)
            calls = {k: v for k, v in calls.items() if v[0] < target}
    files: dict[Path, list[_Step]] = {}
    for call_id, (seq, tool, data) in sorted(calls.items(), key=lambda kv: kv[1][0]):
        if call_id not in done:
            continue
        output, at = done[call_id]
        found = _step(seq, tool, data, output)
        if found is not None:
            found[1].at = at
            # A tool may name the same file relative or absolute.
            path = Path(os.path.normpath(cwd / found[0]))
            files.setdefault(path, []).append(found[1])
    return files


def _undo(text: str, step: _Step) -> str | None:
    """The text before an edit given the text after it; None if it cannot be undone."""
    for old, new, every in reversed(step.replacements):
        if not new or new not in text:
            return None
        text = text.replace(new, old) if every else text.replace(new, old, 1)
    return text


def _apply(text: str, step: _Step) -> str | None:
    """The text after ``step``; None if an edit does not fit the text."""
    if step.content is not None:
        return step.content
    for old, new, every in step.replacements:
        if not old or old not in text:
            return None
        text = text.replace(old, new) if every else text.replace(old, new, 1)
    return text


def _read(path: Path) -> str | None:
    try:
        if not path.is_file() or path.stat().st_size > MAX_FILE_BYTES:
            return None
        return path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None


def _git_head(cwd: Path, path: Path, place: GitPlace | None) -> str | None:
    """The file as the repository's HEAD has it (None: no repository, or not tracked);
    read from the session's recorded git dir when it has one."""
    where: Path | GitPlace = cwd
    name = f"./{path.relative_to(cwd)}" if path.is_relative_to(cwd) else None
    if place is not None:
        where = place
        real, top = Path(os.path.realpath(path)), Path(os.path.realpath(place.work_tree))
        name = real.relative_to(top).as_posix() if real.is_relative_to(top) else None
    if name is None:
        return None
    try:
        # cat-file gives the stored bytes: no textconv, no filter.
        done = run(
            ["cat-file", "blob", f"HEAD:{name}"],
            cwd=where,
            what=f"reading {name} at HEAD",
            ok=(0, 1, 128),
            timeout=GIT_TIMEOUT_S,
        )
    except GitError:
        return None
    return done.stdout.decode("utf-8", "replace") if done.returncode == 0 else None


def _before(
    cwd: Path, path: Path, steps: list[_Step], now: str | None, place: GitPlace | None
) -> str | None:
    """The file's text before the session's first change to it, where it can be known."""
    if steps[0].created:
        return ""
    if now is not None and all(s.content is None for s in steps):
        text: str | None = now
        for step in reversed(steps):
            text = _undo(text, step) if text is not None else None
        if text is not None:
            return text
    return _git_head(cwd, path, place)


def _one_file(cwd: Path, path: Path, steps: list[_Step], place: GitPlace | None) -> FileChange:
    shown = str(path.relative_to(cwd)) if path.is_relative_to(cwd) else str(path)
    now = _read(path)
    before = _before(cwd, path, steps, now, place)
    # Replaying the session's steps on the text before must give the file as it is now;
    # otherwise something else changed it since (or it is gone).
    after: str | None = before
    for step in steps:
        after = _apply(after, step) if after is not None else None
    step_diffs = [_step_diff(s, shown) for s in steps]
    if now is not None and _written_since(path, steps[-1].at):
        after = None  # whatever replaying says, the file was written after the session
    if now is None or before is None or after != now:
        return FileChange(
            shown,
            "deleted" if now is None else "edited",
            "",
            0,
            0,
            changed_outside=now is None or (before is not None and after != now),
            steps=len(steps),
            step_diffs=step_diffs,
        )
    diff = unified_diff(before, now, shown)
    lines = diff.splitlines()
    adds = sum(1 for line in lines if line[:1] == "+" and not line.startswith("+++ "))
    dels = sum(1 for line in lines if line[:1] == "-" and not line.startswith("--- "))
    return FileChange(
        shown, "created" if steps[0].created else "edited", diff, adds, dels, False, len(steps)
    )


def _written_since(path: Path, at: str) -> bool:
    """Whether the file was written well after the session's last change to it."""
    try:
        last = datetime.fromisoformat(at.replace("Z", "+00:00")).timestamp()
        return path.stat().st_mtime > last + CLOCK_SLACK_S
    except (OSError, ValueError):
        return False


def _step_diff(step: _Step, shown: str) -> str:
    if step.content is not None:
        return unified_diff("", step.content, shown)
    return "".join(unified_diff(old, new, shown) for old, new, _ in step.replacements)


def session_changes(
    events: list[dict[str, Any]], cwd: str, place: GitPlace | None = None
) -> list[FileChange]:
    """Every file the session's tools changed, in the order they were first changed;
    ``place`` is the session's recorded git dir, where HEAD's text is read from."""
    root = Path(cwd)
    return [_one_file(root, path, steps, place) for path, steps in _steps(events, root).items()]


def changes_of(
    events: EventLog, session_id: str, cwd: str, place: GitPlace | None = None
) -> list[FileChange]:
    """``session_changes`` over the stored calls, results and rewinds of one session."""
    found = [
        e
        for kind in ("tool_call", "tool_result", "rewind")
        for e in events.list(session_id, kind=kind)
    ]
    return session_changes(sorted(found, key=lambda e: int(e["seq"])), cwd, place)
