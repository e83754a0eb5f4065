"""The app's own git obeys none of the git data an agent can write, through a live server
and the real ``git``: a worktree's ``.git`` re-pointed at a repository the agent made (or
at the user's own), a nested repository committed inside the worktree, and programs
planted in the repository's shared config or the worktree's own config (fsmonitor, clean
and smudge filters named by ``.gitattributes``, a textconv, an external diff, a merge
driver). Each planted program appends to a sentinel file; reading the Changes tab, the
worktree's state and its files, committing and merging must never create it."""

from __future__ import annotations

import contextlib
import html
import sqlite3
from pathlib import Path
from typing import Any

import httpx
import pytest

from app.settings import Settings
from tests.api.test_chat import make_profile
from tests.api.test_finish import new_session
from tests.services.git.conftest import commit_all, git, init_repo

# Every read a plain GET of the session's git makes.
READS = ("/sessions/{sid}/changes", "/api/sessions/{sid}/worktree")
API_READS = ("/api/sessions/{sid}/changes", "/api/sessions/{sid}/files")
CHANGED = "the worktree's .git was changed: it points to"
# Pages over every session's worktree: they show a worktree they cannot trust, run nothing.
OVERVIEWS = ("/worktrees", "/api/board", "/board")


def planted_program(folder: Path) -> tuple[Path, Path]:
    """(a script an agent would plant, the sentinel it writes to when anything runs it);
    it passes its input through, so it works as a filter or a textconv too."""
    sentinel = folder / "sentinel"
    script = folder / "planted.sh"
    script.write_text(f'#!/bin/sh\necho "$0 $*" >> {sentinel}\ncat\n')
    script.chmod(0o755)
    return script, sentinel


def agent_repo(folder: Path, script: Path) -> Path:
    """A repository the agent made, whose config runs ``script`` on any status."""
    folder.mkdir()
    init_repo(folder, {"x.txt": "x\n"})
    git(folder, "config", "core.fsmonitor", str(script))
    return folder / ".git"


async def overviews_run_nothing(client: httpx.AsyncClient, sentinel: Path) -> None:
    for path in OVERVIEWS:
        r = await client.get(path)
        assert r.status_code == 200, (path, r.text)
        assert not sentinel.exists(), (path, sentinel.read_text())


async def every_read(client: httpx.AsyncClient, sid: str) -> list[httpx.Response]:
    paths = (*READS, *API_READS)
    return [await client.get(p.format(sid=sid)) for p in paths]


async def reads_run_nothing(client: httpx.AsyncClient, sid: str, sentinel: Path) -> dict[str, Any]:
    """Every read answers 200 and runs nothing; the session's changes as the API has them."""
    for r in await every_read(client, sid):
        assert r.status_code == 200, (r.request.url, r.text)
    assert not sentinel.exists(), sentinel.read_text()
    await overviews_run_nothing(client, sentinel)
    found: dict[str, Any] = (await client.get(f"/api/sessions/{sid}/changes")).json()
    return found


async def worktree_session(
    client: httpx.AsyncClient, repo: Path, fake: dict[str, Any], pid: str | None = None
) -> tuple[str, Path]:
    pid = pid or await make_profile(client, repo, fake)
    session = await new_session(client, pid, "Planted")
    return session["id"], Path(session["worktree"]["path"])


async def planted_session(
    client: httpx.AsyncClient, project_dir: Path, tmp_path: Path, fake: dict[str, Any]
) -> tuple[str, Path, Path, Path]:
    """(a session's id, its worktree, the planted script, its sentinel) in a new repository."""
    repo = init_repo(project_dir, {"f.txt": "one\n"})
    sid, path = await worktree_session(client, repo, fake)
    return sid, path, *planted_program(tmp_path)


async def test_a_re_pointed_dot_git_is_refused_and_runs_nothing(
    client: httpx.AsyncClient, project_dir: Path, tmp_path: Path, fake_claude: dict[str, Any]
) -> None:
    sid, path, script, sentinel = await planted_session(client, project_dir, tmp_path, fake_claude)
    # What an agent can do from its shell: make a repository, point the worktree at it.
    evil = agent_repo(path / "elsewhere", script)
    (path / ".git").write_text(f"gitdir: {evil}\n")
    (path / "f.txt").write_text("two\n")

    for r in await every_read(client, sid):
        assert not sentinel.exists(), (r.request.url, sentinel.read_text())
        assert r.status_code == 409, (r.request.url, r.text)
        said = html.unescape(r.text)
        assert CHANGED in said and str(evil) in said
    await overviews_run_nothing(client, sentinel)
    commit = await client.post(f"/api/sessions/{sid}/commit", json={"message": "m"})
    merge = await client.post(f"/api/sessions/{sid}/merge", json={"strategy": "merge"})
    assert commit.status_code == merge.status_code == 409
    assert CHANGED in commit.json()["detail"]
    assert not sentinel.exists()


