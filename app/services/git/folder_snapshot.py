"""Snapshots of folders outside git: a private git dir per session, under the data dir.

A session in a folder that is not a git repository still gets the folder's truth in its
Changes view: when it starts, the folder's files are recorded as a tree in a git dir of
its own, ``<data dir>/snapshots/<session id>.git`` (0700, files 0600), and its changes
are that tree against the folder now (``app.services.git.changes``), whoever made them.
git only ever runs there with ``GIT_DIR`` and ``GIT_WORK_TREE`` given (a
:class:`GitPlace`), through the hardened ``command`` module: nothing is written into the
folder, no ``.git`` is made there, and nothing in it (hooks, config) is read as git's.
The private git dir is made with an empty template and no hooks; its own config is the
only repository config git reads. A ``.gitignore`` in the folder still hides what it
names, as it would in a repository.

The walk that decides whether a folder can be snapshotted is bounded: it counts files
and bytes with ``lstat`` (links are counted, never followed; the data dir is skipped
where it is inside the folder, and so is every ``.git`` folder, which git never reads
as content), and stops at ``MAX_FILES`` files, ``MAX_BYTES`` bytes or ``MAX_WALK_S``
seconds, so a home folder or ``/`` does not hold up a session's start. Such a folder is
not snapshotted, and the session's Changes say so and list what its tools wrote. The
same walk runs before each read, so a folder that has grown past the limits since is
not hashed into the snapshot either.

Everything here blocks; call it from a worker thread.
"""

from __future__ import annotations

import os
import shutil
import stat
import time
from collections.abc import Collection
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from app.db.datadir import SNAPSHOTS_DIR, create_private_file, make_private_dir
from app.services.git.changes import snapshot
from app.services.git.repo import GitError, GitPlace, run

__all__ = [
    "MAX_BYTES",
    "MAX_FILES",
    "MAX_WALK_S",
    "Limits",
    "Taken",
    "Walked",
    "grown_note",
    "is_private",
    "prune",
    "remove",
    "snapshot_dir",
    "take",
    "walk",
]

# A snapshot stores a compressed copy of every file: 200 MiB is a few seconds of hashing
# at a session's start and at most that much disk per session; 20,000 files is a large
# project without its dependencies (a node_modules or a virtualenv is past it).
MAX_FILES = 20_000
MAX_BYTES = 200 * 1024 * 1024
# A slow or huge folder (a network mount, a home folder) is given up on after this.
MAX_WALK_S = 5.0
# Marks a git dir as one of these snapshots (and not a repository of the user's).
MARKER = "angelia-folder-snapshot"


@dataclass(frozen=True)
class Limits:
    files: int = MAX_FILES
    bytes: int = MAX_BYTES
    seconds: float = MAX_WALK_S


@dataclass(frozen=True)
class Walked:
    """What a bounded walk found; ``over`` says which limit stopped it (None: none did)."""

    files: int
    bytes: int
    over: Literal["files", "bytes", "time", "unreadable"] | None = None

    def too_big(self, *, grown: bool = False) -> str:
        """The plain-words reason the folder has no snapshot (or cannot be compared)."""
        if self.over == "unreadable":
            return (
                "This folder could not be read to snapshot it — only the agent's own edits "
                "are listed."
            )
        count = f"{self.files:,} file{'' if self.files == 1 else 's'}"
        if self.over == "files":
            count = f"more than {self.files - 1:,} files"
        elif self.over == "bytes":
            count += f", over {MAX_BYTES // (1024 * 1024)} MiB"
        elif self.over == "time":
            count = f"more than {self.files:,} files, still counting after {MAX_WALK_S:g} s"
        what = (
            "has grown too big to compare with its snapshot" if grown else "is too big to snapshot"
        )
        return f"This folder {what} ({count}) — only the agent's own edits are listed."


@dataclass(frozen=True)
class Taken:
    """A session's snapshot: its git dir and tree, or why there is none (``note``)."""

    git_dir: Path | None = None
    tree: str | None = None
    note: str | None = None


def snapshot_dir(data_dir: Path, session_id: str) -> Path:
    return data_dir / SNAPSHOTS_DIR / f"{session_id}.git"


