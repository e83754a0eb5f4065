"""What changed in a working tree since a commit or a snapshot: git's view, not the agent's.

Everything is seen, whoever did it (an edit tool, ``sed -i``, ``rm``, ``mv``, a commit):
the working tree as it is now is written into a **temporary index** (``GIT_INDEX_FILE``
pointing at a scratch copy of the real one, so git reuses its stat cache instead of
hashing every file), ``git add -A`` brings it up to date, ``git write-tree`` turns it
into a tree, and ``git diff-tree`` compares that with the base. The real index, HEAD, the
refs, the stashes and the files stay exactly as they were; the only trace is unreferenced
objects in the object store, which git's own garbage collection removes.

A snapshot is the same tree, taken when a session starts in a plain checkout: the
session's changes are then the diff from that tree, without a commit or a stash.
"""

from __future__ import annotations

import re
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from app.errors import ValidationFailed
from app.services.git.repo import GitError, repo_root, run, text

__all__ = ["MAX_DIFF_BYTES", "MAX_LINE_DIFF_BYTES", "FileChange", "diff", "snapshot"]

Status = Literal["created", "edited", "deleted", "renamed"]
STATUSES: dict[str, Status] = {"A": "created", "D": "deleted", "R": "renamed", "C": "created"}
# One file's diff text is cut here: a regenerated lock file must not fill the page.
MAX_DIFF_BYTES = 256 * 1024
# Past this many bytes of diff text in all, the remaining files come without theirs.
MAX_TOTAL_DIFF_BYTES = 16 * 1024 * 1024
# Files bigger than this get no line diff at all (git treats them as binary): diffing a
# 50 MB generated file line by line costs seconds and shows nothing anyone reads.
MAX_LINE_DIFF_BYTES = 8 * 1024 * 1024
DIFF_TIMEOUT_S = 120.0
PATCH_START = re.compile(rb"^diff --git ", re.M)


@dataclass(frozen=True)
class FileChange:
    path: str
    old_path: str | None  # the name before, for a rename
    status: Status
    additions: int
    deletions: int
    binary: bool  # no line diff: binary content, or larger than MAX_LINE_DIFF_BYTES
    diff: str  # git's unified diff of this file (header included)
    truncated: bool  # ``diff`` was cut (or left out) to stay within the caps


def snapshot(folder: Path | str) -> str:
    """The tree of ``folder``'s working tree as it is now (tracked and new files, not ignored)."""
    return _tree_now(repo_root(folder))


def diff(
    folder: Path | str,
    base: str,
    *,
    max_file_bytes: int = MAX_DIFF_BYTES,
    max_total_bytes: int = MAX_TOTAL_DIFF_BYTES,
) -> list[FileChange]:
    """Every file that differs between ``base`` (a commit or a snapshot tree) and the
    working tree of ``folder`` now, committed or not, in git's path order."""
    top = repo_root(folder)
    _check_base(top, base)
    return _diff_trees(top, base, _tree_now(top), max_file_bytes, max_total_bytes)


def _check_base(top: Path, base: str) -> None:
    if not re.fullmatch(r"[0-9a-f]{4,64}", base):
        raise ValidationFailed("base", f"{base!r} is not a commit or tree id")
    got = run(
        ["cat-file", "-e", f"{base}^{{tree}}"], cwd=top, what="reading the base", ok=(0, 1, 128)
    )
    if got.returncode != 0:
        raise GitError(
            f"the base {base} is no longer in the repository at {top} "
            "(it may have been garbage-collected); start a new snapshot"
        )


def _tree_now(top: Path) -> str:
    index_path = run(
        ["rev-parse", "--path-format=absolute", "--git-path", "index"],
        cwd=top,
        what=f"finding the index of {top}",
    )
    real_index = Path(text(index_path.stdout).rstrip("\n"))
    with tempfile.TemporaryDirectory(prefix="angelia-index-") as scratch:
        index = Path(scratch) / "index"
        if real_index.is_file():
            # copy2 keeps the index's mtime, which git's racy-timestamp check relies on.
            shutil.copy2(real_index, index)
        env = {"GIT_INDEX_FILE": str(index)}
        # A split index would make git write shared-index files into the user's .git.
        run(
            ["-c", "core.splitIndex=false", "add", "--all", "--ignore-errors"],
            cwd=top,
            env=env,
            what=f"reading the working tree of {top}",
            timeout=DIFF_TIMEOUT_S,
        )
        tree = run(["write-tree"], cwd=top, env=env, what=f"recording the tree of {top}")
    return text(tree.stdout).strip()


@dataclass
class _Entry:
    path: bytes
    old_path: bytes | None
    kind: str
    additions: int = 0
    deletions: int = 0
    binary: bool = False


def _diff_trees(
    top: Path, base: str, tree: str, max_file_bytes: int, max_total_bytes: int
) -> list[FileChange]:
    out = run(
        [
            "-c",
            f"core.bigFileThreshold={MAX_LINE_DIFF_BYTES}",
            "diff-tree",
            "-r",
            "-M",
            "-z",
            "--raw",
            "--numstat",
            "--patch",
            "--no-color",
            "--no-ext-diff",
            "--no-textconv",
            base,
            tree,
        ],
        cwd=top,
        what=f"comparing {top} with {base}",
        timeout=DIFF_TIMEOUT_S,
    ).stdout
    entries, patch = _parse_summary(out)
    chunks = [m.start() for m in PATCH_START.finditer(patch)] + [len(patch)]
    patches = [patch[a:b] for a, b in zip(chunks, chunks[1:], strict=False)]
    changes: list[FileChange] = []
    spent = 0
    at = 0
    for entry in entries:
        # A type change (file to link) is shown as a deletion and a creation: two patches.
        take = 2 if entry.kind == "T" else 1
        raw = b"".join(patches[at : at + take])
        at += take
        room = max(0, min(max_file_bytes, max_total_bytes - spent))
        shown, cut = _cap(raw, room)
        spent += len(shown)
        changes.append(
            FileChange(
                path=text(entry.path),
                old_path=text(entry.old_path) if entry.old_path is not None else None,
                status=STATUSES.get(entry.kind, "edited"),
                additions=entry.additions,
                deletions=entry.deletions,
                binary=entry.binary,
                diff=text(shown),
                truncated=cut,
            )
        )
    return changes


def _cap(raw: bytes, room: int) -> tuple[bytes, bool]:
    if len(raw) <= room:
        return raw, False
    end = raw.rfind(b"\n", 0, room)
    return raw[: end + 1 if end >= 0 else 0], True


def _parse_summary(out: bytes) -> tuple[list[_Entry], bytes]:
    """The ``--raw`` and ``--numstat`` records (NUL-separated) and the patch after them."""
    pos = 0

    def take() -> bytes:
        nonlocal pos
        end = out.index(b"\0", pos)
        token = out[pos:end]
        pos = end + 1
        return token

    entries: list[_Entry] = []
    try:
        while out.startswith(b":", pos):
            kind = text(take()).split()[-1][:1]
            first = take()
            if kind in "RC":
                entries.append(_Entry(path=take(), old_path=first, kind=kind))
            else:
                entries.append(_Entry(path=first, old_path=None, kind=kind))
        for entry in entries:
            added, deleted, name = take().split(b"\t", 2)
            if not name:  # a rename: the old and the new name follow
                take()
                take()
            entry.binary = added == b"-"
            entry.additions = 0 if entry.binary else int(added)
            entry.deletions = 0 if entry.binary else int(deleted)
    except ValueError:
        raise GitError("git's list of changed files could not be read") from None
    if out.startswith(b"\0", pos):
        pos += 1
    return entries, out[pos:]
