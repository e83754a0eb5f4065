"""A merge never writes over a file git does not track where the base branch is checked out,
over real HTTP with the real ``git``: the agent empties ``.gitignore`` and commits its own
``.env`` and ``local-config/db.ini``; the user's ignored ones (and untracked files, folders
in the way, links a file would be written through) stay, with a 409 naming them and
nothing changed, for every strategy; a merge that touches none of them goes through."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx
import pytest
from bs4 import BeautifulSoup

from tests.api.test_chat import make_profile
from tests.api.test_finish import everything, new_session
from tests.services.git.conftest import git, init_repo

STRATEGIES = ("ff", "merge", "squash")
USERS_ENV = b"DATABASE_PASSWORD=the-users-own\n"
USERS_DB = b"[db]\nhost = the-users-own\n"
# What the agent commits: no more ignore rules, and its own secrets and config.
AGENTS_CONFIG = {
    ".gitignore": "",
    ".env": "DATABASE_PASSWORD=the-agents\n",
    "local-config/db.ini": "[db]\nhost = attacker.example\n",
}


@pytest.fixture
def repo(project_dir: Path) -> Path:
    """A repository whose .gitignore hides the user's .env and local-config/, which exist
    (and build/ and shared, which do not yet)."""
    ignore = ".env\nlocal-config/\nbuild/\nshared\n"
    made = init_repo(project_dir, {"f.txt": "one\n", ".gitignore": ignore})
    (made / ".env").write_bytes(USERS_ENV)
    (made / "local-config").mkdir()
    (made / "local-config" / "db.ini").write_bytes(USERS_DB)
    assert git(made, "status", "--porcelain") == ""
    return made


async def session_committing(
    client: httpx.AsyncClient, pid: str, files: dict[str, str]
) -> dict[str, Any]:
    """A worktree session whose agent wrote ``files`` (path → text), committed by the app."""
    session = await new_session(client, pid, "Set up the config")
    path = Path(session["worktree"]["path"])
    for name, content in files.items():
        (path / name).parent.mkdir(parents=True, exist_ok=True)
        (path / name).write_text(content)
    r = await client.post(f"/api/sessions/{session['id']}/commit", json={"message": "config"})
    assert r.status_code == 201, r.text
    return session


async def refused_every_way(
    client: httpx.AsyncClient, repo: Path, session: dict[str, Any], files: list[str]
) -> None:
    """Each strategy answers 409 naming ``files``, and nothing anywhere changes."""
    before = everything(repo, Path(session["worktree"]["path"]))
    index = (repo / ".git" / "index").read_bytes()
    for strategy in STRATEGIES:
        r = await client.post(f"/api/sessions/{session['id']}/merge", json={"strategy": strategy})
        assert r.status_code == 409, r.text
        body = r.json()
        assert (body["reason"], body["files"]) == ("untracked", files)
        assert Path(body["checkout"]).resolve() == repo.resolve()
        assert "nothing was changed" in body["detail"] and "move them" in body["detail"]
        for name in files:
            assert name in body["detail"]
    assert everything(repo, Path(session["worktree"]["path"])) == before
    assert (repo / ".git" / "index").read_bytes() == index


async def test_the_users_ignored_env_and_config_are_never_overwritten(
    client: httpx.AsyncClient, repo: Path, fake_claude: dict[str, Any]
) -> None:
    pid = await make_profile(client, repo, fake_claude)
    session = await session_committing(client, pid, AGENTS_CONFIG)
    await refused_every_way(client, repo, session, [".env", "local-config/db.ini"])
    assert (repo / ".env").read_bytes() == USERS_ENV
    assert (repo / "local-config" / "db.ini").read_bytes() == USERS_DB


async def test_an_untracked_file_a_folder_and_a_link_in_the_way_are_never_overwritten(
    client: httpx.AsyncClient, repo: Path, fake_claude: dict[str, Any], tmp_path: Path
) -> None:
    # Not ignored: a new file of the user's. Ignored: a folder of the user's where the
    # branch has a file; a link of the user's to a folder outside, where the branch writes
    # inside.
    (repo / "notes.txt").write_bytes(b"the user's notes\n")
    (repo / "build").mkdir()
    (repo / "build" / "cache.bin").write_bytes(b"the user's cache\n")
    outside = tmp_path / "outside"
    outside.mkdir()
    (repo / "shared").symlink_to(outside, target_is_directory=True)
    pid = await make_profile(client, repo, fake_claude)
    session = await session_committing(
        client,
        pid,
        {
            ".gitignore": "",
            "notes.txt": "the agent's\n",
            "build": "a file now\n",
            "shared/x.txt": "through\n",
        },
    )
    await refused_every_way(client, repo, session, ["build/cache.bin", "notes.txt", "shared"])
    assert (repo / "notes.txt").read_bytes() == b"the user's notes\n"
    assert (repo / "build" / "cache.bin").read_bytes() == b"the user's cache\n"
    assert (repo / "shared").is_symlink() and list(outside.iterdir()) == []


@pytest.mark.parametrize("strategy", STRATEGIES)
async def test_a_merge_that_writes_none_of_them_goes_through(
    client: httpx.AsyncClient, repo: Path, fake_claude: dict[str, Any], strategy: str
) -> None:
    pid = await make_profile(client, repo, fake_claude)
    session = await session_committing(
        client, pid, {"f.txt": "two\n", "local-config.md": "how to set up local-config/\n"}
    )
    r = await client.post(f"/api/sessions/{session['id']}/merge", json={"strategy": strategy})
    assert r.status_code == 200, r.text
    assert git(repo, "rev-parse", "main").strip() == r.json()["commit"]
    assert (repo / "f.txt").read_text() == "two\n"
    assert (repo / ".env").read_bytes() == USERS_ENV
    assert (repo / "local-config" / "db.ini").read_bytes() == USERS_DB
    assert git(repo, "status", "--porcelain") == ""


async def test_a_base_checked_out_nowhere_moves_and_no_checkout_is_written(
    client: httpx.AsyncClient, repo: Path, fake_claude: dict[str, Any]
) -> None:
    pid = await make_profile(client, repo, fake_claude)
    session = await session_committing(client, pid, {".gitignore": "", ".env": "agent's\n"})
    git(repo, "switch", "-q", "-c", "elsewhere")
    r = await client.post(f"/api/sessions/{session['id']}/merge", json={"strategy": "ff"})
    assert r.status_code == 200, r.text
    assert r.json()["checkout"] is None
    assert git(repo, "rev-parse", "main").strip() == r.json()["commit"]
    assert (repo / ".env").read_bytes() == USERS_ENV
    assert (repo / "local-config" / "db.ini").read_bytes() == USERS_DB


async def test_the_panel_names_the_files_and_says_what_to_do(
    client: httpx.AsyncClient, repo: Path, fake_claude: dict[str, Any]
) -> None:
    pid = await make_profile(client, repo, fake_claude)
    session = await session_committing(client, pid, AGENTS_CONFIG)
    before = git(repo, "for-each-ref")
    r = await client.post(f"/sessions/{session['id']}/finish/merge", data={"strategy": "ff"})
    assert r.status_code == 303, r.text
    got = await client.get(r.headers["location"])
    assert got.status_code == 200
    soup = BeautifulSoup(got.text, "html.parser")
    error = soup.select_one("#finish-error")
    assert error is not None and error.get("role") == "alert"
    assert "git does not track there" in error.get_text()
    names = [li.get_text() for li in soup.select("#finish-files li")]
    assert names == [".env", "local-config/db.ini"]
    advice = soup.select_one("#finish-untracked")
    assert advice is not None and "Move them out of that checkout" in advice.get_text()
    assert soup.select_one("#finish-resolve") is None
    assert git(repo, "for-each-ref") == before
    assert (repo / ".env").read_bytes() == USERS_ENV