def walk(folder: Path, skip: Path | None = None, limits: Limits = Limits()) -> Walked:
    """Count the files and bytes under ``folder`` (links counted, not followed; ``skip``
    and ``.git`` folders left out), stopping at the files or time limit."""
    deadline = time.monotonic() + limits.seconds
    skipped = os.path.realpath(skip) if skip is not None else None
    files = size = 0
    todo = [os.path.realpath(folder)]
    first = True
    while todo:
        here = todo.pop()
        try:
            with os.scandir(here) as entries:
                listed = list(entries)
        except OSError:
            if first:
                return Walked(0, 0, "unreadable")
            continue  # a folder git cannot read either: it skips it the same way
        first = False
        for entry in listed:
            if time.monotonic() > deadline:
                return Walked(files, size, "time")
            try:
                info = entry.stat(follow_symlinks=False)
            except OSError:
                continue
            if stat.S_ISDIR(info.st_mode):
                if entry.name != ".git" and entry.path != skipped:
                    todo.append(entry.path)
                continue
            files += 1
            if stat.S_ISREG(info.st_mode):
                size += info.st_size
            if files > limits.files:
                return Walked(files, size, "files")
    # Past the bytes limit the walk goes on (within the others), to say how many files.
    return Walked(files, size, "bytes" if size > limits.bytes else None)


def take(folder: Path, data_dir: Path, session_id: str, limits: Limits = Limits()) -> Taken:
    """Record ``folder``'s files in the session's private git dir, when the folder is
    within ``limits``; else (or when git fails) no git dir is left and ``note`` says why."""
    walked = walk(folder, data_dir, limits)
    if walked.over is not None:
        return Taken(note=walked.too_big())
    git_dir = snapshot_dir(data_dir, session_id)
    try:
        _init(git_dir, folder, data_dir)
        tree = snapshot(GitPlace(git_dir, folder))
    except (GitError, OSError) as exc:
        shutil.rmtree(git_dir, ignore_errors=True)
        why = exc.message if isinstance(exc, GitError) else str(exc)
        return Taken(
            note=f"This folder could not be snapshotted ({why}) — only the agent's own "
            "edits are listed."
        )
    return Taken(git_dir=git_dir, tree=tree)


def is_private(place: GitPlace) -> bool:
    """Whether ``place`` is one of these snapshots (not a repository of the user's)."""
    return place.git_dir.parent.name == SNAPSHOTS_DIR and (place.git_dir / MARKER).is_file()


def grown_note(place: GitPlace, limits: Limits = Limits()) -> str | None:
    """Why a snapshot's folder is not read any more (it has grown past the limits, or
    cannot be read); None when it can be compared."""
    walked = walk(place.work_tree, place.git_dir.parent.parent, limits)
    return walked.too_big(grown=True) if walked.over is not None else None


def remove(data_dir: Path, session_id: str) -> None:
    """The session's snapshot goes (nothing when it has none)."""
    shutil.rmtree(snapshot_dir(data_dir, session_id), ignore_errors=True)


def prune(data_dir: Path, sessions: Collection[str]) -> list[str]:
    """Remove the snapshots of sessions not in ``sessions`` (a delete whose removal failed,
    or the app stopped in between) and return their ids. Only folders this module made
    (marked) go; anything else under ``snapshots`` is left alone."""
    root = data_dir / SNAPSHOTS_DIR
    if not root.is_dir():
        return []
    gone = []
    for entry in sorted(root.iterdir()):
        session_id = entry.name.removesuffix(".git")
        if entry.name == session_id or session_id in sessions:
            continue
        if entry.is_symlink() or not (entry / MARKER).is_file():
            continue
        shutil.rmtree(entry, ignore_errors=True)
        gone.append(session_id)
    return gone


def _init(git_dir: Path, folder: Path, data_dir: Path) -> None:
    """A new private git dir: bare (it has no work tree of its own; each call names the
    folder), an empty template (no sample hooks), owner-only files, and the data dir left
    out where it is inside the folder."""
    make_private_dir(git_dir.parent)
    if git_dir.exists():  # left by a start that failed half-way: this session's own
        shutil.rmtree(git_dir)
    run(
        ["init", "--quiet", "--bare", "--shared=0600", "--template=", str(git_dir)],
        cwd=git_dir.parent,
        what=f"making a snapshot folder for {folder}",
    )
    git_dir.chmod(0o700)
    _write_private(git_dir / MARKER, f"{folder}\n")
    info = git_dir / "info"
    info.mkdir(mode=0o700, exist_ok=True)
    top, data = Path(os.path.realpath(folder)), Path(os.path.realpath(data_dir))
    if data.is_relative_to(top) and data != top:
        # Anchored at the top, every character literal: "/<path>/" names that folder only.
        _write_private(info / "exclude", f"/{_literal(data.relative_to(top).as_posix())}/\n")


def _write_private(path: Path, content: str) -> None:
    create_private_file(path)
    path.write_text(content)


def _literal(path: str) -> str:
    """``path`` as an ignore pattern that matches it alone (wildcards and specials escaped)."""
    return "".join(f"\\{c}" if c in "\\*?[]!# " else c for c in path)
