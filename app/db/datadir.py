"""The data directory: one server at a time, and readable by its owner only.

It holds transcripts, file contents, tool output and profile ``env`` values (where API
keys go), so it must not be readable by other users of the machine, whatever the umask.
And two servers on one database would each recover (kill) the other's agents at start
and write the same event ``seq``; an exclusive ``flock`` on a file in the directory,
taken before anything touches the database, makes the second one stop instead.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import stat
from dataclasses import dataclass
from pathlib import Path

from app.errors import AppError

LOCK_NAME = "angelia.lock"
DIR_MODE = 0o700
FILE_MODE = 0o600


class DataDirError(AppError):
    """The data directory cannot be used (missing rights, disk full, …)."""

    status = 500


class DataDirBusy(DataDirError):
    """Another server already uses this data directory."""

    status = 409


class DataDirLock:
    """An exclusive lock on a data directory, held for as long as a server runs.

    The lock file says who holds it (pid and URL, never the token), so the server that
    finds it taken can tell the user where the running one is.
    """

    def __init__(self, fd: int, path: Path) -> None:
        self._fd: int | None = fd
        self.path = path

    @classmethod
    def acquire(cls, data_dir: Path, url: str) -> DataDirLock:
        """Lock ``data_dir`` (creating it, private); ``DataDirBusy`` if a server has it,
        ``DataDirError`` if it cannot be written."""
        try:
            return cls._acquire(data_dir, url)
        except OSError as exc:
            raise unwritable(data_dir, exc) from exc

    @classmethod
    def _acquire(cls, data_dir: Path, url: str) -> DataDirLock:
        make_private_dir(data_dir)
        path = data_dir / LOCK_NAME
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, FILE_MODE)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = _read_holder(fd)
            os.close(fd)
            where = f" at {holder['url']} (pid {holder['pid']})" if holder else ""
            raise DataDirBusy(
                f"Another Angelia server is already running on {data_dir}{where}. "
                "Use that one, stop it first, or start this one with another --data-dir."
            ) from None
        except OSError:
            os.close(fd)
            raise
        lock = cls(fd, path)
        try:
            lock.announce(url)
        except OSError:
            lock.release()
            raise
        return lock

    def announce(self, url: str) -> None:
        """Say where this server answers (once its address is known), for a second one."""
        if self._fd is None:
            return
        os.ftruncate(self._fd, 0)
        os.pwrite(self._fd, json.dumps({"pid": os.getpid(), "url": url}).encode(), 0)

    @property
    def held(self) -> bool:
        return self._fd is not None

    def release(self) -> None:
        """Give the directory up (also done by the kernel when the process exits)."""
        if self._fd is None:
            return
        fd, self._fd = self._fd, None
        with contextlib.suppress(OSError):
            os.ftruncate(fd, 0)
        os.close(fd)


def running_server(data_dir: Path) -> str | None:
    """The URL of the server that holds ``data_dir`` now, None if none does.

    The lock being held is checked, not only its file read: a file left by a server that
    was killed names an address another program may have taken since.
    """
    try:
        fd = os.open(data_dir / LOCK_NAME, os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = _read_holder(fd)
            return str(holder["url"]) if holder else None
        return None  # nobody holds it (closing the fd lets it go)
    finally:
        os.close(fd)


def unwritable(data_dir: Path, exc: OSError) -> DataDirError:
    return DataDirError(
        f"Cannot write to the data directory {data_dir}: {exc.strerror or exc}. "
        "Free some disk space, fix its permissions, or pick another one with "
        "--data-dir / ANGELIA_DATA_DIR."
    )


def _read_holder(fd: int) -> dict[str, object] | None:
    try:
        data = json.loads(os.pread(fd, 4096, 0) or b"null")
    except (OSError, ValueError):
        return None
    if isinstance(data, dict) and isinstance(data.get("url"), str) and "pid" in data:
        return data
    return None


def make_private_dir(path: Path) -> None:
    """Create ``path`` owner-only if it is missing (an existing one is ``tighten``'s)."""
    if path.is_dir():
        return
    path.mkdir(parents=True, exist_ok=True, mode=DIR_MODE)
    path.chmod(DIR_MODE)  # mkdir's mode goes through the umask


def create_private_file(path: Path) -> None:
    """Create ``path`` empty with mode 0600 unless it exists (then leave it as it is)."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, FILE_MODE)
    except FileExistsError:
        return
    os.close(fd)


@dataclass(frozen=True)
class ModeReport:
    """What in a data directory other users could read or enter."""

    checked: int
    too_open: list[str]

    @property
    def private(self) -> bool:
        return not self.too_open


def too_open(data_dir: Path) -> ModeReport:
    """Every folder and file in ``data_dir`` (itself included) that group or other users
    can actually reach and read or enter: a path inside a folder they may not enter is
    out of their reach whatever its own mode, so it is not listed."""
    found: list[str] = []
    checked = 0
    # Each path with the bits of the classes (group 0o070, other 0o007) that reach it.
    todo: list[tuple[Path, int]] = [(data_dir, 0o077)]
    while todo:
        path, reach = todo.pop()
        try:
            mode = path.lstat().st_mode
        except OSError:
            continue
        if stat.S_ISLNK(mode):
            continue
        checked += 1
        if stat.S_IMODE(mode) & reach:
            found.append(f"{path} ({stat.S_IMODE(mode):04o})")
        if not stat.S_ISDIR(mode):
            continue
        inside = (0o070 if reach & 0o070 and mode & 0o010 else 0) | (
            0o007 if reach & 0o007 and mode & 0o001 else 0
        )
        if inside:
            todo += [(child, inside) for child in _children(data_dir, path)]
    return ModeReport(checked, sorted(found))


def tighten(data_dir: Path) -> list[str]:
    """Drop group and other bits from everything in ``data_dir``; returns what changed.

    Symlinks are left alone (and not followed): what they point at is not ours to change.
    """
    changed: list[str] = []
    for path in _walk(data_dir):
        try:
            mode = path.lstat().st_mode
        except OSError:
            continue
        if stat.S_ISLNK(mode) or not stat.S_IMODE(mode) & 0o077:
            continue
        try:
            os.chmod(path, stat.S_IMODE(mode) & 0o700)
        except OSError:
            continue
        changed.append(f"{path} ({stat.S_IMODE(mode):04o})")
    return changed


# Sessions' git worktrees: checkouts of the user's repositories whose files keep the
# modes the user's own checkout has. The folders holding them (``worktrees`` and one per
# repository in it) are private, so nobody else reaches into them; their contents are
# not the app's to change (nor worth a walk at every start).
WORKTREES_DIR = "worktrees"
# Private git dirs recording the folders outside git that sessions started in
# (``<session id>.git``): git makes their files owner-only itself (they are created
# with ``core.sharedRepository=0600``) and the folders are 0700, so their thousands of
# objects are not walked either.
SNAPSHOTS_DIR = "snapshots"


def _children(root: Path, folder: Path) -> list[Path]:
    """What is walked under ``folder``: all but the worktrees and snapshots themselves."""
    if folder.parent in (root / WORKTREES_DIR, root / SNAPSHOTS_DIR):
        return []
    try:
        return [folder / name for name in os.listdir(folder)]
    except OSError:
        return []


def _walk(root: Path) -> list[Path]:
    if not root.is_dir():
        return []
    paths: list[Path] = []
    todo = [root]
    while todo:
        path = todo.pop()
        paths.append(path)
        if path.is_dir() and not path.is_symlink():
            todo += _children(root, path)
    return paths
