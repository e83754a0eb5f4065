"""Files only this user may read, for what must not sit where other local users look.

Other local users read every process's command line and every world-readable file, so
secrets (MCP tokens, single-use sign-in links) go into files created 0600 from the first
byte: never widened later, never written through a link someone planted, never over a
file that is already there.
"""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["write_private"]


def write_private(path: Path, text: str) -> None:
    """Write ``text`` to a new file at ``path`` that only the user can read (0600 from
    its creation, never wider); an existing file there is an error, not overwritten."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        f.write(text)
