"""The files of a session's folder, for ``@`` mentions in the composer.

The list is git's view where the folder is in a repository (tracked files plus untracked
ones that are not ignored), else a bounded walk that skips the usual heavy folders. Listing
a large repository takes far longer than a keystroke may, so each folder's list is kept
and refreshed in the background once it is a few seconds old; a query only filters the
kept list.

Filtering is a subsequence match ("srvfl" finds ``app/services/files.py``) done by one
regular expression over all paths joined into one string, so the scan runs in C rather
than a Python loop per path; only the matches are scored.
"""

from __future__ import annotations

import asyncio
import bisect
import logging
import os
import re
import subprocess
import threading
import time
from collections import OrderedDict
from dataclasses import dataclass
from pathlib import Path

log = logging.getLogger(__name__)

# A folder's list is refreshed when a query finds it older than this.
REFRESH_AFTER_S = 5.0
# Beyond this many files the rest are left out (the list says it is cut).
MAX_FILES = 200_000
# Results of one query; a menu shows a handful, the rest is filtering further.
MAX_RESULTS = 50
# Matches scored per query; the list is in shallow-first order, so these are the likeliest.
MAX_SCORED = 5_000
# Folders whose lists are kept at once (the least recently asked is dropped).
MAX_FOLDERS = 8
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


@dataclass(frozen=True)
class FileList:
    """One folder's files (relative, ``/``-separated) with what fast filtering needs."""

    paths: tuple[str, ...]
    source: str  # "git" or "walk"
    truncated: bool
    built_at: float
    # Every lowercased path followed by a newline, and where each one starts in it.
    _joined: str
    _starts: tuple[int, ...]

    @classmethod
    def build(cls, paths: list[str], source: str, truncated: bool) -> FileList:
        # Shallow paths first, so an empty or short query shows the top of the tree.
        ordered = tuple(sorted(set(paths), key=lambda p: (p.count("/"), p)))
        starts = []
        at = 0
        for path in ordered:
            starts.append(at)
            at += len(path.lower()) + 1
        joined = "".join(p.lower() + "\n" for p in ordered)
        return cls(ordered, source, truncated, time.monotonic(), joined, tuple(starts))

    def search(self, query: str, limit: int = MAX_RESULTS) -> list[str]:
        """Up to ``limit`` paths holding ``query``'s characters in order, best first."""
        q = "".join(query.lower().split())
        if not q:
            return list(self.paths[:limit])
        # [^\nc]*c takes the first c each time: a subsequence match without backtracking.
        body = "".join(f"[^\\n{re.escape(c)}]*{re.escape(c)}" for c in q)
        pattern = re.compile(f"^{body}", re.MULTILINE)
        found: list[int] = []
        for match in pattern.finditer(self._joined):
            found.append(bisect.bisect_right(self._starts, match.start()) - 1)
            if len(found) >= MAX_SCORED:
                break
        ranked = sorted(found, key=lambda i: _rank(self.paths[i], q))
        return [self.paths[i] for i in ranked[:limit]]


def _rank(path: str, q: str) -> tuple[int, int, int]:
    """Lower is better: the query in the file name, then anywhere, then a short path."""
    low = path.lower()
    name = low.rsplit("/", 1)[-1]
    if name.startswith(q):
        tier = 0
    elif q in name:
        tier = 1
    elif q in low:
        tier = 2
    else:
        tier = 3
    return (tier, low.count("/"), len(low))


def list_folder(root: Path) -> FileList:
    """The folder's files as git sees them, or by a bounded walk outside git."""
    paths = _git_files(root)
    if paths is not None:
        return FileList.build(paths[:MAX_FILES], "git", len(paths) > MAX_FILES)
    walked, truncated = _walk(root)
    return FileList.build(walked, "walk", truncated)


def _git_files(root: Path) -> list[str] | None:
    """Tracked plus untracked-not-ignored files under ``root``; None outside a repository."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    try:
        done = subprocess.run(
            ["git", "-c", "core.quotepath=off", "ls-files", "-z", "--cached", "--others"]
            + ["--exclude-standard", "--deduplicate"],
            cwd=root,
            env=env,
            capture_output=True,
            timeout=GIT_TIMEOUT_S,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    if done.returncode != 0:
        return None
    text = done.stdout.decode("utf-8", errors="surrogateescape")
    # Paths git cannot give as text (invalid UTF-8) could not be typed or sent anyway.
    return [p for p in text.split("\0") if p and _printable(p)]


def _walk(root: Path) -> tuple[list[str], bool]:
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
    return out, False


def _printable(path: str) -> bool:
    # Lone surrogates (bytes that were not UTF-8) and control characters are not
    # printable, and a path holding them could not be typed into a message either.
    return path.isprintable()


class FolderFiles:
    """Each folder's kept list; safe to share between requests and event loops."""

    def __init__(self, refresh_after: float = REFRESH_AFTER_S) -> None:
        self.refresh_after = refresh_after
        self._lists: OrderedDict[Path, FileList] = OrderedDict()
        self._refreshing: set[Path] = set()
        self._lock = threading.Lock()
        self._build_locks: dict[Path, threading.Lock] = {}

    def cached(self, root: Path) -> FileList | None:
        """The kept list, starting a background refresh when it is old."""
        with self._lock:
            found = self._lists.get(root)
            if found is None:
                return None
            self._lists.move_to_end(root)
            stale = time.monotonic() - found.built_at > self.refresh_after
            if stale and root not in self._refreshing:
                self._refreshing.add(root)
                threading.Thread(target=self._refresh, args=(root,), daemon=True).start()
        return found

    def build(self, root: Path) -> FileList:
        """List ``root`` now (blocking: call it off the event loop); one build per folder."""
        with self._lock:
            build_lock = self._build_locks.setdefault(root, threading.Lock())
        with build_lock:
            with self._lock:
                found = self._lists.get(root)
            if found is not None:
                return found
            return self._store(root, list_folder(root))

    def _refresh(self, root: Path) -> None:
        try:
            self._store(root, list_folder(root))
        except OSError:
            log.warning("could not list %s again", root, exc_info=True)
        finally:
            with self._lock:
                self._refreshing.discard(root)

    def _store(self, root: Path, files: FileList) -> FileList:
        with self._lock:
            self._lists[root] = files
            self._lists.move_to_end(root)
            while len(self._lists) > MAX_FOLDERS:
                dropped, _ = self._lists.popitem(last=False)
                self._build_locks.pop(dropped, None)
        return files


# One per process: lists depend only on the folder, whoever asks.
FOLDER_FILES = FolderFiles()


async def find(root: Path, query: str, limit: int = MAX_RESULTS) -> tuple[list[str], FileList]:
    """The paths under ``root`` that match ``query``, and the list they came from."""
    files = FOLDER_FILES.cached(root)
    if files is None:
        files = await asyncio.to_thread(FOLDER_FILES.build, root)
    # Off the loop: between matches the thread lets the other sessions' streams run.
    found = await asyncio.to_thread(files.search, query, limit)
    return found, files


def warm(root: Path) -> None:
    """Start listing ``root`` in the background, so the first ``@`` finds it ready."""
    if FOLDER_FILES.cached(root) is None:
        threading.Thread(target=_build_quietly, args=(root,), daemon=True).start()


def _build_quietly(root: Path) -> None:
    try:
        FOLDER_FILES.build(root)
    except OSError:
        log.warning("could not list %s", root, exc_info=True)
