"""The files of a session's folder, for ``@`` mentions in the composer.

The list is git's view where the folder is in a repository (tracked files plus untracked
ones that are not ignored), else a bounded walk that skips the usual heavy folders. Listing
a large repository takes far longer than a keystroke may, so each folder's list is kept
and refreshed in the background once it is a few seconds old; a query only filters the
kept list.

Filtering is a subsequence match ("srvfl" finds ``app/services/files.py``) done by one
regular expression over all paths joined into one string, so the scan runs in C rather
than a Python loop per path; only the matches are scored. Two shortcuts keep typing
fast: text found as typed in enough file names needs no scan of whole paths, and each
query's matches are kept so the next keystroke tests only those (a path that holds
"srvf" in order holds "srv" too) and scans on from where the earlier scan stopped.
"""

from __future__ import annotations

import asyncio
import bisect
import hashlib
import logging
import os
import re
import threading
import time
from collections import OrderedDict
from dataclasses import dataclass, field, replace
from pathlib import Path

from app.services.git import folder_snapshot
from app.services.git.repo import GitError, GitPlace, run

log = logging.getLogger(__name__)

# A folder's list is refreshed when a query finds it older than this.
REFRESH_AFTER_S = 5.0
# Beyond this many files the rest are left out (the list says it is cut).
MAX_FILES = 200_000
# Results of one query; a menu shows a handful, the rest is filtering further.
MAX_RESULTS = 50
# Matches scored per query; the list is in shallow-first order, so these are the likeliest.
MAX_SCORED = 5_000
# Recent queries whose matches are kept, per list.
MAX_KEPT_QUERIES = 64
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
    # Seconds the listing took.
    took: float
    # Tells an unchanged listing from a changed one, so a refresh can keep this list.
    fingerprint: bytes
    # A newline, then every lowercased path followed by one; and where each path starts.
    _joined: str
    _starts: tuple[int, ...]
    # The same for the file names alone: most queries are part of a name.
    _names: str
    _name_starts: tuple[int, ...]
    # How often a character occurs in all paths, counted when a query first needs it.
    _counts: dict[str, int] = field(default_factory=dict)
    # Recent queries' matches and how far into the joined paths their scan went.
    _scanned: dict[str, tuple[tuple[int, ...], int]] = field(default_factory=dict)
    _kept: threading.Lock = field(default_factory=threading.Lock)

    @classmethod
    def build(
        cls,
        paths: list[str],
        source: str,
        truncated: bool,
        fingerprint: bytes = b"",
        took: float = 0.0,
    ) -> FileList:
        # Shallow paths first, so an empty or short query shows the top of the tree.
        ordered = tuple(sorted(set(paths), key=lambda p: (p.count("/"), p)))
        lowered = [p.lower() for p in ordered]
        joined, starts = _joined(lowered)
        names, name_starts = _joined([low.rsplit("/", 1)[-1] for low in lowered])
        now = time.monotonic()
        return cls(
            ordered, source, truncated, now, took, fingerprint, joined, starts, names, name_starts
        )

    def search(self, query: str, limit: int = MAX_RESULTS) -> list[str]:
        """Up to ``limit`` paths holding ``query``'s characters in order, best first."""
        q = "".join(query.lower().split())
        if not q:
            return list(self.paths[:limit])
        in_names = self._in_names(q)
        if len(in_names) >= limit:
            # Enough file names hold the query as it is: no path that holds it only in its
            # folders, or only spread out, could rank above them.
            ranked = sorted(in_names, key=lambda i: _rank(self.paths[i], q))
            return [self.paths[i] for i in ranked[:limit]]
        found, scanned = self._narrowed(q)
        found, scanned = self._scan(q, found, scanned)
        with self._kept:
            # A longer query (the next keystroke) only needs to test these paths, and
            # to scan on from where this scan stopped.
            self._scanned[q] = (tuple(found), scanned)
            while len(self._scanned) > MAX_KEPT_QUERIES:
                del self._scanned[next(iter(self._scanned))]
        ranked = sorted(found, key=lambda i: _rank(self.paths[i], q))
        return [self.paths[i] for i in ranked[:limit]]

    def _scan(self, q: str, found: list[int], start: int) -> tuple[list[int], int]:
        """``found`` and the matches after position ``start`` of the joined paths, up to
        ``MAX_SCORED`` in all; and the position up to which the paths were scanned."""
        if len(found) >= MAX_SCORED or start >= len(self._joined):
            return found, start
        for match in self._pattern(q).finditer(self._joined, start):
            # The match's last character is always inside the path it matched.
            index = bisect.bisect_right(self._starts, match.end() - 1) - 1
            # A path can match twice when the pattern does not start at its beginning.
            if not found or found[-1] != index:
                found.append(index)
                if len(found) >= MAX_SCORED:
                    # Scanned up to the newline that ends this path.
                    return found, self._end_of(index)
        return found, len(self._joined)

    def _end_of(self, index: int) -> int:
        return self._starts[index] + len(self.paths[index].lower())

    def _in_names(self, q: str) -> list[int]:
        """Paths whose file name holds ``q`` as it is (a plain search, the fastest kind)."""
        found: list[int] = []
        at = self._names.find(q)
        while at != -1 and len(found) < MAX_SCORED:
            index = bisect.bisect_right(self._name_starts, at) - 1
            if not found or found[-1] != index:
                found.append(index)
            at = self._names.find(q, at + 1)
        return found

    def _narrowed(self, q: str) -> tuple[list[int], int]:
        """The matches of ``q`` among the paths an earlier query that ``q`` starts with
        scanned (a path that holds ``q`` in order holds its beginning too), and where
        that scan stopped; nothing and 0 without such a query."""
        with self._kept:
            kept = [self._scanned.get(q[:end]) for end in range(len(q), 0, -1)]
        earlier = next((found for found in kept if found is not None), None)
        if earlier is None:
            return [], 0
        test = re.compile("".join(f"[^{c}]*+{c}" for c in map(re.escape, q)))
        found = [i for i in earlier[0] if test.match(self.paths[i].lower())]
        return found, earlier[1]

    def _pattern(self, q: str) -> re.Pattern[str]:
        # [^\nc]*+c takes the first c and never backtracks: a subsequence test in one pass.
        chars = [re.escape(c) for c in q]
        rest = "".join(f"[^\\n{c}]*+{c}" for c in chars[1:])
        first = q[0]
        if first not in self._counts:
            self._counts[first] = self._joined.count(first)
        if self._counts[first] < len(self.paths) // 2:
            # A rare first character: the engine jumps from one to the next.
            return re.compile(chars[0] + rest)
        # A common one: each path is read once from its start.
        return re.compile(f"\\n[^\\n{chars[0]}]*+{chars[0]}" + rest)


