"""Finding the repository, and running git so that nothing from outside steers it."""

from __future__ import annotations

from pathlib import Path

import pytest

from app.services.git import changes, merge
from app.services.git import repo as gitrepo
from app.services.git.repo import NotARepository

from .conftest import git


def test_repo_root_from_a_subfolder_and_a_worktree(repo: Path, tmp_path: Path) -> None:
    (repo / "sub" / "deeper").mkdir(parents=True)
    assert gitrepo.repo_root(repo / "sub" / "deeper") == repo
    linked = tmp_path / "linked"
    git(repo, "worktree", "add", "-q", "-b", "other", str(linked))
    assert gitrepo.repo_root(linked) == linked
    assert gitrepo.common_dir(linked) == repo / ".git"


@pytest.mark.parametrize(
    ("make", "reason", "words"),
    [
        (lambda p: p.mkdir(), "not_a_repository", "is not inside a git repository"),
        (lambda p: None, "missing", "does not exist"),
        (lambda p: git(p.parent, "init", "-q", "--bare", p.name), "bare", "bare git repository"),
    ],
    ids=["plain folder", "missing", "bare"],
)
def test_folders_that_are_not_working_trees(
    tmp_path: Path, make: object, reason: str, words: str
) -> None:
    folder = tmp_path / "folder"
    make(folder)  # type: ignore[operator]
    with pytest.raises(NotARepository, match=words) as refused:
        gitrepo.repo_root(folder)
    assert refused.value.reason == reason and refused.value.status == 422


def test_inside_dot_git_is_not_a_working_tree(repo: Path) -> None:
    with pytest.raises(NotARepository, match=r"\.git folder") as refused:
        gitrepo.repo_root(repo / ".git" / "objects")
    assert refused.value.reason == "git_dir"


def test_git_missing(repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", str(tmp_path / "no-bin"))
    with pytest.raises(NotARepository, match="git is not installed") as refused:
        gitrepo.repo_root(repo)
    assert refused.value.reason == "git_missing" and refused.value.status == 422


def test_branch_and_head(repo: Path, tmp_path: Path) -> None:
    assert gitrepo.current_branch(repo) == "main"
    head = gitrepo.head_commit(repo)
    assert head == git(repo, "rev-parse", "HEAD").strip()
    git(repo, "checkout", "-q", "--detach")
    assert gitrepo.current_branch(repo) is None
    assert gitrepo.head_commit(repo) == head
    empty = tmp_path / "empty"
    empty.mkdir()
    git(empty, "init", "-q", "-b", "trunk")
    assert gitrepo.current_branch(empty) == "trunk"
    assert gitrepo.head_commit(empty) is None


def test_inherited_git_variables_do_not_steer_git(
    repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    decoy = tmp_path / "decoy"
    decoy.mkdir()
    git(decoy, "init", "-q", "-b", "decoy")
    monkeypatch.setenv("GIT_DIR", str(decoy / ".git"))
    monkeypatch.setenv("GIT_WORK_TREE", str(decoy))
    monkeypatch.setenv("GIT_INDEX_FILE", str(decoy / ".git" / "index"))
    monkeypatch.setenv("GIT_EXTERNAL_DIFF", "false")
    tree = changes.snapshot(repo)
    (repo / "f.txt").write_text("changed\n")

    assert gitrepo.repo_root(repo) == repo
    assert gitrepo.current_branch(repo) == "main"
    assert [c.path for c in changes.diff(repo, tree)] == ["f.txt"]
    assert not (decoy / ".git" / "index").exists()


def test_a_hook_never_runs(repo: Path) -> None:
    hook = repo / ".git" / "hooks" / "post-commit"
    hook.write_text("#!/bin/sh\ntouch hook-ran\n")
    hook.chmod(0o755)
    (repo / "a.txt").write_text("a\n")
    merge.commit(repo, "no hook")
    assert not (repo / "hook-ran").exists()
