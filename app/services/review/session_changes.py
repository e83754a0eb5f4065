"""What a session changed, from the best source its folder allows: git, a snapshot, or its tools.

- **git**: a session in a worktree of its own. Everything between the commit the worktree
  left its base at and the worktree now: commits, uncommitted edits and new (not ignored)
  files, whoever made them (an edit tool, ``sed -i``, ``rm``, ``mv``, ``git commit``).
  The worktree is the session's alone, so nothing in it is marked as changed outside.
- **snapshot**: a session without a worktree in a git folder. The folder's tree was
  recorded when the session started; its changes are everything that differs from that
  tree now, so what was there before the session is never counted. Others may work in the
  same folder, so a file is the session's own only where its tools wrote it and the file
  is what they left (the tools' replay, see ``app.services.review.changes``). Every other
  changed file is still shown, with ``changed_outside`` set: a shell command of the
  session may have changed it, or something else did; which of the two cannot be told.
- **tools**: outside git (or when git cannot read the folder or the base any more, and
  then ``note`` says why): the files the session's tools wrote, as the tools view has
  always shown them. Shell commands' changes are not seen.

In the git and snapshot views a file a tool of the session wrote that git does not list
because it is ignored or outside the repository is added from the tools view, so the
session's own writes are never hidden. Paths are relative to the repository's top there,
to the session's folder in the tools view (absolute where outside it).
"""

from __future__ import annotations

import os
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any, Literal

from app.db.models import ChatSession
from app.services.git import changes as git_changes
from app.services.git.repo import GitError, repo_root, run, text
from app.services.review import changes as tool_changes
from app.services.store.eventlog import EventLog

__all__ = ["ChangedFile", "SessionChanges", "Source", "session_changes"]

Source = Literal["git", "snapshot", "tools"]
Status = Literal["created", "edited", "deleted", "renamed"]


@dataclass
class ChangedFile:
    """One file in the response; the same shape for the three sources."""

    path: str
    status: Status
    diff: str  # a unified diff; "" when step_diffs has the session's edits one by one
    additions: int
    deletions: int
    # Not known to be the session's own: written since by something else, or (snapshot)
    # changed without any of the session's tools writing it.
    changed_outside: bool
    steps: int  # how many tool calls of the session wrote it (0: none did)
    step_diffs: list[str] = field(default_factory=list)
    old_path: str | None = None  # the name before, for a rename
    binary: bool = False  # no line diff (binary content, or too large to diff)
    truncated: bool = False  # ``diff`` was cut short to stay within the size caps
    too_big: int | None = None  # its size, when too big to read or diff at all

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class SessionChanges:
    source: Source
    # The commit (git) or tree (snapshot) the folder is compared with; None for tools.
    base: str | None
    # Where paths are relative to: the repository's top, or the session's folder.
    root: str
    files: list[ChangedFile]
    note: str | None = None  # why git could not be used, when it fell back to the tools


def session_changes(events: EventLog, chat: ChatSession, cwd: str) -> SessionChanges:
    """The session's changes; ``cwd`` is where it works (its worktree, if it has one).

    Blocking (git and file reads): call it from a worker thread."""
    tools = tool_changes.changes_of(events, chat.id, cwd)
    base = chat.worktree_base_commit if chat.worktree_path else chat.snapshot_tree
    if not base:
        return _from_tools(tools, cwd, note=_no_base(cwd))
    source: Source = "git" if chat.worktree_path else "snapshot"
    # Resolved both: git names the top with symlinks resolved, the profile may not.
    here = Path(cwd).resolve()
    try:
        top = repo_root(cwd).resolve()
        found = git_changes.diff(top, base)
        unlisted = _unlisted(top, here, tools, {f.path for f in found})
    except GitError as exc:
        return _from_tools(tools, cwd, note=_why_not(source, exc))
    own = {_absolute(here, f.path): f for f in tools}
    files = [_from_git(f, own.get(top / f.path), own_folder=source == "git") for f in found]
    return SessionChanges(source, base, str(top), files + unlisted)


def _from_tools(
    tools: list[tool_changes.FileChange], cwd: str, note: str | None = None
) -> SessionChanges:
    return SessionChanges("tools", None, cwd, [_from_tool(f) for f in tools], note)


def _no_base(cwd: str) -> str | None:
    """Why a session in a git folder has nothing to compare with (None outside git)."""
    try:
        repo_root(cwd)
    except GitError:
        return None
    return (
        "The folder is in a git repository, but no record of it was taken when this "
        "session started, so this shows only what its tools wrote; shell commands' "
        "changes are not seen."
    )


def _why_not(source: Source, exc: GitError) -> str:
    where = "worktree" if source == "git" else "folder's snapshot"
    return (
        f"The session's {where} could not be read with git ({exc.message}), so this shows "
        "only what its tools wrote; shell commands' changes are not seen."
    )


def _from_git(
    f: git_changes.FileChange, tool: tool_changes.FileChange | None, *, own_folder: bool
) -> ChangedFile:
    # In a shared folder, a file none of the session's tools wrote was changed by one of
    # its shell commands or by something else; its own worktree has only the session.
    outside = not own_folder and (tool is None or tool.changed_outside)
    return ChangedFile(
        path=f.path,
        status=f.status,
        diff=f.diff,
        additions=f.additions,
        deletions=f.deletions,
        changed_outside=outside,
        steps=tool.steps if tool is not None else 0,
        old_path=f.old_path,
        binary=f.binary,
        truncated=f.truncated,
        too_big=f.too_big,
    )


def _from_tool(f: tool_changes.FileChange) -> ChangedFile:
    # The tools view's fields are a subset of ChangedFile's, with the same meaning.
    return ChangedFile(**f.to_dict())


def _absolute(cwd: Path, path: str) -> Path:
    return Path(os.path.normpath(cwd / path))


def _unlisted(
    top: Path, cwd: Path, tools: list[tool_changes.FileChange], listed: set[str]
) -> list[ChangedFile]:
    """Files the tools wrote that git's diff cannot show: ignored ones, and ones outside
    the repository (an agent in a worktree writing into the user's checkout, say); named
    like git's files, relative to the top (absolute outside it)."""
    inside: dict[str, tool_changes.FileChange] = {}
    found: list[ChangedFile] = []
    for f in tools:
        where = _absolute(cwd, f.path)
        if not where.is_relative_to(top):
            found.append(replace(_from_tool(f), path=str(where)))
        elif (relative := where.relative_to(top).as_posix()) not in listed:
            inside[relative] = f
    if inside:
        ignored = run(
            ["check-ignore", "--no-index", "-z", "--stdin"],
            cwd=top,
            what="finding the ignored files the session wrote",
            input="".join(f"{p}\0" for p in inside).encode(),
            ok=(0, 1),
        )
        for path in text(ignored.stdout).split("\0"):
            if path in inside:
                found.append(replace(_from_tool(inside[path]), path=path))
    return found
