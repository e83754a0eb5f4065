"""Merges into a checked-out branch whose paths meet the user's untracked and ignored files
without writing over any of them: the check refuses only what git would replace, so these
merges go through, and the user's files are still there afterwards."""

from __future__ import annotations

from pathlib import Path

import pytest

from app.services.git import merge, worktrees
from app.services.git.merge import LocalChanges

from .conftest import commit_all, git, sh


@pytest.fixture
def ignoring(repo: Path) -> Path:
    """``repo`` ignoring local-config/ and holding the user's own files there and beside."""
    (repo / ".gitignore").write_text("local-config/\n")
    (repo / "tracked-file").write_text("a file now, a folder later\n")
    commit_all(repo, "ignore local-config")
    (repo / "local-config").mkdir()
    (repo / "local-config" / "db.ini").write_text("the user's\n")
    (repo / "docs").mkdir()
    (repo / "docs" / "draft.md").write_text("the user's draft\n")
    (repo / "empty").mkdir()
    return repo


def test_new_files_beside_the_users_own_go_through(ignoring: Path, root: Path) -> None:
    wt = worktrees.create(ignoring, root, "beside")
    # In the session's own checkout local-config/ is ignored too: it forces the file in.
    sh(wt.path, "mkdir -p local-config docs && echo agent > local-config/other.ini")
    git(wt.path, "add", "-f", "local-config/other.ini")
    sh(wt.path, "echo agent > docs/new.md && echo moved > f.txt && echo agent > empty")
    sh(wt.path, "rm tracked-file && mkdir tracked-file && echo inside > tracked-file/x")
    merge.commit(wt.path, "beside the user's files")

    done = merge.merge(ignoring, wt.branch, "main", "ff")
    assert done.checkout is not None
    assert (ignoring / "local-config" / "db.ini").read_text() == "the user's\n"
    assert (ignoring / "local-config" / "other.ini").read_text() == "agent\n"
    assert (ignoring / "docs" / "draft.md").read_text() == "the user's draft\n"
    assert (ignoring / "tracked-file" / "x").read_text() == "inside\n"
    assert (ignoring / "empty").read_text() == "agent\n"


def test_a_file_under_an_ignored_folder_of_the_users_is_refused(ignoring: Path, root: Path) -> None:
    wt = worktrees.create(ignoring, root, "over")
    sh(wt.path, "mkdir -p local-config && echo agent > local-config/db.ini")
    git(wt.path, "add", "-f", "local-config/db.ini")
    merge.commit(wt.path, "over the user's file")
    before = git(ignoring, "for-each-ref")

    with pytest.raises(LocalChanges) as refused:
        merge.merge(ignoring, wt.branch, "main", "merge")
    assert refused.value.files == ["local-config/db.ini"]
    assert "git does not track there (ignored or untracked)" in refused.value.message
    assert refused.value.status == 409
    assert git(ignoring, "for-each-ref") == before
    assert (ignoring / "local-config" / "db.ini").read_text() == "the user's\n"
