"""What changed in a working tree since a commit or a snapshot: git's view, not the agent's.

Everything is seen, whoever did it (an edit tool, ``sed -i``, ``rm``, ``mv``, a commit):
the working tree as it is now is written into a **temporary index** (``GIT_INDEX_FILE``
pointing at a scratch copy of the real one, so git reuses its stat cache instead of
hashing every file; see ``scratch``), ``git add -A`` brings it up to date, ``git
write-tree`` turns it into a tree, and one ``git diff-tree -M --raw --patch`` compares
that with the base (lines added and removed are counted from the patch: asking git for
``--numstat`` as well would make it diff every file twice). The real index, HEAD, the
refs, the stashes and the files stay exactly as they were; the only trace is unreferenced
objects in the object store, which git's own garbage collection removes.

A snapshot is the same tree, taken when a session starts in a plain checkout: the
session's changes are then the diff from that tree, without a commit or a stash.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Literal

from app.errors import ValidationFailed
from app.services.git import bigfiles
from app.services.git.repo import GitError, Where, repo_root, run, text
from app.services.git.scratch import scratch_index

__all__ = [
    "MAX_DIFF_BYTES",
    "MAX_LINE_DIFF_BYTES",
    "FileChange",
    "diff",
    "snapshot",
    "uncommitted",
]

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
# For ``git add`` into a scratch index: a split index would make git write shared-index
# files into the user's .git; the untracked cache (kept in the scratch index, nowhere
# else) lets the next read skip folders whose contents did not change.
SCRATCH_CONFIG = ("-c", "core.splitIndex=false", "-c", "core.untrackedCache=true")


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
    # Its size, for a file over ``bigfiles.TOO_BIG_BYTES``: listed, never read or diffed.
    too_big: int | None = None


def snapshot(folder: Where) -> str:
    """The tree of ``folder``'s working tree as it is now (tracked and new files, not
    ignored; files too big to read as they were in the index, or left out if new)."""
    top = repo_root(folder)
    return _tree_now(top, bigfiles.find(top))


def diff(
    folder: Where,
    base: str,
    *,
    max_file_bytes: int = MAX_DIFF_BYTES,
    max_total_bytes: int = MAX_TOTAL_DIFF_BYTES,
) -> list[FileChange]:
    """Every file that differs between ``base`` (a commit or a snapshot tree) and the
    working tree of ``folder`` now, committed or not, in git's path order."""
    top = repo_root(folder)
    _check_base(top, base)
    big = bigfiles.find(top)
    found = _diff_trees(top, base, _tree_now(top, big), max_file_bytes, max_total_bytes)
    return _with_big(found, bigfiles.changed(top, big))


def uncommitted(folder: Where) -> list[str]:
    """The files ``folder``'s working tree has not committed (edited, deleted, new and not
    ignored), counted as the Changes tab counts them: a renamed file once, by its new
    name (``git status`` would show a deletion and a new file)."""
    top = repo_root(folder)
    head = run(
        ["rev-parse", "--verify", "--quiet", "HEAD^{commit}"],
        cwd=top,
        what=f"reading the last commit of {top}",
        ok=(0, 1),
    )
    base = text(head.stdout).strip() or _empty_tree(top)
    big = bigfiles.find(top)
    out = run(
        ["diff-tree", "-r", "-M", "-z", "--raw", base, _tree_now(top, big)],
        cwd=top,
        what=f"comparing {top} with its last commit",
        timeout=DIFF_TIMEOUT_S,
    ).stdout
    found = {text(entry.path) for entry in _parse_raw(out)[0]}
    return sorted(found | {text(raw) for raw in bigfiles.changed(top, big)})


def _empty_tree(top: Where) -> str:
    """The id of the empty tree in ``top``'s hash (before its first commit)."""
    out = run(["hash-object", "-t", "tree", "--stdin"], cwd=top, input=b"", what="naming no files")
    return text(out.stdout).strip()


