"""What a session changed, from the best source its folder allows: git, a snapshot, or its tools.

- **git**: a session in a worktree of its own. What merging its branch would bring into
  the branch it merges into, and what it has not committed yet: everything between the
  merge base of the two branches (``git merge-base``) and the worktree now — commits,
  uncommitted edits and new (not ignored) files, whoever made them (an edit tool, ``sed
  -i``, ``rm``, ``mv``, ``git commit``). The merge base, not the commit the worktree
  started from: once the session's branch has merged its target in (to resolve a
  conflict), the target's newer changes are not the session's. Where the target branch
  is gone (or shares no history), the start commit is used, and ``note`` says so. The
  worktree is the session's alone, so nothing in it is marked as changed outside.
- **snapshot**: a session without a worktree. The folder's tree was recorded when the
  session started (in its repository, or outside git in a private git dir of the
  session's, see ``app.services.git.folder_snapshot``); its changes are everything that
  differs from that tree now, so what was there before the session is never counted.
  Others may work in the same folder, so a file is the session's own only where its
  tools wrote it and the file is what they left (the tools' replay, see
  ``app.services.review.changes``). Every other changed file is still shown, with
  ``changed_outside`` set: a shell command of the session may have changed it, or
  something else did; which of the two cannot be told.
- **tools**: when there is no snapshot (a folder outside git too big to record, and
  ``note`` says so), or git cannot read the folder or the base any more (``note`` says
  why): the files the session's tools wrote, as the tools view has always shown them.
  Shell commands' changes are not seen.

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
from app.services.git import folder_snapshot
from app.services.git.merge import merge_base
from app.services.git.repo import GitError, GitPlace, NotARepository, run, text
from app.services.review import changes as tool_changes
from app.services.sessions.closed import CLOSED_KIND, closed_of
from app.services.store.eventlog import EventLog

__all__ = ["ChangedFile", "SessionChanges", "Source", "recorded_changes", "session_changes"]

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
    # Why git could not be used (it fell back to the tools), or (git) why ``base`` is the
    # commit the worktree started from rather than the merge base.
    note: str | None = None
    # git: the branch the session's branch merges into, and whether ``base`` is where the
    # two meet (their merge base) rather than the commit the worktree started from.
    target: str | None = None
    merge_base: bool = False


def session_changes(
    events: EventLog, chat: ChatSession, cwd: str, place: GitPlace | None
) -> SessionChanges:
    """The session's changes; ``cwd`` is where it works (its worktree, if it has one),
    ``place`` the git dir and work tree recorded for it (None outside git).

    Blocking (git and file reads): call it from a worker thread."""
    tools = tool_changes.changes_of(events, chat.id, cwd, place)
    base = chat.worktree_base_commit if chat.worktree_path else chat.snapshot_tree
    if not base:
        return _from_tools(tools, cwd, note=chat.snapshot_note or _no_base(place))
    source: Source = "git" if chat.worktree_path else "snapshot"
    # Resolved both: git names the top with symlinks resolved, the profile may not.
    here = Path(cwd).resolve()
    met: str | None = None
    try:
        if place is None:
            raise NotARepository(f"{cwd} is not in a git repository", reason="not_a_repository")
        top = place.work_tree.resolve()
        if folder_snapshot.is_private(place) and (grown := folder_snapshot.grown_note(place)):
            return _from_tools(tools, cwd, note=grown)
        if source == "git":
            met = _merge_base(place, chat)
        found = git_changes.diff(place, met or base)
        unlisted = _unlisted(place, top, here, tools, {f.path for f in found})
    except GitError as exc:
        return _from_tools(tools, cwd, note=_why_not(source, exc))
    own = {_absolute(here, f.path): f for f in tools}
    files = [_from_git(f, own.get(top / f.path), own_folder=source == "git") for f in found]
    if source == "snapshot":
        return SessionChanges(source, base, str(top), files + unlisted)
    target = chat.worktree_base
    return SessionChanges(
        source,
        met or base,
        str(top),
        files + unlisted,
        note=None if met else _no_merge_base(target),
        target=target,
        merge_base=met is not None,
    )


def _merge_base(place: GitPlace, chat: ChatSession) -> str | None:
    if not (chat.worktree_branch and chat.worktree_base):
        return None
    return merge_base(place, chat.worktree_branch, chat.worktree_base)


def _no_merge_base(target: str | None) -> str:
    return (
        f"The branch {target} it would merge into cannot be compared with (it no longer "
        "exists, or shares no history with this one), so this is everything since the "
        "worktree started."
    )


def recorded_changes(events: EventLog, chat: ChatSession) -> SessionChanges:
    """A session whose worktree is gone: the changes kept as it went (never the user's
    checkout, which its profile's folder now is); ``note`` says what happened, or that
    nothing was kept (a worktree removed before the app recorded changes)."""
    closed = closed_of(chat)
    summary = closed.summary if closed else ""
    kept = events.list(chat.id, kind=CLOSED_KIND, limit=1, newest=True)
    if not kept:
        return SessionChanges(
            "git",
            chat.worktree_base_commit,
            "",
            [],
            note=f"{summary} Its changes were not recorded as it went, and its branch is "
            "gone, so they cannot be shown any more.",
        )
    record = kept[0]
    files = []
    for f in record.get("files") or []:
        try:
            files.append(ChangedFile(**f))
        except TypeError:  # not a file entry this version knows
            continue
    note = f"{summary} These are its changes as they were recorded then."
    if record.get("note"):
        note += f" {record['note']}"
    base = record.get("base") or chat.worktree_base_commit
    return SessionChanges("git", base, str(record.get("root") or ""), files, note=note)


def _from_tools(
    tools: list[tool_changes.FileChange], cwd: str, note: str | None = None
) -> SessionChanges:
    return SessionChanges("tools", None, cwd, [_from_tool(f) for f in tools], note)


def _no_base(place: GitPlace | None) -> str | None:
    """Why a session in a git folder has nothing to compare with."""
    if place is None:
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
    place: GitPlace,
    top: Path,
    cwd: Path,
    tools: list[tool_changes.FileChange],
    listed: set[str],
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
            cwd=place,
            what="finding the ignored files the session wrote",
            input="".join(f"{p}\0" for p in inside).encode(),
            ok=(0, 1),
        )
        for path in text(ignored.stdout).split("\0"):
            if path in inside:
                found.append(replace(_from_tool(inside[path]), path=path))
    return found
