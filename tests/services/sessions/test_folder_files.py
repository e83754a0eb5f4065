"""The file lists for ``@`` mentions, listed ahead of the first query.

A folder's listing is started for a session before anyone asks, once per folder however
many sessions share it; a query that arrives while it runs answers from the tracked files
already read, marked partial, then from the whole list; a listing nobody needs any more is
stopped, its git ended.

To hold a listing half-way on purpose, the repository's ``info/exclude`` is a FIFO: git
reads it only to find untracked files (after the tracked ones are listed), and blocks on
it until the test opens the other end.
"""

from __future__ import annotations

import errno
import os
import time
from collections.abc import Callable
from pathlib import Path

from app.services.git.repo import GitPlace
from app.services.sessions.folder_files import FolderFiles

# Git reads neither the machine's nor the user's config (an autouse fixture).
from tests.services.git.conftest import _own_git_config, init_repo  # noqa: F401

WAIT_S = 20.0


def gated_repo(root: Path) -> tuple[Path, GitPlace]:
    """A repository with one tracked and one untracked file, whose untracked files git
    cannot list before :func:`open_gate`; returns the gate and where git runs."""
    root.mkdir()
    init_repo(root, {"tracked.txt": "1\n"})
    (root / "untracked.txt").write_text("2\n")
    gate = root / ".git" / "info" / "exclude"
    gate.unlink(missing_ok=True)
    gate.parent.mkdir(exist_ok=True)
    os.mkfifo(gate)
    return gate, GitPlace(root / ".git", root)


def open_gate(gate: Path) -> bool:
    """Let a git blocked on the gate read it (empty); False when no git is waiting."""
    try:
        fd = os.open(gate, os.O_WRONLY | os.O_NONBLOCK)
    except OSError as exc:
        if exc.errno == errno.ENXIO:  # nobody has it open for reading
            return False
        raise
    os.close(fd)
    return True


def eventually(check: Callable[[], bool]) -> None:
    deadline = time.monotonic() + WAIT_S
    while not check():
        assert time.monotonic() < deadline, "not within the time allowed"
        time.sleep(0.02)


def test_a_query_during_the_first_listing_answers_from_the_files_found_so_far(
    tmp_path: Path,
) -> None:
    gate, place = gated_repo(tmp_path / "repo")
    lists = FolderFiles()
    folder = (tmp_path / "repo", place)

    lists.warm(folder, "session-1")
    early = lists.current(folder)
    assert early.partial is True
    assert early.paths == ("tracked.txt",)
    assert early.search("trk") == ["tracked.txt"]

    # git is held reading the gate: let it through, and the list becomes whole.
    eventually(lambda: open_gate(gate))
    eventually(lambda: not lists.current(folder).partial)
    whole = lists.current(folder)
    assert whole.paths == ("tracked.txt", "untracked.txt")
    assert lists.cached(folder) is whole
    assert lists.listings_started == 1


def test_sessions_sharing_a_folder_share_one_listing_started_before_any_query(
    tmp_path: Path,
) -> None:
    (tmp_path / "repo").mkdir()
    init_repo(tmp_path / "repo", {"a.txt": "a\n"})
    folder = (tmp_path / "repo", GitPlace(tmp_path / "repo" / ".git", tmp_path / "repo"))
    lists = FolderFiles()

    lists.warm(folder, "session-1")
    lists.warm(folder, "session-2")
    assert lists.listings_started == 1
    eventually(lambda: lists.cached(folder) is not None)
    # Kept: starting a third session, or asking, lists nothing again.
    lists.warm(folder, "session-3")
    assert lists.current(folder).paths == ("a.txt",)
    assert lists.listings_started == 1


def test_a_listing_nobody_needs_any_more_is_stopped_with_its_git(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    gate, place = gated_repo(repo)
    lists = FolderFiles()
    folder = (repo, place)
    lists.warm(folder, "session-1")
    lists.warm(folder, "session-2")
    # git is listing the untracked files, held on the gate.
    eventually(lambda: listing_untracked(repo))

    lists.release("session-1")
    time.sleep(0.3)
    assert lists.running() == 1, "still needed by the other session"
    assert listing_untracked(repo)
    lists.release("session-2")
    eventually(lambda: lists.running() == 0)
    assert not listing_untracked(repo)
    # Nothing reads the gate any more, and nothing half-listed was kept.
    assert not open_gate(gate)
    assert lists.cached(folder) is None


def listing_untracked(repo: Path) -> bool:
    """Whether a git process is listing ``repo``'s untracked files now."""
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if b"--others" in argv and str(repo).encode() in argv and b"ls-files" in argv:
            return True
    return False