def _with_big(found: list[FileChange], big: dict[bytes, bigfiles.BigFile]) -> list[FileChange]:
    """``found`` with the changed files too big to read, each marked with its size."""
    listed = {change.path: i for i, change in enumerate(found)}
    for raw, file in big.items():
        path = text(raw)
        if path in listed:
            i = listed[path]
            found[i] = replace(found[i], binary=True, diff="", truncated=False, too_big=file.size)
        else:
            status: Status = "edited" if file.tracked else "created"
            found.append(FileChange(path, None, status, 0, 0, True, "", False, file.size))
    return sorted(found, key=lambda change: change.path) if big else found


def _check_base(top: Where, base: str) -> None:
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


def _tree_now(top: Where, big: dict[bytes, bigfiles.BigFile]) -> str:
    index_path = run(
        ["rev-parse", "--path-format=absolute", "--git-path", "index"],
        cwd=top,
        what=f"finding the index of {top}",
    )
    with scratch_index(Path(text(index_path.stdout).rstrip("\n"))) as index:
        env = {"GIT_INDEX_FILE": str(index)}
        # The big files are left out by name, so git never opens them.
        only = ["--pathspec-from-file=-", "--pathspec-file-nul"] if big else []
        run(
            [*SCRATCH_CONFIG, "add", "--all", "--ignore-errors", *only],
            cwd=top,
            env=env,
            input=bigfiles.excluding(big) if big else None,
            what=f"reading the working tree of {top}",
            timeout=DIFF_TIMEOUT_S,
        )
        tree = run(["write-tree"], cwd=top, env=env, what=f"recording the tree of {top}")
    return text(tree.stdout).strip()


@dataclass(frozen=True)
class _Entry:
    path: bytes
    old_path: bytes | None
    kind: str  # git's status letter: A, D, M, T, R…


def _diff_trees(
    top: Where, base: str, tree: str, max_file_bytes: int, max_total_bytes: int
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
    entries, patch = _parse_raw(out)
    starts = [m.start() for m in PATCH_START.finditer(patch)] + [len(patch)]
    patches = [patch[a:b] for a, b in zip(starts, starts[1:], strict=False)]
    changes: list[FileChange] = []
    spent = 0
    at = 0
    for entry in entries:
        # A type change (file to link) is shown as a deletion and a creation: two patches.
        take = 2 if entry.kind == "T" else 1
        parts = patches[at : at + take]
        at += take
        counts = [_count(part) for part in parts]
        additions, deletions = sum(c[0] for c in counts), sum(c[1] for c in counts)
        binary = any(c[2] for c in counts)
        raw = b"".join(parts)
        shown, cut = _cap(raw, max(0, min(max_file_bytes, max_total_bytes - spent)))
        spent += len(shown)
        changes.append(
            FileChange(
                path=text(entry.path),
                old_path=text(entry.old_path) if entry.old_path is not None else None,
                status=STATUSES.get(entry.kind, "edited"),
                additions=additions,
                deletions=deletions,
                binary=binary,
                diff=text(shown),
                truncated=cut,
            )
        )
    if at != len(patches):
        raise GitError(f"git's diff of {top} could not be read: the patches do not match the files")
    return changes


def _count(patch: bytes) -> tuple[int, int, bool]:
    """Lines added and removed in one file's patch, and whether git showed it as binary."""
    hunks = patch.find(b"\n@@ ")
    if hunks < 0:
        return 0, 0, b"\nBinary files " in patch or b"\nGIT binary patch" in patch
    # Inside hunks every line starts with ' ', '+', '-' or '\\'; the ---/+++ header is before.
    body = patch[hunks:]
    return body.count(b"\n+"), body.count(b"\n-"), False


def _cap(raw: bytes, room: int) -> tuple[bytes, bool]:
    if len(raw) <= room:
        return raw, False
    end = raw.rfind(b"\n", 0, room)
    return raw[: end + 1 if end >= 0 else 0], True


def _parse_raw(out: bytes) -> tuple[list[_Entry], bytes]:
    """The ``--raw -z`` records (a status line, then one or two names) and the patch after."""
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
    except ValueError:
        raise GitError("git's list of changed files could not be read") from None
    if out.startswith(b"\0", pos):
        pos += 1
    return entries, out[pos:]
