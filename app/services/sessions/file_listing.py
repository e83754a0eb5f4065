"""Listing a session's folder for ``@`` mentions, in parts a query can use before the end.

The list is git's view where the folder is in a repository (tracked files plus untracked
ones that are not ignored), else a bounded walk that skips the usual heavy folders. In a
repository the tracked files come first, from the index alone (a fraction of a second
even for 100,000 files); the untracked ones need a walk of the whole tree, which is most
of the time. What is found so far is made searchable as it comes (a :class:`Gathering`),
so a query that arrives meanwhile answers from it, marked as partial.
"""

from __future__ import annotations

import hashlib
import os
import threading
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

from app.services.git import folder_snapshot
from app.services.git.repo import GitError, GitPlace, run
from app.services.sessions.files import FileList

# Beyond this many files the rest are left out (the list says it is cut).
MAX_FILES = 200_000
GIT_TIMEOUT_S = 30.0

# Heavy or generated folders a walk outside git skips (git's ignore rules do it there).
SKIPPED_DIRS = frozenset(
    {
        ".git",
        ".hg",
        ".svn",
        "node_modules",
        ".venv",
        "venv",
        "__pycache__",
        ".mypy_cache",
        ".pytest_cache",
        ".ruff_cache",
        ".tox",
        ".nox",
        ".cache",
        ".next",
        ".nuxt",
        "dist",
        "build",
        "target",
        ".gradle",
        ".idea",
        ".terraform",
    }
)


class ListingStopped(Exception):
    """The listing was stopped before its end: nobody needs it any more."""


class Gathering:
    """What a listing has found so far, as a searchable partial list (``latest``).

    A partial list is rebuilt each time the paths found at least double, so all the
    rebuilding costs at most about as much as building the whole list once more; each
    rebuild puts the already-ordered paths first, which the sort merges rather than
    sorting them again. Setting ``stop`` ends the listing at its next step.
    """

    def __init__(
        self, *, keep_parts: bool = True, on_part: Callable[[], None] | None = None
    ) -> None:
        self.keep_parts = keep_parts
        # Called each time ``latest`` is replaced.
        self.on_part = on_part
        self.stop = threading.Event()
        # Read by queries on other threads; replaced whole, never changed in place.
        self.latest: FileList | None = None
        # How many of the listing's paths ``latest`` was built from.
        self._taken = 0

    def found(self, paths: list[str], source: str) -> None:
        """Everything found so far (in the order found); raises once stopped."""
        if self.stop.is_set():
            raise ListingStopped
        if self.keep_parts and len(paths) >= max(1, 2 * self._taken):
            self.latest = FileList.build(self.ordered(paths), source, False, partial=True)
            if self.on_part is not None:
                self.on_part()

    def ordered(self, paths: list[str]) -> list[str]:
        """``paths`` (which start with the ones ``latest`` holds) to build a list from:
        the ones ``latest`` already put in order first."""
        head = list(self.latest.paths) if self.latest is not None else []
        more = paths[self._taken :]
        self._taken = len(paths)
        return head + more


def list_folder(
    root: Path,
    previous: FileList | None = None,
    place: GitPlace | None = None,
    gathering: Gathering | None = None,
    *,
    nice: bool = False,
) -> FileList:
    """The folder's files as git sees them (through ``place``, the session's recorded git
    dir), or by a bounded walk outside git; ``previous`` is kept (as new) when nothing
    changed, which saves sorting and joining it again. ``gathering`` gets the paths as
    they are found; ``nice`` runs git at a lower priority (work done beside the user's).

    Raises:
        ListingStopped: ``gathering.stop`` was set before the end.
    """
    gathering = gathering if gathering is not None else Gathering(keep_parts=False)
    started = time.monotonic()
    paths = None
    if place is not None and folder_snapshot.is_private(place):
        # A folder outside git, snapshotted for its Changes: listed as outside git, by
        # the walk that skips the heavy folders nobody mentions.
        place = None
    if place is not None:
        paths = _git_files(root, place, gathering, nice=nice)
    source = "git" if paths is not None else "walk"
    truncated = False
    if paths is None:
        paths, truncated = _walk(root, gathering)
    elif len(paths) > MAX_FILES:
        paths, truncated = paths[:MAX_FILES], True
    digest = hashlib.blake2b("\0".join(paths).encode(errors="surrogateescape")).digest()
    took = time.monotonic() - started
    if previous is not None and (previous.fingerprint, previous.source) == (digest, source):
        return replace(previous, built_at=time.monotonic(), took=took)
    return FileList.build(gathering.ordered(paths), source, truncated, digest, took)


def _git_files(
    root: Path, place: GitPlace, gathering: Gathering, *, nice: bool = False
) -> list[str] | None:
    """Tracked plus untracked-not-ignored files under ``root`` (relative to it), from the
    recorded git dir, the tracked ones handed to ``gathering`` first; None when git
    cannot list them."""
    top = Path(os.path.realpath(place.work_tree))
    here = Path(os.path.realpath(root))
    if not here.is_relative_to(top):
        return None
    prefix = "" if here == top else here.relative_to(top).as_posix() + "/"
    paths: list[str] = []
    # Tracked files from the index, then the walk for untracked ones: two runs of git
    # rather than one, so the first part is there for a query long before the second.
    for which in (["--cached", "--deduplicate"], ["--others", "--exclude-standard"]):
        try:
            done = run(
                ["ls-files", "-z", *which],
                cwd=place,
                what=f"listing the files of {root}",
                timeout=GIT_TIMEOUT_S,
                nice=nice,
                stop=gathering.stop,
            )
        except GitError:
            if gathering.stop.is_set():
                raise ListingStopped from None
            return None
        text = done.stdout.decode("utf-8", errors="surrogateescape")
        # Paths git cannot give as text (invalid UTF-8) could not be typed or sent anyway.
        paths += [
            p.removeprefix(prefix)
            for p in text.split("\0")
            if p and p.startswith(prefix) and _printable(p)
        ]
        gathering.found(paths[:MAX_FILES], "git")
    return paths


def _walk(root: Path, gathering: Gathering) -> tuple[list[str], bool]:
    """Files under ``root``, links not followed, heavy folders skipped, ``MAX_FILES`` at most."""
    out: list[str] = []
    for folder, dirs, files in os.walk(root, followlinks=False):
        dirs[:] = sorted(d for d in dirs if d not in SKIPPED_DIRS)
        rel = os.path.relpath(folder, root)
        prefix = "" if rel == "." else rel.replace(os.sep, "/") + "/"
        for name in sorted(files):
            path = prefix + name
            if _printable(path):
                out.append(path)
            if len(out) >= MAX_FILES:
                return out, True
        gathering.found(out, "walk")
    return out, False


def _printable(path: str) -> bool:
    # Lone surrogates (bytes that were not UTF-8) and control characters are not
    # printable, and a path holding them could not be typed into a message either.
    return path.isprintable()
