"""The files of a session's folder, for ``@`` mentions in the composer: one folder's list
and how a query filters it. How a folder is listed is ``file_listing``; which lists are
kept, listed ahead of the first query and refreshed is ``folder_files``.

Filtering is a subsequence match ("srvfl" finds ``app/services/files.py``) done by one
regular expression over all paths joined into one string, so the scan runs in C rather
than a Python loop per path; only the matches are scored. Two shortcuts keep typing
fast: text found as typed in enough file names needs no scan of whole paths, and each
query's matches are kept so the next keystroke tests only those (a path that holds
"srvf" in order holds "srv" too) and scans on from where the earlier scan stopped.
"""

from __future__ import annotations

import bisect
import re
import threading
import time
from dataclasses import dataclass, field

# Results of one query; a menu shows a handful, the rest is filtering further.
MAX_RESULTS = 50
# Matches scored per query; the list is in shallow-first order, so these are the likeliest.
MAX_SCORED = 5_000
# Recent queries whose matches are kept, per list.
MAX_KEPT_QUERIES = 64


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
    # Only what a first listing still under way has found so far.
    partial: bool = False
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
        partial: bool = False,
    ) -> FileList:
        # Shallow paths first, so an empty or short query shows the top of the tree. The
        # first duplicate is kept in place: paths an earlier list already put in order
        # stay one run, which the sort then merges with the rest instead of sorting again.
        ordered = tuple(sorted(dict.fromkeys(paths), key=lambda p: (p.count("/"), p)))
        lowered = [p.lower() for p in ordered]
        joined, starts = _joined(lowered)
        names, name_starts = _joined([low.rsplit("/", 1)[-1] for low in lowered])
        now = time.monotonic()
        return cls(
            ordered,
            source,
            truncated,
            now,
            took,
            fingerprint,
            joined,
            starts,
            names,
            name_starts,
            partial,
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