def _joined(texts: list[str]) -> tuple[str, tuple[int, ...]]:
    """A newline, then each text followed by one; and where each text starts."""
    starts = []
    at = 1
    for text in texts:
        starts.append(at)
        at += len(text) + 1
    return "\n" + "".join(text + "\n" for text in texts), tuple(starts)


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


# A folder and the git dir and work tree recorded for it (None outside git).
Folder = tuple[Path, GitPlace | None]


def list_folder(
    root: Path, previous: FileList | None = None, place: GitPlace | None = None
) -> FileList:
    """The folder's files as git sees them (through ``place``, the session's recorded git
    dir), or by a bounded walk outside git; ``previous`` is kept (as new) when nothing
    changed, which saves sorting and joining it again."""
    started = time.monotonic()
    if place is not None and folder_snapshot.is_private(place):
        # A folder outside git, snapshotted for its Changes: listed as outside git, by
        # the walk that skips the heavy folders nobody mentions.
        place = None
    # A refresh runs beside the user's own work: git gets a lower priority then.
    paths = _git_files(root, place, nice=previous is not None) if place is not None else None
    source = "git" if paths is not None else "walk"
    truncated = False
    if paths is None:
        paths, truncated = _walk(root)
    elif len(paths) > MAX_FILES:
        paths, truncated = paths[:MAX_FILES], True
    digest = hashlib.blake2b("\0".join(paths).encode(errors="surrogateescape")).digest()
    took = time.monotonic() - started
    if previous is not None and (previous.fingerprint, previous.source) == (digest, source):
        return replace(previous, built_at=time.monotonic(), took=took)
    return FileList.build(paths, source, truncated, digest, took)


