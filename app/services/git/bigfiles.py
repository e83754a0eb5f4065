"""Files too big to read when the app looks at a working tree's changes.

``git add`` hashes (and compresses, and stores) every new or touched file it is given,
whatever its size: one file of a gigabyte in a worktree made every read of its changes
(the board, the Changes tab) take most of a minute and wrote a blob of it into the
repository. Files above ``TOO_BIG_BYTES`` are found with ``stat`` alone and left out of
those reads: they are listed as changed, "too big to diff", with their size, and git
never opens them.
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass

from app.services.git.repo import Where, run

__all__ = ["TOO_BIG_BYTES", "BigFile", "changed", "excluding", "find"]

TOO_BIG_BYTES = 64 * 1024 * 1024


@dataclass(frozen=True)
class BigFile:
    size: int
    tracked: bool  # in the index (else new to git)


def find(top: Where, limit: int = TOO_BIG_BYTES) -> dict[bytes, BigFile]:
    """The regular files git would look at in ``top`` (tracked, or new and not ignored)
    that are over ``limit`` bytes, by git's path."""
    tracked = _listed(top, "--cached")
    found: dict[bytes, BigFile] = {}
    root = os.fsencode(str(top))  # a recorded place reads as its work tree
    for paths, known in ((tracked, True), (_listed(top, "--others", "--exclude-standard"), False)):
        for path in paths:
            try:
                info = os.lstat(os.path.join(root, path))
            except OSError:  # gone since, or under a folder that is a link: git's own affair
                continue
            if stat.S_ISREG(info.st_mode) and info.st_size > limit:
                found[path] = BigFile(info.st_size, known)
    return found


def _listed(top: Where, *which: str) -> set[bytes]:
    out = run(["ls-files", "-z", *which], cwd=top, what=f"listing the files of {top}")
    return {p for p in out.stdout.split(b"\0") if p}


def excluding(paths: dict[bytes, BigFile]) -> bytes:
    """A NUL-separated pathspec for ``--pathspec-from-file``: everything but ``paths``."""
    return b"".join([b".\0", *(b":(exclude,literal)" + p + b"\0" for p in paths)])


def changed(top: Where, paths: dict[bytes, BigFile]) -> dict[bytes, BigFile]:
    """Those of ``paths`` that are new to git, or whose ``stat`` differs from the index."""
    if not any(f.tracked for f in paths.values()):
        return dict(paths)
    touched = set(
        run(
            ["diff-files", "--name-only", "-z"], cwd=top, what=f"checking the big files of {top}"
        ).stdout.split(b"\0")
    )
    return {p: f for p, f in paths.items() if not f.tracked or p in touched}
