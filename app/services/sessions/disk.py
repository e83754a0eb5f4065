"""How much disk the session worktrees and folder snapshots take: folders only, no git
and no database, so ``angelia doctor`` can say it without loading either."""

from __future__ import annotations

from pathlib import Path

from app.db.datadir import SNAPSHOTS_DIR, WORKTREES_DIR
from app.services.git.inventory import size_on_disk

__all__ = ["counted", "describe", "snapshots", "usage"]


def usage(data_dir: Path) -> tuple[int, int]:
    """(how many session worktree folders, the bytes they take): no git, no database."""
    root = data_dir / WORKTREES_DIR
    count = total = 0
    if not root.is_dir():
        return 0, 0
    for repo_dir in root.iterdir():
        if not repo_dir.is_dir() or repo_dir.is_symlink():
            continue
        for folder in repo_dir.iterdir():
            if folder.is_dir() and not folder.is_symlink():
                count += 1
                total += size_on_disk(folder)
    return count, total


def snapshots(data_dir: Path) -> tuple[int, int]:
    """(how many folder snapshots, the bytes they take): the private git dirs recording
    sessions' folders outside git, each removed with its session."""
    root = data_dir / SNAPSHOTS_DIR
    if not root.is_dir():
        return 0, 0
    found = [d for d in root.iterdir() if d.is_dir() and not d.is_symlink()]
    return len(found), sum(size_on_disk(d) for d in found)


def describe(data_dir: Path, what: str = "worktrees") -> str:
    """``angelia doctor``'s line: how many, and their size in plain units."""
    count, size = usage(data_dir) if what == "worktrees" else snapshots(data_dir)
    shown = f"{size} bytes"
    for unit, scale in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if size >= scale:
            shown = f"{size / scale:.1f} {unit}"
            break
    if what == "worktrees":
        return f"{count} using {shown} (the worktrees page lists and cleans them up)"
    return f"{count} using {shown} (each goes with its session)"


def counted(data_dir: Path, what: str = "worktrees") -> dict[str, int]:
    """``usage`` (or ``snapshots``) for JSON: ``{"count": …, "bytes": …}``."""
    count, size = usage(data_dir) if what == "worktrees" else snapshots(data_dir)
    return {"count": count, "bytes": size}
