"""Real repositories in tmp_path, driven by the real ``git``; the user's config never leaks in."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Mapping
from pathlib import Path

import pytest


def git(cwd: Path, *args: str, check: bool = True) -> str:
    """Run git as the user would in a shell (stdout as text)."""
    done = subprocess.run(
        ["git", "-C", str(cwd), *args], capture_output=True, text=True, check=False
    )
    if check and done.returncode != 0:
        raise AssertionError(f"git {' '.join(args)} failed: {done.stderr}")
    return done.stdout


def sh(cwd: Path, command: str) -> None:
    """A shell command, as an agent's Bash tool would run it."""
    subprocess.run(["sh", "-c", command], cwd=cwd, check=True)


def refs(repo: Path) -> str:
    return git(repo, "for-each-ref", "--format=%(refname) %(objectname)")


def commit_all(cwd: Path, message: str) -> str:
    git(cwd, "add", "-A")
    git(cwd, "commit", "-q", "-m", message)
    return git(cwd, "rev-parse", "HEAD").strip()


def init_repo(folder: Path, files: Mapping[str, str] | None = None) -> Path:
    """``folder`` as a repository on ``main`` with an author of its own; ``files`` (path →
    text), when given, are written and committed as "start"."""
    git(folder, "init", "-q", "-b", "main")
    git(folder, "config", "user.name", "Ada")
    git(folder, "config", "user.email", "ada@example.test")
    for name, content in (files or {}).items():
        (folder / name).write_text(content)
    if files:
        commit_all(folder, "start")
    return folder


@pytest.fixture(autouse=True)
def _own_git_config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Git reads neither the machine's nor the user's config, and no GIT_* from outside."""
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    for name in list(os.environ):
        if name.startswith("GIT_") and name != "GIT_CONFIG_NOSYSTEM":
            monkeypatch.delenv(name)


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A repository on ``main`` with a few committed files and an author."""
    path = tmp_path / "repo"
    path.mkdir()
    return init_repo(
        path,
        {
            "f.txt": "one\ntwo\nthree\n",
            "gone.txt": "to be removed\n",
            "old.txt": "".join(f"line {i}\n" for i in range(40)),
            ".gitignore": ".env\n",
        },
    )


@pytest.fixture
def root(tmp_path: Path) -> Path:
    """The app's worktrees folder (``<data_dir>/worktrees``)."""
    return tmp_path / "data" / "worktrees"