async def test_a_committed_nested_repository_runs_nothing(
    client: httpx.AsyncClient, project_dir: Path, tmp_path: Path, fake_claude: dict[str, Any]
) -> None:
    sid, path, script, sentinel = await planted_session(client, project_dir, tmp_path, fake_claude)
    # A repository inside the worktree, committed there (a gitlink), then changed.
    agent_repo(path / "nested", script)
    quiet = ("-c", "core.fsmonitor=false", "-c", "core.hooksPath=/dev/null")
    git(path, *quiet, "add", "nested")
    git(path, *quiet, "commit", "-q", "-m", "nested")
    (path / "nested" / "x.txt").write_text("changed\n")
    (path / "f.txt").write_text("two\n")

    found = await reads_run_nothing(client, sid, sentinel)
    assert {f["path"] for f in found["files"]} == {"f.txt", "nested"}
    commit = await client.post(f"/api/sessions/{sid}/commit", json={"message": "m"})
    assert commit.status_code == 201, commit.text
    assert not sentinel.exists()


def plant_drivers(where: Path, script: Path, *scope: str) -> None:
    """Every program git's config can name for a file, set in ``where``'s config."""
    for key, value in (
        ("core.fsmonitor", str(script)),
        ("filter.evil.clean", str(script)),
        ("filter.evil.smudge", str(script)),
        ("diff.evil.textconv", str(script)),
        ("diff.evil.command", str(script)),
        ("diff.external", str(script)),
        ("merge.evil.driver", f"{script} %O %A %B"),
        ("gpg.program", str(script)),
        ("commit.gpgSign", "true"),
        ("log.showSignature", "true"),
        ("merge.verifySignatures", "true"),
    ):
        git(where, "config", *scope, key, value)


@pytest.mark.parametrize("scope", ["shared", "worktree"])
async def test_programs_in_the_repository_config_never_run(
    client: httpx.AsyncClient,
    project_dir: Path,
    tmp_path: Path,
    fake_claude: dict[str, Any],
    scope: str,
) -> None:
    attributes = "*.txt filter=evil diff=evil merge=evil\n"
    repo = init_repo(project_dir, {"f.txt": "one\ntwo\nthree\n", ".gitattributes": attributes})
    sid, path = await worktree_session(client, repo, fake_claude)
    # The user's main moves on in the same file, so merging needs a real three-way merge.
    (repo / "f.txt").write_text("ONE\ntwo\nthree\n")
    commit_all(repo, "main's change")
    script, sentinel = planted_program(tmp_path)
    if scope == "shared":
        plant_drivers(path, script)  # the repository's .git/config, shared by its worktrees
    else:
        git(path, "config", "extensions.worktreeConfig", "true")
        plant_drivers(path, script, "--worktree")
    (path / "f.txt").write_text("one\ntwo\nTHREE\n")
    (path / "g.txt").write_text("new\n")

    found = await reads_run_nothing(client, sid, sentinel)
    assert found["source"] == "git"
    assert {f["path"] for f in found["files"]} == {"f.txt", "g.txt"}
    commit = await client.post(f"/api/sessions/{sid}/commit", json={"message": "m"})
    assert commit.status_code == 201, commit.text
    # Not signed, and stored as written: no clean filter touched it.
    made = commit.json()["commit"]
    assert "gpgsig" not in git(repo, "-c", "core.fsmonitor=false", "cat-file", "-p", made)
    merge = await client.post(f"/api/sessions/{sid}/merge", json={"strategy": "merge"})
    if scope == "shared":
        # The merge driver is replaced by one that always conflicts: nothing merged, said so.
        assert merge.status_code == 409 and "f.txt" in merge.text, merge.text
    else:
        # The worktree's own config is not the repository's: git merges as usual.
        assert merge.status_code == 200, merge.text

    # A new worktree (checked out under the planted smudge filter), fast-forwarded into
    # the user's checkout (checked out there again).
    pid = (await client.get(f"/api/sessions/{sid}")).json()["profile_id"]
    second, there = await worktree_session(client, repo, fake_claude, pid)
    (there / "f.txt").write_text("from the second session\n")
    assert (await client.post(f"/api/sessions/{second}/commit", json={"message": "2"})).is_success
    ff = await client.post(f"/api/sessions/{second}/merge", json={"strategy": "ff"})
    assert ff.status_code == 200, ff.text
    assert (repo / "f.txt").read_text() == "from the second session\n"
    assert not sentinel.exists(), sentinel.read_text()