def _git_files(root: Path, place: GitPlace, *, nice: bool = False) -> list[str] | None:
    """Tracked plus untracked-not-ignored files under ``root`` (relative to it), from the
    recorded git dir; None when git cannot list them."""
    top = Path(os.path.realpath(place.work_tree))
    here = Path(os.path.realpath(root))
    if not here.is_relative_to(top):
        return None
    try:
        done = run(
            ["ls-files", "-z", "--cached", "--others", "--exclude-standard", "--deduplicate"],
            cwd=place,
            what=f"listing the files of {root}",
            timeout=GIT_TIMEOUT_S,
            nice=nice,
        )
    except GitError:
        return None
    text = done.stdout.decode("utf-8", errors="surrogateescape")
    prefix = "" if here == top else here.relative_to(top).as_posix() + "/"
    # Paths git cannot give as text (invalid UTF-8) could not be typed or sent anyway.
    return [
        p.removeprefix(prefix)
        for p in text.split("\0")
        if p and p.startswith(prefix) and _printable(p)
    ]


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
        self._lists: OrderedDict[Folder, FileList] = OrderedDict()
        self._refreshing: set[Folder] = set()
        self._lock = threading.Lock()
        self._build_locks: dict[Folder, threading.Lock] = {}

    def cached(self, root: Folder) -> FileList | None:
        """The kept list, starting a background refresh when it is old."""
        with self._lock:
            found = self._lists.get(root)
            if found is None:
                return None
            self._lists.move_to_end(root)
            # A listing that takes long (a huge tree, a busy machine) is repeated less
            # often, so that refreshing never becomes most of the machine's work.
            wait = max(self.refresh_after, 3 * found.took)
            stale = time.monotonic() - found.built_at > wait
            if stale and root not in self._refreshing:
                self._refreshing.add(root)
                threading.Thread(target=self._refresh, args=(root,), daemon=True).start()
        return found

    def build(self, root: Folder) -> FileList:
        """List ``root`` now (blocking: call it off the event loop); one build per folder."""
        with self._lock:
            build_lock = self._build_locks.setdefault(root, threading.Lock())
        with build_lock:
            with self._lock:
                found = self._lists.get(root)
            if found is not None:
                return found
            return self._store(root, list_folder(root[0], place=root[1]))

    def _refresh(self, root: Folder) -> None:
        try:
            with self._lock:
                previous = self._lists.get(root)
            self._store(root, list_folder(root[0], previous, root[1]))
        except OSError:
            log.warning("could not list %s again", root, exc_info=True)
        finally:
            with self._lock:
                self._refreshing.discard(root)

    def _store(self, root: Folder, files: FileList) -> FileList:
        with self._lock:
            self._lists[root] = files
            self._lists.move_to_end(root)
            while len(self._lists) > MAX_FOLDERS:
                dropped, _ = self._lists.popitem(last=False)
                self._build_locks.pop(dropped, None)
        return files


# One per process: lists depend only on the folder, whoever asks.
FOLDER_FILES = FolderFiles()


async def find(
    root: Path, place: GitPlace | None, query: str, limit: int = MAX_RESULTS
) -> tuple[list[str], FileList]:
    """The paths under ``root`` that match ``query``, and the list they came from;
    ``place`` is the session's recorded git dir and work tree (None outside git)."""
    files = FOLDER_FILES.cached((root, place))
    if files is None:
        files = await asyncio.to_thread(FOLDER_FILES.build, (root, place))
    # Off the loop: between matches the thread lets the other sessions' streams run.
    found = await asyncio.to_thread(files.search, query, limit)
    return found, files


def warm(root: Path, place: GitPlace | None) -> None:
    """Start listing ``root`` in the background, so the first ``@`` finds it ready."""
    if FOLDER_FILES.cached((root, place)) is None:
        threading.Thread(target=_build_quietly, args=((root, place),), daemon=True).start()


def _build_quietly(root: Folder) -> None:
    try:
        FOLDER_FILES.build(root)
    except OSError:
        log.warning("could not list %s", root, exc_info=True)
