"""The folder picker's guard: which paths it lists at all, and no 500 from the rest.

The picker lists real folders for a profile. Pseudo-filesystems are refused outright:
their entries are not project folders, and some are magic links (``/proc/<pid>/root``,
``/proc/<pid>/cwd``) into another process's view of the machine. The check is made on
the path as typed and again after resolving links, so a link to ``/proc`` is refused too.
"""

from __future__ import annotations

import errno
import os

from app.folders import KERNEL_FOLDERS, MAX_CHARS
from app.web.profiles.files import Listing, list_dirs

# The same limits a profile's folder has (PATH_MAX; the kernel's own file systems).
MAX_PATH_CHARS = MAX_CHARS
PSEUDO_ROOTS = KERNEL_FOLDERS
# As many links as the kernel follows in one path.
MAX_LINK_HOPS = 40


def guarded_listing(text: str, *, nearest: bool = False) -> tuple[Listing, int]:
    """``list_dirs`` for a path that passed the checks, else a listing that says why."""
    shown = text[:200].replace("\x00", "")
    why = refusal(text)
    if why:
        return Listing(path=shown, error=why), 422
    try:
        return list_dirs(text, nearest=nearest)
    except OSError as exc:
        # A name too long for the filesystem, or a parent that cannot be searched.
        why = f"Cannot look at {shown}: {(exc.strerror or str(exc)).lower()}"
        return Listing(path=shown, error=why), 422 if exc.errno == errno.ENAMETOOLONG else 403


def refusal(text: str) -> str | None:
    """Why the picker will not look at ``text``, or None."""
    if len(text) > MAX_PATH_CHARS:
        return f"The path is longer than {MAX_PATH_CHARS} characters"
    if "\x00" in text:
        return "The path contains a NUL character"
    typed = os.path.normpath(os.path.expanduser(text.strip())) if text.strip() else ""
    if os.path.isabs(typed):
        reached = _pseudo_on_the_way(typed)
        if reached:
            return f"{typed} is or leads into {reached}, a system pseudo-filesystem"
    return None


def _pseudo_on_the_way(path: str) -> str | None:
    """The pseudo-filesystem root met first while resolving ``path`` link by link, if any.

    By hand rather than ``os.path.realpath``: that one reads the magic links too (and
    fails on the ones it may not read), while here the walk stops before entering one.
    """
    todo = path.split("/")
    done = "/"
    hops = 0
    while todo:
        name = todo.pop(0)
        if name in ("", "."):
            continue
        if name == "..":
            done = os.path.dirname(done)
            continue
        candidate = os.path.join(done, name)
        for root in PSEUDO_ROOTS:
            if candidate == root or candidate.startswith(root + "/"):
                return root
        try:
            target = os.readlink(candidate)
        except OSError:  # not a link, missing or unreadable: taken as it stands
            done = candidate
            continue
        hops += 1
        if hops > MAX_LINK_HOPS:  # a loop; listing it will say so
            return None
        todo = target.split("/") + todo
        if target.startswith("/"):
            done = "/"
    return None
