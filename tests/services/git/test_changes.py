"""A session's changes as git sees the files: tool writes and shell commands alike."""

from __future__ import annotations

from pathlib import Path

import pytest

from app.errors import ValidationFailed
from app.services.git import changes, worktrees
from app.services.git.changes import FileChange
from app.services.git.repo import GitError

from .conftest import commit_all, git, refs, sh


def by_path(found: list[FileChange]) -> dict[str, FileChange]:
    return {c.path: c for c in found}


def test_worktree_changes_include_shell_commands_and_commits(repo: Path, root: Path) -> None:
    wt = worktrees.create(repo, root, "shell work")
    (wt.path / "written.txt").write_text("a\nb\n")  # what an edit tool does
    commit_all(wt.path, "add written")  # a commit made in the worktree
    sh(wt.path, "sed -i 's/two/TWO/' f.txt")
    sh(wt.path, "rm gone.txt")
    sh(wt.path, "mv old.txt new.txt && echo 'line 40' >> new.txt")
    sh(wt.path, "printf 'x\\ny\\nz\\n' > untracked.txt")

    found = by_path(changes.diff(wt.path, wt.base_commit))

    assert set(found) == {"written.txt", "f.txt", "gone.txt", "new.txt", "untracked.txt"}
    assert (found["written.txt"].status, found["written.txt"].additions) == ("created", 2)
    edited = found["f.txt"]
    assert (edited.status, edited.additions, edited.deletions) == ("edited", 1, 1)
    assert "-two\n+TWO\n" in edited.diff
    assert (found["gone.txt"].status, found["gone.txt"].deletions) == ("deleted", 1)
    moved = found["new.txt"]
    assert (moved.status, moved.old_path, moved.additions, moved.deletions) == (
        "renamed",
        "old.txt",
        1,
        0,
    )
    assert (found["untracked.txt"].status, found["untracked.txt"].additions) == ("created", 3)
    assert not any(c.binary or c.truncated for c in found.values())


def test_ignored_files_are_not_changes(repo: Path, root: Path) -> None:
    (repo / ".env").write_text("TOKEN=secret\n")
    wt = worktrees.create(repo, root, "env", copy=[".env"])
    assert wt.copied == (".env",)
    assert changes.diff(wt.path, wt.base_commit) == []


def test_snapshot_diff_sees_a_shell_change_and_leaves_the_real_index_alone(repo: Path) -> None:
    git(repo, "add", "f.txt")  # a staged-nothing index still has to stay byte for byte
    (repo / "staged.txt").write_text("staged by the user\n")
    git(repo, "add", "staged.txt")
    (repo / "scratch.txt").write_text("the user's own untracked file\n")
    index = repo / ".git" / "index"
    before = (index.read_bytes(), refs(repo), git(repo, "stash", "list"), git(repo, "status"))

    tree = changes.snapshot(repo)
    sh(repo, "sed -i 's/one/ONE/' f.txt && echo new > made-by-shell.txt")
    found = by_path(changes.diff(repo, tree))

    assert set(found) == {"f.txt", "made-by-shell.txt"}
    assert found["f.txt"].status == "edited"
    assert found["made-by-shell.txt"].status == "created"
    assert index.read_bytes() == before[0]
    assert refs(repo) == before[1]
    assert git(repo, "stash", "list") == before[2]
    assert "staged.txt" in git(repo, "diff", "--cached", "--name-only")


def test_odd_file_names(repo: Path, root: Path) -> None:
    wt = worktrees.create(repo, root, "names")
    names = ["with space.txt", "new\nline.txt", "ünïcødé ✓.txt", "tab\there.txt", '"quoted".txt']
    for name in names:
        (wt.path / name).write_text("hello\n")
    sh(wt.path, "mv f.txt 'f renamed ✓.txt'")

    found = by_path(changes.diff(wt.path, wt.base_commit))

    assert set(found) == {*names, "f renamed ✓.txt"}
    assert all(found[n].status == "created" and found[n].additions == 1 for n in names)
    assert found["f renamed ✓.txt"].old_path == "f.txt"


