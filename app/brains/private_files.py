"""Files that hand an agent what must not go on its command line.

A command line is readable by every local user (``ps``, ``/proc/<pid>/cmdline``), so a
profile's MCP servers, whose env values and headers are often tokens, reach a CLI in a
file instead: created 0600 in a fresh 0700 folder, and removed with that folder as soon
as the CLI has read it.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from app.private import write_private

__all__ = ["private_file", "write_private"]


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
