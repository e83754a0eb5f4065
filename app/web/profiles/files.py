"""Files the profile pages look at: the folder picker's listing and instructions diffs."""

from __future__ import annotations

import difflib
import hashlib
import os
from dataclasses import dataclass, field
from pathlib import Path

# A folder with more sub-folders than this (node_modules, a mail spool) is cut short;
# the picker is for finding a project, and a typed path still works.
MAX_DIRS = 1000


@dataclass
class Listing:
    """One folder's sub-folders for the picker; ``error`` says why it could not list."""

    path: str
    parent: str | None = None
    dirs: list[dict[str, str | bool]] = field(default_factory=list)
    more: int = 0
    error: str | None = None
    usable: bool = False


def list_dirs(text: str, *, nearest: bool = False) -> tuple[Listing, int]:
    """The sub-folders of the absolute path ``text`` (hidden ones last), and an HTTP status.

    With ``nearest`` a path that does not exist lists its nearest existing parent instead,
    so "Browse" starts near a half-typed path.
    """
    path = Path(os.path.expanduser(text.strip())) if text.strip() else Path.home()
    if not path.is_absolute():
        return Listing(path=text, error=f"{text} is not an absolute path; start it with /"), 422
    path = Path(os.path.normpath(path))
    if nearest:
        while not path.is_dir() and path != path.parent:
            path = path.parent
    listing = Listing(path=str(path), parent=str(path.parent) if path != path.parent else None)
    if not path.exists():
        listing.error = f"{path} does not exist"
        return listing, 404
    if not path.is_dir():
        listing.error = f"{path} is not a folder"
        return listing, 422
    try:
        with os.scandir(path) as entries:
            names = sorted(
                (e.name for e in entries if _is_dir(e)),
                key=lambda n: (n.startswith("."), n.casefold(), n),
            )
    except OSError as exc:
        listing.error = f"Cannot read {path}: {(exc.strerror or str(exc)).lower()}"
        return listing, 403
    listing.usable = True
    listing.more = max(0, len(names) - MAX_DIRS)
    listing.dirs = [
        {"name": name, "path": str(path / name), "hidden": name.startswith(".")}
        for name in names[:MAX_DIRS]
    ]
    return listing, 200


def _is_dir(entry: os.DirEntry[str]) -> bool:
    try:
        return entry.is_dir()  # follows links: a link to a project folder is a folder
    except OSError:
        return False


def fingerprint(text: str | None) -> str:
    """Names the exact file content a diff was shown for, so a confirm cannot
    overwrite a version the user never saw."""
    return hashlib.sha256((text or "").encode()).hexdigest()[:16]


def unified(current: str, new: str, file_name: str) -> str:
    """``current`` → ``new`` as a unified diff (the ``a/``, ``b/`` header lines are dropped
    by the template, which names the file itself)."""
    lines = difflib.unified_diff(
        current.splitlines(),
        new.splitlines(),
        fromfile=f"a/{file_name}",
        tofile=f"b/{file_name}",
        lineterm="",
    )
    return "\n".join(lines)
