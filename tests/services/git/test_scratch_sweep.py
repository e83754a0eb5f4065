"""Scratch index folders left by a process that was killed outright are removed by the
next one; nothing else in the temp folder is touched."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from app.services.git.scratch import PREFIX, sweep_stale


def dead_pid() -> int:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


def test_only_folders_of_dead_processes_of_this_user_are_removed(tmp_path: Path) -> None:
    gone = dead_pid()
    stale = tmp_path / f"{PREFIX}{gone}-abc123"
    stale.mkdir()
    (stale / "0123.index").write_bytes(b"DIRC")
    live = tmp_path / f"{PREFIX}{os.getpid()}-def456"
    live.mkdir()
    older = tmp_path / f"{PREFIX}k2j_x9q1"  # an older name, without a pid: left alone
    older.mkdir()
    a_file = tmp_path / f"{PREFIX}{gone}-file"
    a_file.write_text("not a folder")
    elsewhere = tmp_path / "users-own"
    elsewhere.mkdir()
    (elsewhere / "keep.txt").write_text("mine")
    link = tmp_path / f"{PREFIX}{gone}-link"
    link.symlink_to(elsewhere, target_is_directory=True)
    huge = tmp_path / f"{PREFIX}{10**30}-zz"
    huge.mkdir()

    assert sweep_stale(tmp_path) == [stale]

    assert not stale.exists()
    assert live.is_dir() and older.is_dir() and huge.is_dir()
    assert a_file.read_text() == "not a folder"
    assert link.is_symlink() and (elsewhere / "keep.txt").read_text() == "mine"
    assert sweep_stale(tmp_path) == []
