"""Scratch indexes: a private copy of a working tree's index for git to update freely.

Reading "the working tree now" means ``git add -A`` into an index, and the real one is
the user's (or the agent's) and is never written. Each read works on its own copy. The
copy git leaves behind is kept, per working tree, in a private folder of this process:
its stat data is fresh, so the next read only hashes files that changed since, where a
new copy of the real index would hash again every file that was written just before that
index was (git cannot trust their timestamps). A kept copy is only reused while the real
index is exactly as it was when the copy was made (same inode, size and time): once the
real index changes (a commit, ``git add -f``, ``git rm --cached``…) the next read starts
again from it, so what the repository tracks always comes from the real index.
"""

from __future__ import annotations

import atexit
import hashlib
import os
import shutil
import stat
import tempfile
import threading
import uuid
from collections import OrderedDict
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

__all__ = ["scratch_index"]

# A kept index is about 100 bytes a tracked file: 64 repositories of 10,000 files is 64 MB.
MAX_KEPT = 64

Signature = tuple[int, int, int] | None

_lock = threading.Lock()
_kept: OrderedDict[str, tuple[Signature, Path]] = OrderedDict()
_folder: Path | None = None


def _signature(index: Path) -> Signature:
    try:
        info = index.stat()
    except FileNotFoundError:
        return None
    return (info.st_ino, info.st_size, info.st_mtime_ns)


PREFIX = "angelia-git-index-"


def _private_folder() -> Path:
    global _folder
    if _folder is None or not _folder.is_dir():
        # A process killed outright (SIGKILL, a crash) never ran its atexit clean-up.
        sweep_stale(Path(tempfile.gettempdir()))
        # mkdtemp makes it 0700 with an unguessable name: no other user can plant a file.
        # The pid in the name tells a later process whether its owner is gone.
        _folder = Path(tempfile.mkdtemp(prefix=f"{PREFIX}{os.getpid()}-"))
        atexit.register(shutil.rmtree, _folder, True)
    return _folder


def sweep_stale(temp: Path) -> list[Path]:
    """Remove the scratch folders in ``temp`` that processes of this user left when they
    died; return them. Only real folders owned by this user whose process is gone are
    touched: not another user's, not a link, not a live process's."""
    removed = []
    for entry in temp.glob(f"{PREFIX}*"):
        pid_text = entry.name[len(PREFIX) :].split("-", 1)[0]
        try:
            info = entry.lstat()
        except OSError:
            continue
        if not pid_text.isdigit() or info.st_uid != os.getuid():
            continue
        if not stat.S_ISDIR(info.st_mode) or _alive(int(pid_text)):
            continue
        shutil.rmtree(entry, ignore_errors=True)
        removed.append(entry)
    return removed


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # another user's process took the number: leave the folder be
    except (OverflowError, ValueError):
        return True  # no pid of ours: not a folder this module made
    return True


@contextmanager
def scratch_index(real_index: Path) -> Iterator[Path]:
    """A path for ``GIT_INDEX_FILE`` holding the working tree's index; kept if all goes well."""
    key = str(real_index)
    signature = _signature(real_index)
    with _lock:
        folder = _private_folder()
        kept = _kept.get(key)
    work = folder / f"{uuid.uuid4().hex}.index"
    try:
        if kept is not None and kept[0] == signature and kept[1].is_file():
            shutil.copy2(kept[1], work)
        elif signature is not None:
            # copy2 keeps the index's mtime, which git's racy-timestamp check relies on.
            shutil.copy2(real_index, work)
        yield work
    except BaseException:
        work.unlink(missing_ok=True)
        raise
    if not work.is_file():  # git wrote nothing (an empty repository with no files)
        return
    final = folder / f"{hashlib.sha256(key.encode('utf-8', 'surrogateescape')).hexdigest()}.index"
    with _lock:
        os.replace(work, final)
        _kept[key] = (signature, final)
        _kept.move_to_end(key)
        while len(_kept) > MAX_KEPT:
            _, (_, dropped) = _kept.popitem(last=False)
            dropped.unlink(missing_ok=True)
