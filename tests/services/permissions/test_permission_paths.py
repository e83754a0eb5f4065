"""Which paths an approval card calls outside the session's folder."""

from __future__ import annotations

from pathlib import Path

import pytest

from app.services.permissions.permissions import outside_folders


@pytest.mark.parametrize(
    ("path", "outside"),
    [
        ("{p}/made_by_fake.txt", False),
        ("{p}", False),
        ("made_by_fake.txt", False),  # relative: to the working folder
        ("src/../notes.txt", False),
        ("{p}/../elsewhere.txt", True),
        ("{p}-other/notes.txt", True),  # a sibling sharing the name's start
        ("/etc/hosts", True),
        ("{link}/x.txt", False),  # the project reached through a symbolic link
    ],
)
def test_outside_the_folder(tmp_path: Path, path: str, outside: bool) -> None:
    project = tmp_path / "project"
    project.mkdir()
    (tmp_path / "link").symlink_to(project)
    named = path.format(p=project, link=tmp_path / "link")
    assert outside_folders(named, [str(project)]) is outside


def test_no_folder_known_is_never_outside() -> None:
    assert outside_folders("/etc/hosts", []) is False
