"""Disk hygiene: each session worktree's state and size, and forgetting vanished ones."""

from __future__ import annotations

from pathlib import Path

from app.services.git import inventory, merge, worktrees

from .conftest import commit_all, git, sh


def test_states_of_worktrees_under_the_root(repo: Path, root: Path) -> None:
    merged = worktrees.create(repo, root, "merged")
    sh(merged.path, "echo m > m.txt")
    merge.commit(merged.path, "m")
    merge.merge(repo, merged.branch, "main", "squash")
    unmerged = worktrees.create(repo, root, "unmerged")
    sh(unmerged.path, "echo u > u.txt")
    merge.commit(unmerged.path, "u")
    dirty = worktrees.create(repo, root, "dirty")
    sh(dirty.path, "head -c 200000 /dev/zero > big.bin")
    worktrees.create(repo, root, "orphan")  # its session is gone
    sh(repo, "echo later > later.txt")
    commit_all(repo, "main moves on")
    stray = merged.path.parent / "stray"
    stray.mkdir()
    (stray / "left.txt").write_text("left behind\n")

    found = {
        s.path.name: s
        for s in inventory.list_worktrees(root, [merged.path, unmerged.path, dirty.path])
    }

    assert {name: s.state for name, s in found.items()} == {
        "merged": "merged",
        "unmerged": "unmerged",
        "dirty": "dirty",
        "orphan": "orphaned",
        "stray": "stray",
    }
    assert found["merged"].merged and (found["merged"].ahead, found["merged"].behind) == (1, 2)
    assert (found["unmerged"].ahead, found["unmerged"].behind) == (1, 1)
    assert found["dirty"].dirty_files == 1
    assert found["dirty"].size_bytes >= found["merged"].size_bytes + 200_000
    assert found["orphan"].orphaned and found["orphan"].base == "main"
    assert found["unmerged"].repo == repo and found["stray"].repo is None
    assert all(s.branch == f"angelia/{n}" for n, s in found.items() if n != "stray")
    assert found["stray"].size_bytes > 0
    # The shared object store is not counted: a worktree is its files, not the history.
    assert found["merged"].size_bytes < inventory.size_on_disk(repo / ".git") + 200_000


def test_state_of_one_worktree(repo: Path, root: Path) -> None:
    wt = worktrees.create(repo, root, "one")
    got = inventory.state(repo, wt.path)
    assert (got.state, got.base, got.ahead, got.behind) == ("merged", "main", 0, 0)
    sh(wt.path, "echo x >> f.txt")
    assert inventory.state(repo, wt.path).state == "dirty"
    assert inventory.state(repo, wt.path, orphaned=True).state == "orphaned"


def test_a_renamed_file_counts_once_as_on_the_changes_tab(repo: Path, root: Path) -> None:
    # An agent's `mv` leaves a deleted file and a new one to `git status`: one change.
    wt = worktrees.create(repo, root, "moved")
    sh(wt.path, "mv f.txt g.txt")
    got = inventory.state(repo, wt.path)
    assert (got.state, got.dirty_files) == ("dirty", 1)


def test_prune_forgets_only_vanished_session_worktrees(
    tmp_path: Path, repo: Path, root: Path
) -> None:
    kept = worktrees.create(repo, root, "kept")
    vanished = worktrees.create(repo, root, "vanished")
    users_gone = tmp_path / "users-gone"
    git(repo, "worktree", "add", "-q", "-b", "users", str(users_gone))
    sh(tmp_path, f"rm -rf '{users_gone}' '{vanished.path}'")

    assert inventory.prune(repo, root) == [vanished.path]

    listed = git(repo, "worktree", "list", "--porcelain")
    assert str(vanished.path) not in listed
    assert str(users_gone) in listed and str(kept.path) in listed
    assert git(repo, "branch", "--list", vanished.branch).strip() == vanished.branch