async def test_commit_through_a_dot_git_re_pointed_at_the_users_repository_is_refused(
    client: httpx.AsyncClient, project_dir: Path, fake_claude: dict[str, Any]
) -> None:
    repo = init_repo(project_dir, {"f.txt": "one\n"})
    sid, path = await worktree_session(client, repo, fake_claude)
    # The user has work staged in their own checkout.
    (repo / "staged.txt").write_text("the user's staged work\n")
    git(repo, "add", "staged.txt")
    before = (
        git(repo, "rev-parse", "refs/heads/main"),
        (repo / ".git" / "HEAD").read_bytes(),
        (repo / ".git" / "index").read_bytes(),
    )
    branch_before = git(repo, "rev-parse", f"refs/heads/angelia/{path.name}")
    (path / ".git").write_text(f"gitdir: {repo / '.git'}\n")
    (path / "agent.txt").write_text("the agent's work\n")

    r = await client.post(f"/api/sessions/{sid}/commit", json={"message": "onto main?"})
    assert r.status_code == 409 and CHANGED in r.json()["detail"], r.text
    assert str(repo / ".git") in r.json()["detail"]
    after = (
        git(repo, "rev-parse", "refs/heads/main"),
        (repo / ".git" / "HEAD").read_bytes(),
        (repo / ".git" / "index").read_bytes(),
    )
    assert after == before
    assert git(repo, "rev-parse", f"refs/heads/angelia/{path.name}") == branch_before


async def test_a_plain_folder_session_runs_nothing_the_repository_names(
    client: httpx.AsyncClient, project_dir: Path, tmp_path: Path, fake_claude: dict[str, Any]
) -> None:
    repo = init_repo(project_dir, {"f.txt": "one\n", ".gitattributes": "*.txt filter=evil\n"})
    pid = await make_profile(client, repo, fake_claude)
    r = await client.post("/api/sessions", json={"profile_id": pid, "worktree": False})
    assert r.status_code == 201, r.text
    sid = r.json()["id"]
    script, sentinel = planted_program(tmp_path)
    plant_drivers(repo, script)
    (repo / "f.txt").write_text("two\n")

    for path in ("/sessions/{sid}/changes", *API_READS):
        got = await client.get(path.format(sid=sid))
        assert got.status_code == 200, (path, got.text)
    found = (await client.get(f"/api/sessions/{sid}/changes")).json()
    assert found["source"] == "snapshot"
    assert [f["path"] for f in found["files"]] == ["f.txt"]
    assert not sentinel.exists(), sentinel.read_text()


async def test_a_session_from_before_git_dirs_were_recorded_is_checked_the_same(
    client: httpx.AsyncClient,
    project_dir: Path,
    tmp_path: Path,
    settings: Settings,
    fake_claude: dict[str, Any],
) -> None:
    sid, path, script, sentinel = await planted_session(client, project_dir, tmp_path, fake_claude)
    # As a session made before the columns were there has them: empty (a database older
    # still has no such columns, and its sessions are like this one anyway).
    with contextlib.closing(sqlite3.connect(settings.data_dir / "angelia.db")) as db, db:
        columns = {row[1] for row in db.execute("PRAGMA table_info(chat_session)")}
        if "git_dir" in columns:
            db.execute(
                "UPDATE chat_session SET git_dir = NULL, git_work_tree = NULL WHERE id = ?",
                (sid,),
            )
    (path / "f.txt").write_text("two\n")
    r = await client.get(f"/api/sessions/{sid}/worktree")
    assert r.status_code == 200 and r.json()["dirty"] == ["f.txt"], r.text

    evil = agent_repo(tmp_path / "elsewhere", script)
    (path / ".git").write_text(f"gitdir: {evil}\n")
    for r in await every_read(client, sid):
        assert r.status_code == 409 and CHANGED in html.unescape(r.text), r.text
    assert not sentinel.exists()
