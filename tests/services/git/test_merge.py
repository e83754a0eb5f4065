"""Two sessions on one repository: separate changes, a merge, a conflict that changes nothing."""

from __future__ import annotations

from pathlib import Path

import pytest

from app.errors import ValidationFailed
from app.services.git import changes, merge, worktrees
from app.services.git.merge import LocalChanges, MergeConflict
from app.services.git.repo import GitError
from app.services.git.worktrees import Worktree

from .conftest import commit_all, git, refs, sh


def everything(repo: Path) -> tuple[str, bytes, dict[str, bytes], str, str]:
    """Refs, index bytes, every file of the checkout, stashes and status."""
    files = {
        str(p.relative_to(repo)): p.read_bytes()
        for p in sorted(repo.rglob("*"))
        if p.is_file() and ".git" not in p.relative_to(repo).parts
    }
    index = (repo / ".git" / "index").read_bytes()
    return refs(repo), index, files, git(repo, "stash", "list"), git(repo, "status", "--short")


def committed_session(repo: Path, root: Path, slug: str, command: str) -> Worktree:
    """A session worktree where ``command`` ran and its result was committed."""
    wt = worktrees.create(repo, root, slug)
    sh(wt.path, command)
    merge.commit(wt.path, f"{slug}: {command}")
    return wt


def test_two_sessions_ff_then_conflict_then_resolved(repo: Path, root: Path) -> None:
    first = worktrees.create(repo, root, "first")
    second = worktrees.create(repo, root, "second")
    sh(first.path, "sed -i 's/two/first/' f.txt")
    sh(second.path, "sed -i 's/two/second/' f.txt && echo extra > second.txt")

    mine = {c.path: c.diff for c in changes.diff(first.path, first.base_commit)}
    theirs = {c.path: c.diff for c in changes.diff(second.path, second.base_commit)}
    assert set(mine) == {"f.txt"} and "+first" in mine["f.txt"] and "second" not in mine["f.txt"]
    assert set(theirs) == {"f.txt", "second.txt"} and "first" not in theirs["f.txt"]

    merge.commit(first.path, "first's change")
    done = merge.merge(repo, first.branch, "main", "ff")
    assert done.commit == git(first.path, "rev-parse", "HEAD").strip()
    assert done.previous == first.base_commit and done.checkout == repo
    assert (repo / "f.txt").read_text() == "one\nfirst\nthree\n"  # the user's checkout moved

    second_tip = merge.commit(second.path, "second's change")
    assert merge.conflicts(repo, second.branch, "main") == ["f.txt"]
    before = everything(repo)
    for strategy in ("merge", "squash"):
        with pytest.raises(MergeConflict) as conflict:
            merge.merge(repo, second.branch, "main", strategy)  # type: ignore[arg-type]
        assert conflict.value.files == ["f.txt"] and conflict.value.status == 409
        assert "nothing was changed" in conflict.value.message
    with pytest.raises(GitError, match="cannot be fast-forwarded"):
        merge.merge(repo, second.branch, "main", "ff")
    assert everything(repo) == before
    assert git(second.path, "rev-parse", "HEAD").strip() == second_tip
    assert (second.path / "f.txt").read_text() == "one\nsecond\nthree\n"

    git(second.path, "merge", "-q", "main", check=False)  # the session resolves the conflict
    (second.path / "f.txt").write_text("one\nfirst and second\nthree\n")
    commit_all(second.path, "resolve")
    assert merge.conflicts(repo, second.branch, "main") == []
    result = merge.merge(repo, second.branch, "main", "merge")
    parents = git(repo, "rev-list", "--parents", "-n1", result.commit).split()[1:]
    assert parents == [done.commit, git(second.path, "rev-parse", "HEAD").strip()]
    assert (repo / "f.txt").read_text() == "one\nfirst and second\nthree\n"
    assert (repo / "second.txt").read_text() == "extra\n"
    assert git(repo, "status", "--short") == ""


def test_merge_refused_when_the_users_checkout_has_uncommitted_work_there(
    repo: Path, root: Path
) -> None:
    wt = committed_session(repo, root, "touches f", "sed -i 's/one/session/' f.txt")
    (repo / "f.txt").write_text("the user's own edit\n")
    (repo / "other.txt").write_text("untracked, untouched\n")
    before = everything(repo)

    for strategy in ("ff", "merge", "squash"):
        with pytest.raises(LocalChanges) as refused:
            merge.merge(repo, wt.branch, "main", strategy)  # type: ignore[arg-type]
        assert refused.value.files == ["f.txt"] and refused.value.checkout == repo
        assert "f.txt" in refused.value.message and refused.value.status == 409

    assert everything(repo) == before
    assert (repo / "f.txt").read_text() == "the user's own edit\n"


