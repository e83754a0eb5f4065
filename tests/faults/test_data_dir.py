"""A data dir that cannot be written at start: a clear message, exit code 1, no traceback.

Read-only and full file systems are real here, not simulated: each case runs ``angelia
serve`` inside a new user + mount namespace (``unshare -rm``) on a small tmpfs that is
remounted read-only or filled up. Without user namespaces those cases are skipped; the
"data dir is a file" case needs nothing special.
"""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys
from functools import cache
from pathlib import Path

import pytest

from app.db.engine import open_database
from tests.conftest import TOKEN
from tests.security._support import REPO, free_port


@cache
def mount_namespaces_work() -> bool:
    if shutil.which("unshare") is None:
        return False
    probe = subprocess.run(["unshare", "-rm", "true"], capture_output=True, timeout=10)
    return probe.returncode == 0


def serve_command(data_dir: Path) -> str:
    argv = [sys.executable, "-m", "app.cli", "serve", "--data-dir", str(data_dir)]
    argv += ["--port", str(free_port()), "--no-browser"]
    return shlex.join(argv)


def run_serve(script: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    """Run ``script`` (which ends by starting the server) in its own mount namespace."""
    if not mount_namespaces_work():
        pytest.skip("unshare -rm does not work here (no unprivileged user namespaces)")
    env = {**os.environ, "ANGELIA_TOKEN": TOKEN}
    env.pop("ANGELIA_DATA_DIR", None)
    return subprocess.run(
        ["unshare", "-rm", "sh", "-euc", script],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def assert_clean_failure(result: subprocess.CompletedProcess[str], *phrases: str) -> None:
    out = result.stdout + result.stderr
    assert result.returncode == 1, out
    assert "Traceback" not in out, out
    # Only the line that makes an open data dir private may come before the error.
    before, found, _ = result.stderr.partition("angelia: ")
    assert found and before in ("", *_tightened(before)), out
    for phrase in phrases:
        assert phrase in result.stderr, out
    assert "--data-dir" in result.stderr or "Check free disk space" in result.stderr, out


def _tightened(text: str) -> list[str]:
    return [text] if text.startswith("Made ") and text.count("\n") == 1 else []


def test_read_only_data_dir(tmp_path: Path) -> None:
    mnt = tmp_path / "mnt"
    mnt.mkdir()
    script = f"""
        mount -t tmpfs -o size=1m tmpfs {mnt}
        mkdir {mnt}/data
        mount -o remount,ro {mnt}
        exec {serve_command(mnt / "data")}
    """
    assert_clean_failure(run_serve(script), "Cannot write to the data directory", "Read-only")


def test_read_only_data_dir_with_an_existing_database(tmp_path: Path) -> None:
    """A database from an earlier run, then the directory becomes read-only."""
    data = tmp_path / "data"
    open_database(data).dispose()
    assert (data / "angelia.db").exists()
    script = f"""
        mount --bind {data} {data}
        mount -o remount,ro,bind {data}
        exec {serve_command(data)}
    """
    assert_clean_failure(run_serve(script), "Read-only")


def test_missing_data_dir_under_a_read_only_parent(tmp_path: Path) -> None:
    mnt = tmp_path / "mnt"
    mnt.mkdir()
    script = f"""
        mount -t tmpfs -o size=1m,mode=0755 tmpfs {mnt}
        mount -o remount,ro {mnt}
        exec {serve_command(mnt / "new" / "data")}
    """
    assert_clean_failure(run_serve(script), "Read-only")


def test_full_disk(tmp_path: Path) -> None:
    mnt = tmp_path / "mnt"
    mnt.mkdir()
    script = f"""
        mount -t tmpfs -o size=64k tmpfs {mnt}
        mkdir {mnt}/data
        head -c 1048576 /dev/zero > {mnt}/fill 2>/dev/null || true
        exec {serve_command(mnt / "data")}
    """
    assert_clean_failure(run_serve(script), "No space left on device")


def test_nearly_full_disk_fails_in_the_database(tmp_path: Path) -> None:
    """Room for the write probe but not for the schema: SQLite's own error, still no
    traceback."""
    mnt = tmp_path / "mnt"
    mnt.mkdir()
    script = f"""
        mount -t tmpfs -o size=64k tmpfs {mnt}
        mkdir {mnt}/data
        head -c 1048576 /dev/zero > {mnt}/fill 2>/dev/null || true
        truncate -s 40k {mnt}/fill
        exec {serve_command(mnt / "data")}
    """
    assert_clean_failure(run_serve(script), "Cannot open or upgrade the database")


def test_data_dir_that_is_a_file(tmp_path: Path) -> None:
    path = tmp_path / "not-a-dir"
    path.write_text("x")
    env = {**os.environ, "ANGELIA_TOKEN": TOKEN}
    result = subprocess.run(
        shlex.split(serve_command(path)),
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert_clean_failure(result, "Cannot write to the data directory")
