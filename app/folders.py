"""Which folder a profile may work in: absolute, existing, and neither the system's nor
the home folder itself.

The folder is where the agent reads, edits and runs commands (and, in ``acceptEdits``,
edits without asking), so a folder the whole machine depends on is refused. The check
runs on the path as typed and again after following links: ``/proc/self`` is refused
before it becomes the server's own ``/proc/<pid>``, and a link into ``/etc`` is refused
for where it leads.
"""

from __future__ import annotations

import os
from pathlib import Path

# PATH_MAX on Linux: the kernel refuses longer paths anyway.
MAX_CHARS = 4096
# Refused themselves; a project folder below most of them is fine (/usr/local/src/x).
SYSTEM_FOLDERS = frozenset(
    {
        "/",
        "/bin",
        "/boot",
        "/dev",
        "/etc",
        "/home",
        "/lib",
        "/lib32",
        "/lib64",
        "/libx32",
        "/media",
        "/mnt",
        "/opt",
        "/proc",
        "/root",
        "/run",
        "/sbin",
        "/snap",
        "/srv",
        "/sys",
        "/tmp",
        "/usr",
        "/usr/bin",
        "/usr/lib",
        "/usr/local",
        "/usr/sbin",
        "/usr/share",
        "/var",
        "/var/lib",
        "/var/log",
        "/var/tmp",
        # macOS
        "/Applications",
        "/Library",
        "/System",
        "/Users",
        "/Volumes",
        "/private",
        "/private/etc",
        "/private/tmp",
        "/private/var",
    }
)
# The kernel's own file systems: nothing below them is a project.
KERNEL_FOLDERS = ("/proc", "/sys", "/dev")


def check_folder(text: str) -> str:
    """The folder as a profile stores it (links followed); ValueError says why it cannot be."""
    if len(text) > MAX_CHARS:
        raise ValueError(
            f"is {len(text):,} characters long; a folder path has at most {MAX_CHARS:,}"
        )
    if "\0" in text:
        raise ValueError("contains a NUL character, which no path can hold")
    try:
        path = Path(text).expanduser()
    except RuntimeError:
        user = text.split("/", 1)[0]
        raise ValueError(
            f"{text}: there is no user {user[1:]!r} whose home {user} could be"
        ) from None
    if not path.is_absolute():
        raise ValueError("must be an absolute path")
    _refuse_reserved(Path(os.path.normpath(path)), text)
    try:
        if not path.is_dir():
            raise ValueError(f"{text} does not exist or is not a directory")
        resolved = path.resolve(strict=True)
    except OSError as exc:
        raise ValueError(f"{text} cannot be used: {(exc.strerror or str(exc)).lower()}") from None
    _refuse_reserved(resolved, text)
    return str(resolved)


def _refuse_reserved(path: Path, typed: str) -> None:
    shown = str(path)
    where = typed if shown in (typed, typed.rstrip("/")) else f"{typed} (that is {shown})"
    if shown in SYSTEM_FOLDERS:
        raise ValueError(
            f"{where} is a system folder; choose a project folder: an agent working here "
            "could read or change what the whole machine runs on"
        )
    for kernel in KERNEL_FOLDERS:
        if shown.startswith(kernel + "/"):
            raise ValueError(
                f"{where} is inside {kernel}, which belongs to the kernel, not a project"
            )
    if shown in _homes():
        raise ValueError(
            f"{where} is your home folder itself; choose a project folder inside it: the home "
            "folder holds your shell's start-up files, SSH keys and credentials"
        )


def _homes() -> set[str]:
    try:
        home = Path.home()
    except RuntimeError:  # no HOME and no password entry: there is no home to protect
        return set()
    return {os.path.normpath(home), str(home.resolve())}
