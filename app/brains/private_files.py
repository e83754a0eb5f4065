"""Files that hand an agent what must not go on its command line.

A command line is readable by every local user (``ps``, ``/proc/<pid>/cmdline``), so a
profile's MCP servers, whose env values and headers are often tokens, reach a CLI in a
file instead: created 0600 in a fresh 0700 folder, and removed with that folder as soon
as the CLI has read it.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

__all__ = ["private_file", "write_private"]


def write_private(path: Path, text: str) -> None:
    """Write ``text`` to a new file at ``path`` that only the user can read (0600 from
    its creation, never wider); an existing file there is an error, not overwritten."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        f.write(text)


@contextmanager
def private_file(prefix: str, name: str, text: str) -> Iterator[Path]:
    """A file ``name`` holding ``text`` in a new private folder, for the ``with`` block.

    The folder (``tempfile.mkdtemp``: 0700, a name nobody can guess) goes with the file
    on leaving the block, whatever happened in it.
    """
    folder = Path(tempfile.mkdtemp(prefix=prefix))
    try:
        path = folder / name
        write_private(path, text)
        yield path
    finally:
        shutil.rmtree(folder, ignore_errors=True)
