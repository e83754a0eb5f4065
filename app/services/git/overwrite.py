"""The files a merge would write over in a checkout although git does not track them there.

``git merge --ff-only`` refuses to overwrite uncommitted edits and untracked files, but it
replaces **ignored** files without a word: a branch that empties ``.gitignore`` and adds
``.env`` would put its ``.env`` over yours, and yours could not be recovered. So before
a checkout's branch moves, every path the merge adds or changes is looked at on disk:
anything there that the checkout's index does not track is in the way — a file, a link,
a folder holding files of its own where a file would go, or a file or a link where a
folder would go (git would write through it or replace it). Tracked files stay git's to
guard (it refuses where they have uncommitted edits).

Nothing here writes anything; paths are handled as git's bytes and never followed
through links.
"""

from __future__ import annotations

import os
import stat

from app.services.git.repo import GitPlace, run, text

__all__ = ["MAX_LISTED", "untracked_in_the_way"]

# A folder of generated files in the way is named by its first files, not all of them.
MAX_LISTED = 50


def untracked_in_the_way(place: GitPlace, old: str, new: str) -> list[str]:
    """Paths in the checkout at ``place`` (whose HEAD is ``old``) that moving it to ``new``
    would write over, replace or write through although its index does not track them;
    relative to the checkout, at most :data:`MAX_LISTED`. Git runs on the recorded git dir
    and work tree, never on a ``.git`` found in the folder."""
    checkout = place
    written = _written(checkout, old, new)
    top = os.fsencode(place.work_tree)
    present = [p for p in written if _exists_along(top, p)]
    if not present:
        return []
    tracked = _tracked(checkout)
    found: dict[bytes, None] = {}
    for path in present:
        for hit in _blocking(top, path, tracked):
            found.setdefault(hit)
            if len(found) >= MAX_LISTED:
                return [text(p) for p in found]
    return [text(p) for p in found]


def _written(checkout: GitPlace, old: str, new: str) -> list[bytes]:
    """The paths ``new`` adds or changes against ``old`` (deletions are of tracked files)."""
    out = run(
        ["diff-tree", "-r", "-z", "--no-renames", "--name-only", "--diff-filter=AMT", old, new],
        cwd=checkout,
        what=f"listing the files the merge writes in {checkout.work_tree}",
    )
    return [p for p in out.stdout.split(b"\0") if p]


def _tracked(checkout: GitPlace) -> set[bytes]:
    out = run(
        ["ls-files", "-z"], cwd=checkout, what=f"listing the files tracked in {checkout.work_tree}"
    )
    return {p for p in out.stdout.split(b"\0") if p}


def _lstat(path: bytes) -> os.stat_result | None:
    try:
        return os.lstat(path)
    except (FileNotFoundError, NotADirectoryError):
        return None


def _exists_along(top: bytes, path: bytes) -> bool:
    """Whether anything is on disk at ``path`` or at the first of its folders that is not
    a plain folder (cheap: most paths a merge writes do not exist yet, or are tracked)."""
    parts = path.split(b"/")
    for i in range(1, len(parts) + 1):
        got = _lstat(os.path.join(top, *parts[:i]))
        if got is None:
            return False
        if not stat.S_ISDIR(got.st_mode):
            return True
    return True


def _blocking(top: bytes, path: bytes, tracked: set[bytes]) -> list[bytes]:
    """What is in the way of writing ``path``: an untracked file or link among its folders,
    at its place, or (its place being a folder) the untracked files inside."""
    parts = path.split(b"/")
    for i in range(1, len(parts)):
        lead = b"/".join(parts[:i])
        got = _lstat(os.path.join(top, lead))
        if got is None:
            return []
        if not stat.S_ISDIR(got.st_mode):
            # A link here would carry the write elsewhere; a file would be replaced.
            return [] if lead in tracked else [lead]
    if path in tracked:
        return []
    got = _lstat(os.path.join(top, path))
    if got is None:
        return []
    if stat.S_ISDIR(got.st_mode):
        return _untracked_inside(top, path, tracked)
    return [path]


def _untracked_inside(top: bytes, folder: bytes, tracked: set[bytes]) -> list[bytes]:
    """The files and links under ``folder`` the index does not track (its tracked ones
    are removed by the merge itself, under git's own checks), at most MAX_LISTED."""
    found: list[bytes] = []
    for here, dirs, files in os.walk(os.path.join(top, folder)):
        rel = os.path.relpath(here, top)
        dirs.sort()
        # os.walk lists a link to a folder among dirs, and does not enter it.
        for name in sorted(files) + [d for d in dirs if os.path.islink(os.path.join(here, d))]:
            inner = os.path.join(rel, name).replace(os.sep.encode(), b"/")
            if inner not in tracked:
                found.append(inner)
                if len(found) >= MAX_LISTED:
                    return found
    return found
