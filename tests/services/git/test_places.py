"""A worktree's recorded git dir: checked against its ``.git`` file and its admin folder's
back-pointers, and a commit through it that moves only the session's own branch."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from app.services.git import merge, worktrees
from app.services.git.repo import (
    GitError,
    GitPlace,
    WorktreeChanged,
    uncommitted,
    verify_worktree,
    worktree_admin_dir,
)

from .conftest import git, refs


def made(repo: Path, root: Path) -> GitPlace:
    wt = worktrees.create(repo, root, "placed")
    admin = worktree_admin_dir(Path(os.path.realpath(repo / ".git")), wt.path)
    assert admin is not None and admin.parent.name == "worktrees"
    return GitPlace(admin, wt.path)


def test_a_fresh_worktree_passes_and_each_re_pointing_is_refused(repo: Path, root: Path) -> None:
    place = made(repo, root)
    verify_worktree(place)
    dot_git = place.work_tree / ".git"
    pointer = dot_git.read_text()

    dot_git.write_text(f"gitdir: {repo / '.git'}\n")
    with pytest.raises(WorktreeChanged, match=r"it points to .*\.git instead of"):
        verify_worktree(place)

    dot_git.unlink()
    dot_git.symlink_to(place.git_dir)
    with pytest.raises(WorktreeChanged, match="no longer the file"):
        verify_worktree(place)
    dot_git.unlink()
    dot_git.write_text(pointer)

    back = place.git_dir / "gitdir"
    kept = back.read_text()
    back.write_text(f"{repo}/.git\n")
    with pytest.raises(WorktreeChanged, match="admin folder .* names"):
        verify_worktree(place)
    back.write_text(kept)

    (place.git_dir / "commondir").write_text(str(place.work_tree) + "\n")
    with pytest.raises(WorktreeChanged, match="its repository is"):
        verify_worktree(place)


def test_git_on_a_recorded_place_never_reads_a_planted_dot_git(repo: Path, root: Path) -> None:
    place = made(repo, root)
    (place.work_tree / "new.txt").write_text("the agent's\n")
    # The agent swaps the .git file for a repository of its own, with changes of its own.
    (place.work_tree / ".git").unlink()
    git(place.work_tree, "init", "-q")
    assert uncommitted(place) == ["new.txt"]


def test_a_commit_moves_only_the_sessions_branch(repo: Path, root: Path) -> None:
    place = made(repo, root)
    branch = "angelia/placed"
    (place.work_tree / "a.txt").write_text("a\n")
    sha = merge.commit(place, "add a", branch=branch)
    assert git(repo, "rev-parse", branch).strip() == sha
    assert git(repo, "log", "-1", "--format=%B", sha) == "add a\n\n"

    # HEAD of the worktree pointed at the user's branch: refused, nothing moved.
    git(place.work_tree, "symbolic-ref", "HEAD", "refs/heads/main")
    (place.work_tree / "b.txt").write_text("b\n")
    before = refs(repo)
    with pytest.raises(GitError, match="has main checked out, not angelia/placed"):
        merge.commit(place, "onto main?", branch=branch)
    assert refs(repo) == before