def test_merge_when_the_user_has_changes_elsewhere_keeps_them(repo: Path, root: Path) -> None:
    wt = committed_session(repo, root, "elsewhere", "echo added >> old.txt")
    (repo / "f.txt").write_text("the user's own edit\n")

    merge.merge(repo, wt.branch, "main", "squash")

    assert (repo / "f.txt").read_text() == "the user's own edit\n"
    assert (repo / "old.txt").read_text().endswith("added\n")
    assert git(repo, "status", "--short") == " M f.txt\n"


def test_squash_into_a_branch_checked_out_nowhere(repo: Path, root: Path) -> None:
    git(repo, "branch", "release")
    wt = worktrees.create(repo, root, "fix", base="release")
    assert wt.base == "release"
    for i in range(3):
        sh(wt.path, f"echo fix {i} >> f.txt")
        merge.commit(wt.path, f"fix {i}")
    main_before = git(repo, "rev-parse", "main")

    result = merge.merge(repo, wt.branch, "release", "squash")

    assert result.checkout is None
    assert git(repo, "rev-parse", "release").strip() == result.commit
    assert git(repo, "rev-list", "--parents", "-n1", result.commit).split()[1:] == [wt.base_commit]
    message = git(repo, "log", "-1", "--format=%B", result.commit)
    assert "* fix 0\n* fix 1\n* fix 2" in message
    assert git(repo, "rev-parse", "main") == main_before
    with pytest.raises(GitError, match="nothing to merge"):
        merge.merge(repo, wt.branch, "release", "merge")


def test_commit_uses_the_app_identity_only_when_the_repository_has_none(
    repo: Path, root: Path
) -> None:
    wt = worktrees.create(repo, root, "who")
    sh(wt.path, "echo a > a.txt")
    first = merge.commit(wt.path, "  by the configured author\n")
    assert git(wt.path, "log", "-1", "--format=%an <%ae>|%B", first) == (
        "Ada <ada@example.test>|by the configured author\n\n"
    )
    git(repo, "config", "--unset", "user.name")
    git(repo, "config", "--unset", "user.email")
    sh(wt.path, "echo b > b.txt")
    second = merge.commit(wt.path, "by nobody in particular")
    assert git(wt.path, "log", "-1", "--format=%an <%ae>", second).strip() == (
        f"{merge.APP_NAME} <{merge.APP_EMAIL}>"
    )


def test_commit_refuses_nothing_and_bad_messages(repo: Path, root: Path) -> None:
    wt = worktrees.create(repo, root, "empty")
    with pytest.raises(GitError, match="nothing to commit"):
        merge.commit(wt.path, "nothing")
    sh(wt.path, "echo a > a.txt")
    for bad in ("", "   \n", "nul\0inside"):
        with pytest.raises(ValidationFailed) as refused:
            merge.commit(wt.path, bad)
        assert refused.value.field == "message" and refused.value.status == 422
    with pytest.raises(ValidationFailed, match="strategy"):
        merge.merge(repo, wt.branch, "main", "rebase")  # type: ignore[arg-type]


def test_ahead_behind(repo: Path, root: Path) -> None:
    wt = worktrees.create(repo, root, "count")
    for i in range(2):
        sh(wt.path, f"echo {i} > n{i}.txt")
        merge.commit(wt.path, f"n{i}")
    sh(repo, "echo main > m.txt")
    commit_all(repo, "on main")
    assert merge.ahead_behind(repo, wt.branch, "main") == (2, 1)
    assert not merge.is_merged(repo, wt.branch, "main")


def test_merge_refused_when_it_would_overwrite_an_untracked_file_of_the_user(
    repo: Path, root: Path
) -> None:
    wt = committed_session(repo, root, "adds a file", "echo from the session > notes.txt")
    (repo / "notes.txt").write_text("the user's own notes, never committed\n")
    before = everything(repo)

    with pytest.raises(LocalChanges) as refused:
        merge.merge(repo, wt.branch, "main", "ff")

    assert refused.value.files == ["notes.txt"]
    assert everything(repo) == before
