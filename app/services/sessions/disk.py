"""How much disk the session worktrees take: folders only, no git and no database, so
``angelia doctor`` can say it without loading either."""

from __future__ import annotations

from pathlib import Path

from app.db.datadir import WORKTREES_DIR
from app.services.git.inventory import size_on_disk

__all__ = ["usage"]


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
