"""Reading a commented line from a diff in git's own format and from the session's folder,
without following a path out of that folder."""

from __future__ import annotations

from pathlib import Path

import pytest

from app.errors import ValidationFailed
from app.services.review.comments import locate

GIT_DIFF = (
    "diff --git a/f.txt b/f.txt\n"
    "index 1111111..2222222 100644\n"
    "--- a/f.txt\n"
    "+++ b/f.txt\n"
    "@@ -8,3 +8,3 @@ def top():\n"
    " keep\n"
    "-old end\n"
    "\\ No newline at end of file\n"
    "+new end\r\n"
)


def test_lines_are_numbered_from_the_hunk_headers(tmp_path: Path) -> None:
    where = (str(tmp_path / "gone"), {"f.txt": GIT_DIFF})
    # No file on disk: the new side comes from the diff, the old side always does.
    assert locate(where, "f.txt", 9, "old").quote == "old end"
    assert locate(where, "f.txt", 8, "old").quote == "keep"
    assert locate(where, "f.txt", 9, "new").quote == "new end"
    with pytest.raises(ValidationFailed, match="no line 10"):
        locate(where, "f.txt", 10, "old")


def test_the_new_side_is_the_file_on_disk(tmp_path: Path) -> None:
    (tmp_path / "f.txt").write_text("one\ntwo\n" + "x" * 600 + "\n")
    where = (str(tmp_path), {"f.txt": GIT_DIFF})
    assert locate(where, "f.txt", 2, "new").quote == "two"
    long = locate(where, "f.txt", 3, "new").quote
    assert len(long) == 500 and long.endswith("…")
    with pytest.raises(ValidationFailed, match="no line 4"):
        locate(where, "f.txt", 4, "new")


def test_a_link_out_of_the_folder_is_not_followed(tmp_path: Path) -> None:
    outside = tmp_path / "secret.txt"
    outside.write_text("password\n")
    folder = tmp_path / "work"
    folder.mkdir()
    (folder / "f.txt").symlink_to(outside)
    where = (str(folder), {"f.txt": GIT_DIFF})
    # Read from the diff instead: its line 1 is not in it.
    with pytest.raises(ValidationFailed, match="no line 1 "):
        locate(where, "f.txt", 1, "new")
    assert locate(where, "f.txt", 9, "new").quote == "new end"
