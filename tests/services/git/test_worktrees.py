"""Making and discarding a session's worktree: only its folder and its branch, ever."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from app.errors import ValidationFailed
from app.services.git import merge, worktrees
from app.services.git.repo import GitError
from app.services.git.worktrees import UnsafeToDiscard, Worktree

from .conftest import commit_all, git, init_repo, refs, sh


def repo_state(repo: Path) -> tuple[str, str, str]:
    return refs(repo), git(repo, "stash", "list"), git(repo, "worktree", "list", "--porcelain")


def test_create_names_places_and_tracks(repo: Path, root: Path) -> None:
    first = worktrees.create(repo, root, "Fix the login bug!")
    again = worktrees.create(repo, root, "fix the login bug")

    assert first.branch == "angelia/fix-the-login-bug"
    assert again.branch == "angelia/fix-the-login-bug-2"
    assert first.path.parent == again.path.parent
    assert first.path.parent.parent == root.resolve()
    assert first.path.parent.name.startswith("repo-")
    assert (first.base, first.base_commit) == ("main", git(repo, "rev-parse", "main").strip())
    assert (first.path / "f.txt").read_text() == "one\ntwo\nthree\n"
    assert git(first.path, "rev-parse", "--abbrev-ref", "@{upstream}").strip() == "main"
    assert git(repo, "status", "--short") == ""  # the user's checkout is untouched


def test_two_repositories_with_the_same_name_never_share_a_folder(
    tmp_path: Path, repo: Path, root: Path
) -> None:
    other = tmp_path / "elsewhere" / "repo"
    other.mkdir(parents=True)
    init_repo(other)
    sh(other, "echo x > x.txt")
    commit_all(other, "x")

    a = worktrees.create(repo, root, "same")
    b = worktrees.create(other, root, "same")

    assert a.path.parent != b.path.parent
    assert a.branch == b.branch == "angelia/same"


def test_create_refusals(tmp_path: Path, repo: Path, root: Path) -> None:
    with pytest.raises(ValidationFailed, match="no branch 'nope'"):
        worktrees.create(repo, root, "x", base="nope")
    git(repo, "checkout", "-q", "--detach")
    with pytest.raises(ValidationFailed, match="detached HEAD"):
        worktrees.create(repo, root, "x")
    with pytest.raises(GitError, match="is inside"):
        worktrees.create(repo, repo / "worktrees", "x", base="main")
    with pytest.raises(GitError, match="is inside"):
        worktrees.create(repo, repo / ".git" / "wt", "x", base="main")
    empty = tmp_path / "empty"
    empty.mkdir()
    git(empty, "init", "-q", "-b", "main")
    with pytest.raises(ValidationFailed, match="no branch 'main' with commits"):
        worktrees.create(empty, root, "x")


def test_copy_only_ignored_files_that_stay_inside(tmp_path: Path, repo: Path, root: Path) -> None:
    outside = tmp_path / "secret.txt"
    outside.write_text("not the repository's\n")
    (repo / ".gitignore").write_text(".env\nconf/\nlink-out\n")
    commit_all(repo, "ignore more")
    (repo / ".env").write_text("KEY=1\n")
    os.chmod(repo / ".env", 0o600)
    (repo / "conf").mkdir()
    (repo / "conf" / "local.toml").write_text("x = 1\n")
    (repo / "link-out").symlink_to(outside)
    (repo / "plain.txt").write_text("untracked, not ignored\n")

    wt = worktrees.create(
        repo,
        root,
        "copy",
        copy=[".env", "conf", "link-out", "plain.txt", "missing", "../secret.txt", "/etc/passwd"],
    )

    assert wt.copied == (".env", "conf")
    assert (wt.path / ".env").read_text() == "KEY=1\n"
    assert (wt.path / ".env").stat().st_mode & 0o777 == 0o600
    assert (wt.path / "conf" / "local.toml").read_text() == "x = 1\n"
    reasons = dict(wt.skipped)
    assert set(reasons) == {"link-out", "plain.txt", "missing", "../secret.txt", "/etc/passwd"}
    assert "outside the repository" in reasons["link-out"]
    assert ".gitignore" in reasons["plain.txt"]
    assert not os.path.lexists(wt.path / "link-out")
    assert not (wt.path / "plain.txt").exists()


def test_copy_never_writes_through_a_tracked_link(tmp_path: Path, repo: Path, root: Path) -> None:
    target = tmp_path / "target"
    target.mkdir()
    (repo / "dir").symlink_to(target)
    (repo / ".gitignore").write_text(".env\ndir/.env\n")
    commit_all(repo, "a tracked link to a folder")
    (target / ".env").write_text("lives outside\n")

    wt = worktrees.create(repo, root, "through", copy=["dir/.env"])

    assert wt.copied == ()
    assert dict(wt.skipped) == {"dir/.env": "it is inside a folder that is a link"}
    assert list(target.iterdir()) == [target / ".env"]


def test_discard_removes_only_its_folder_and_branch(tmp_path: Path, repo: Path, root: Path) -> None:
    git(repo, "branch", "feature")
    sh(repo, "echo stashed >> f.txt")
    git(repo, "stash", "-q")
    users_own = tmp_path / "users-own-worktree"
    git(repo, "worktree", "add", "-q", str(users_own), "feature")
    gone = tmp_path / "users-gone-worktree"
    git(repo, "worktree", "add", "-q", "-b", "stale", str(gone))
    sh(tmp_path, f"rm -rf '{gone}'")  # a stale worktree of the user's: theirs to prune
    keep = worktrees.create(repo, root, "keep")
    before = repo_state(repo)
    wt = worktrees.create(repo, root, "drop")
    (wt.path / ".env").write_text("ignored, copied in\n")

    worktrees.remove(repo, root, wt)

    assert repo_state(repo) == before
    assert not wt.path.exists()
    assert keep.path.is_dir() and users_own.is_dir()
    assert "prunable" in git(repo, "worktree", "list", "--porcelain")


def test_discard_refuses_unmerged_or_dirty_unless_confirmed(repo: Path, root: Path) -> None:
    wt = worktrees.create(repo, root, "work")
    sh(wt.path, "echo a > a.txt")
    merge.commit(wt.path, "a")
    sh(wt.path, "echo dirty >> f.txt && echo new > new.txt")
    before = repo_state(repo)

    with pytest.raises(UnsafeToDiscard) as refused:
        worktrees.remove(repo, root, wt)

    assert refused.value.unmerged == 1
    assert sorted(refused.value.dirty) == ["f.txt", "new.txt"]
    assert refused.value.status == 409 and "confirm" in refused.value.message
    assert repo_state(repo) == before and (wt.path / "new.txt").is_file()

    worktrees.remove(repo, root, wt, confirm=True)
    assert not wt.path.exists()
    assert git(repo, "branch", "--list", wt.branch) == ""
    assert not root.resolve().joinpath(wt.path.parent.name).exists()


def test_discard_after_a_squash_merge_needs_no_confirmation(repo: Path, root: Path) -> None:
    wt = worktrees.create(repo, root, "squashed")
    sh(wt.path, "echo a > a.txt")
    merge.commit(wt.path, "a")
    merge.merge(repo, wt.branch, "main", "squash")

    worktrees.remove(repo, root, wt)

    assert git(repo, "branch", "--list", wt.branch) == ""


def test_discard_refuses_what_is_not_a_session_worktree(
    tmp_path: Path, repo: Path, root: Path
) -> None:
    wt = worktrees.create(repo, root, "real")
    users_own = tmp_path / "users-own"
    git(repo, "worktree", "add", "-q", "-b", "angelia/users", str(users_own))
    stray = wt.path.parent / "not-a-worktree"
    stray.mkdir()
    (stray / "keep.txt").write_text("keep\n")
    before = repo_state(repo)
    cases = [
        (Worktree(users_own, "angelia/users", "main", wt.base_commit), "not a session worktree"),
        (Worktree(repo, "main", "main", wt.base_commit), "not a session worktree"),
        (Worktree(stray, "angelia/x", "main", wt.base_commit), "not a worktree of"),
        (Worktree(wt.path, "feature", "main", wt.base_commit), "not a session branch"),
        (Worktree(wt.path, "angelia/other", "main", wt.base_commit), "not angelia/other"),
        (Worktree(Path("relative"), wt.branch, "main", wt.base_commit), "not a session worktree"),
    ]
    for fake, message in cases:
        with pytest.raises(GitError, match=message):
            worktrees.remove(repo, root, fake, confirm=True)
    assert repo_state(repo) == before
    assert (stray / "keep.txt").is_file() and users_own.is_dir() and wt.path.is_dir()


def test_discard_when_the_folder_is_already_gone(repo: Path, root: Path) -> None:
    wt = worktrees.create(repo, root, "vanished")
    sh(wt.path.parent, f"rm -rf '{wt.path.name}'")

    worktrees.remove(repo, root, wt)

    assert str(wt.path) not in git(repo, "worktree", "list", "--porcelain")
    assert git(repo, "branch", "--list", wt.branch) == ""


def test_copy_never_writes_through_a_link_the_worktree_has(
    tmp_path: Path, repo: Path, root: Path
) -> None:
    target = tmp_path / "target"
    target.mkdir()
    (repo / "cfg").symlink_to(target)
    (repo / ".gitignore").write_text(".env\ncfg/.env\n")
    commit_all(repo, "cfg is a link in the commit")
    sh(repo, "rm cfg && mkdir cfg && echo KEY=1 > cfg/.env")  # a real folder in the checkout

    wt = worktrees.create(repo, root, "through the worktree", copy=["cfg/.env"])

    assert dict(wt.skipped) == {"cfg/.env": "its folder in the worktree is a link"}
    assert list(target.iterdir()) == []