def test_big_and_binary_files_are_capped(repo: Path, root: Path) -> None:
    wt = worktrees.create(repo, root, "big")
    (wt.path / "generated.txt").write_text("".join(f"row {i}\n" for i in range(50_000)))
    (wt.path / "image.bin").write_bytes(b"\x89PNG\0\1\2\3" * 100)

    found = by_path(changes.diff(wt.path, wt.base_commit, max_file_bytes=4096))

    big = found["generated.txt"]
    assert big.additions == 50_000 and big.truncated
    assert len(big.diff.encode()) <= 4096 and big.diff.endswith("\n")
    image = found["image.bin"]
    assert image.binary and (image.additions, image.deletions) == (0, 0)
    assert "Binary files" in image.diff and not image.truncated


def test_a_file_turned_into_a_link_is_one_edit(repo: Path, root: Path) -> None:
    wt = worktrees.create(repo, root, "link")
    sh(wt.path, "rm f.txt && ln -s old.txt f.txt && echo more >> gone.txt")

    found = by_path(changes.diff(wt.path, wt.base_commit))

    link = found["f.txt"]
    assert (link.status, link.additions, link.deletions) == ("edited", 1, 3)
    assert "new file mode 120000" in link.diff
    assert found["gone.txt"].diff.startswith("diff --git a/gone.txt")


def test_no_changes_and_a_bad_base(repo: Path, root: Path) -> None:
    wt = worktrees.create(repo, root, "quiet")
    assert changes.diff(wt.path, wt.base_commit) == []
    with pytest.raises(ValidationFailed, match="not a commit or tree id") as bad:
        changes.diff(wt.path, "--output=/tmp/x")
    assert bad.value.status == 422
    with pytest.raises(GitError, match="no longer in the repository") as gone:
        changes.diff(wt.path, "0" * 40)
    assert gone.value.status == 409


def test_each_diff_sees_the_tree_as_it_is_now(repo: Path, root: Path) -> None:
    wt = worktrees.create(repo, root, "again")
    sh(wt.path, "echo a > a.txt && echo more >> f.txt")
    assert {c.path for c in changes.diff(wt.path, wt.base_commit)} == {"a.txt", "f.txt"}
    sh(wt.path, "rm a.txt && git checkout -q -- f.txt && echo b > b.txt")
    assert [c.path for c in changes.diff(wt.path, wt.base_commit)] == ["b.txt"]
    sh(wt.path, "rm b.txt")
    assert changes.diff(wt.path, wt.base_commit) == []


def test_a_file_force_added_after_an_earlier_diff_is_seen(repo: Path, root: Path) -> None:
    wt = worktrees.create(repo, root, "forced")
    (wt.path / ".env").write_text("TRACKED=now\n")
    assert changes.diff(wt.path, wt.base_commit) == []  # ignored, so not a change yet
    git(wt.path, "add", "-f", ".env")
    git(wt.path, "commit", "-q", "-m", "track .env on purpose")

    found = by_path(changes.diff(wt.path, wt.base_commit))

    assert set(found) == {".env"} and found[".env"].status == "created"


def test_snapshot_of_a_repository_with_no_commits(tmp_path: Path) -> None:
    fresh = tmp_path / "fresh"
    fresh.mkdir()
    git(fresh, "init", "-q", "-b", "main")
    (fresh / "there-before.txt").write_text("already here\n")
    tree = changes.snapshot(fresh)
    (fresh / "made.txt").write_text("by the session\n")

    found = changes.diff(fresh, tree)

    assert [(c.path, c.status) for c in found] == [("made.txt", "created")]
    assert not (fresh / ".git" / "index").exists()
    assert git(fresh, "status", "--porcelain") == "?? made.txt\n?? there-before.txt\n"
