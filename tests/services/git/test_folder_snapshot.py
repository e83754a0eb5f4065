"""The bounded walk that decides whether a folder outside git is snapshotted, and the
snapshot itself, on real folders with real git."""

from __future__ import annotations

import os
import stat
from pathlib import Path

from app.services.git import folder_snapshot
from app.services.git.changes import diff
from app.services.git.folder_snapshot import Limits, Walked, walk
from app.services.git.repo import GitPlace


def test_the_walk_counts_files_without_following_links_or_entering_skipped_folders(
    tmp_path: Path,
) -> None:
    folder = tmp_path / "folder"
    (folder / "sub").mkdir(parents=True)
    (folder / "a.txt").write_text("12345")
    (folder / "sub" / "b.txt").write_text("123")
    outside = tmp_path / "outside"
    outside.mkdir()
    for i in range(50):
        (outside / f"{i}.txt").write_text("x" * 100)
    (folder / "out").symlink_to(outside)  # counted as one entry, never followed
    (folder / "data").mkdir()
    (folder / "data" / "db").write_text("x" * 1000)
    (folder / ".git").mkdir()
    (folder / ".git" / "HEAD").write_text("x" * 1000)

    assert walk(folder, folder / "data") == Walked(3, 8)
    assert walk(folder, folder / "data", Limits(files=2)) == Walked(3, 8, "files")
    assert walk(folder, folder / "data", Limits(bytes=7)) == Walked(3, 8, "bytes")
    assert walk(folder, None, Limits(bytes=7)).files == 4
    assert walk(folder, None, Limits(seconds=0)).over == "time"
    assert walk(tmp_path / "missing").over == "unreadable"


def test_the_reason_is_said_in_plain_words() -> None:
    assert Walked(20_001, 10, "files").too_big() == (
        "This folder is too big to snapshot (more than 20,000 files) — only the agent's "
        "own edits are listed."
    )
    assert "(5 files, over 200 MiB)" in Walked(5, 300 << 20, "bytes").too_big()
    assert "has grown too big to compare" in Walked(5, 300 << 20, "bytes").too_big(grown=True)


def test_a_snapshot_is_private_and_leaves_out_the_data_dir_by_its_literal_name(
    tmp_path: Path,
) -> None:
    folder = tmp_path / "folder"
    folder.mkdir()
    (folder / "keep.txt").write_text("keep\n")
    # A data dir whose name is a pattern: only that folder is left out, not "[a]x".
    data = folder / "[a] x*"
    data.mkdir()
    (data / "db").write_text("db\n")
    (folder / "a x*").mkdir()
    (folder / "a x*" / "other.txt").write_text("other\n")
    before = sorted(os.listdir(folder))

    taken = folder_snapshot.take(folder, data, "s1")
    assert taken.git_dir is not None and taken.tree is not None and taken.note is None
    assert stat.S_IMODE(taken.git_dir.stat().st_mode) == 0o700
    assert not any(
        stat.S_IMODE(p.stat().st_mode) & 0o077 for p in taken.git_dir.rglob("*") if p.is_file()
    )
    assert sorted(os.listdir(folder)) == before
    place = GitPlace(taken.git_dir, folder)
    assert folder_snapshot.is_private(place)

    (folder / "keep.txt").unlink()
    (data / "db").write_text("changed\n")
    (folder / "a x*" / "other.txt").write_text("changed\n")
    found = {c.path: c.status for c in diff(place, taken.tree)}
    assert found == {"a x*/other.txt": "edited", "keep.txt": "deleted"}

    folder_snapshot.remove(data, "s1")
    assert not taken.git_dir.exists()
