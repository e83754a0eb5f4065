"""A session in a git worktree of its own, through the API against the real ``git``: made
on a new ``angelia/`` branch under the data dir, its agent started there, and refused with
the reason where it cannot be made."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.api.test_chat import make_profile, make_session
from tests.conftest import write_scenario
from tests.fakes.fake_acp_agent import FakeAcpFiles
from tests.faults._support import ServerProcess, fake_starts
from tests.helpers import count, send, wait_for_events
from tests.services.git.conftest import commit_all, git, init_repo


@pytest.fixture
def repo(project_dir: Path) -> Path:
    """The project folder as a repository on ``main`` with one commit."""
    files = {"f.txt": "one\n", ".gitignore": ".env\n", ".env": "TOKEN=local\n"}
    return init_repo(project_dir, files)


async def test_a_session_in_its_own_worktree(
    client: httpx.AsyncClient, repo: Path, fake_claude: dict[str, Any], tmp_path: Path
) -> None:
    pid = await make_profile(client, repo, fake_claude, worktree_copy=[".env"])
    r = await client.post(
        "/api/sessions", json={"profile_id": pid, "title": "Fix the login", "worktree": True}
    )
    assert r.status_code == 201, r.text
    made = r.json()
    worktree = made["worktree"]
    path = Path(worktree["path"])
    assert path.parent.parent == tmp_path / "data" / "worktrees"
    assert worktree["branch"].startswith("angelia/fix-the-login-")
    assert worktree["base"] == "main"
    assert worktree["base_commit"] == git(repo, "rev-parse", "main").strip()
    assert (path / "f.txt").read_text() == "one\n"
    assert (path / ".env").read_text() == "TOKEN=local\n"
    assert str(path) in git(repo, "worktree", "list")
    assert git(path, "branch", "--show-current").strip() == worktree["branch"]
    # The user's checkout is where it was.
    assert git(repo, "branch", "--show-current").strip() == "main"
    assert git(repo, "status", "--porcelain") == ""

    # The agent runs in the worktree, and the session says so on every read.
    await send(client, made["id"], "hello")
    await wait_for_events(client, made["id"], count("turn_end"))
    starts = fake_starts(fake_claude)
    assert [Path(s["cwd"]).resolve() for s in starts] == [path.resolve()]
    again = (await client.get(f"/api/sessions/{made['id']}")).json()
    assert again["worktree"] == worktree
    listed = (await client.get("/api/sessions")).json()
    assert [s["worktree"] for s in listed if s["id"] == made["id"]] == [worktree]


async def test_the_profile_default_and_its_override(
    client: httpx.AsyncClient, repo: Path, fake_claude: dict[str, Any]
) -> None:
    pid = await make_profile(client, repo, fake_claude, worktree_default=True)
    assert (await client.get(f"/api/profiles/{pid}")).json()["worktree_default"] is True
    r = await client.post("/api/sessions", json={"profile_id": pid})
    assert r.status_code == 201, r.text
    first = r.json()["worktree"]
    assert first is not None and first["branch"].startswith("angelia/session-")
    r = await client.post("/api/sessions", json={"profile_id": pid})
    assert r.json()["worktree"]["path"] != first["path"]
    r = await client.post("/api/sessions", json={"profile_id": pid, "worktree": False})
    assert r.status_code == 201 and r.json()["worktree"] is None


async def test_a_base_branch(
    client: httpx.AsyncClient, repo: Path, fake_claude: dict[str, Any]
) -> None:
    git(repo, "switch", "-q", "-c", "release")
    (repo / "f.txt").write_text("release\n")
    release = commit_all(repo, "release fix")
    git(repo, "switch", "-q", "main")
    pid = await make_profile(client, repo, fake_claude)
    r = await client.post(
        "/api/sessions", json={"profile_id": pid, "worktree": True, "base": "release"}
    )
    assert r.status_code == 201, r.text
    worktree = r.json()["worktree"]
    assert (worktree["base"], worktree["base_commit"]) == ("release", release)
    assert (Path(worktree["path"]) / "f.txt").read_text() == "release\n"


@pytest.mark.parametrize(
    ("body", "field", "words"),
    [
        ({"worktree": True, "base": "no-such-branch"}, "base", "no branch 'no-such-branch'"),
        ({"base": "main"}, "base", "only applies to a session in a worktree"),
        ({"worktree": True, "base": ""}, "base", ""),
    ],
)
async def test_bad_bases_are_refused(
    client: httpx.AsyncClient,
    repo: Path,
    fake_claude: dict[str, Any],
    body: dict[str, Any],
    field: str,
    words: str,
) -> None:
    pid = await make_profile(client, repo, fake_claude)
    before = git(repo, "for-each-ref")
    r = await client.post("/api/sessions", json={"profile_id": pid, **body})
    assert r.status_code == 422, r.text
    assert field in r.text and words in r.text
    assert git(repo, "for-each-ref") == before
    assert (await client.get("/api/sessions")).json() == []


async def test_a_folder_that_is_not_a_repository(
    client: httpx.AsyncClient, project_dir: Path, fake_claude: dict[str, Any], tmp_path: Path
) -> None:
    pid = await make_profile(client, project_dir, fake_claude)
    r = await client.post("/api/sessions", json={"profile_id": pid, "worktree": True})
    assert r.status_code == 422
    assert "only get a worktree of a git repository" in r.json()["detail"]
    assert str(project_dir) in r.json()["detail"]
    assert (await client.get("/api/sessions")).json() == []
    assert not (tmp_path / "data" / "worktrees").exists()
    # Without a worktree the same folder is fine.
    sid = await make_session(client, project_dir, fake_claude)
    assert (await client.get(f"/api/sessions/{sid}")).json()["worktree"] is None


@pytest.mark.parametrize(
    "copy", [["../secret"], ["/etc/passwd"], [".git/config"], [""], ["x"] * 51]
)
async def test_copy_lists_are_checked(
    client: httpx.AsyncClient, repo: Path, fake_claude: dict[str, Any], copy: list[str]
) -> None:
    body = {
        "name": "wt",
        "backend": "claude",
        "cwd": str(repo),
        "command": fake_claude["command"],
        "worktree_copy": copy,
    }
    r = await client.post("/api/profiles", json=body)
    assert r.status_code == 422, r.text
    assert "worktree_copy" in r.text


async def test_a_restart_resumes_the_session_in_its_worktree(
    tmp_path: Path, repo: Path, fake_claude: dict[str, Any]
) -> None:
    """The worktree is the session's, not the server's: a new server process resumes the
    conversation there."""
    write_scenario(fake_claude["scenario"], [[{"text": "first"}], [{"text": "second"}]])
    first = ServerProcess(tmp_path / "served", tmp_path).start()
    try:
        async with first.client() as client:
            pid = await make_profile(client, repo, fake_claude)
            r = await client.post("/api/sessions", json={"profile_id": pid, "worktree": True})
            sid, path = r.json()["id"], Path(r.json()["worktree"]["path"])
            await send(client, sid, "one")
            await wait_for_events(client, sid, count("turn_end"))
    finally:
        first.stop()
    write_scenario(fake_claude["scenario"], [[{"text": "after the restart"}]])
    second = ServerProcess(first.data_dir, tmp_path).start()
    try:
        async with second.client() as client:
            await send(client, sid, "two")
            await wait_for_events(client, sid, count("turn_end", 2))
            assert (await client.get(f"/api/sessions/{sid}")).json()["worktree"]["path"] == str(
                path
            )
    finally:
        second.stop()
    starts = fake_starts(fake_claude)
    assert [Path(s["cwd"]).resolve() for s in starts] == [path.resolve()] * 2
    assert "--resume" in " ".join(starts[1]["argv"])


async def test_an_acp_agent_works_in_the_worktree_too(
    client: httpx.AsyncClient, tmp_path: Path
) -> None:
    """The worktree is the session's folder for every backend: an ACP agent is started
    there and is told it as the session's ``cwd``."""
    files = FakeAcpFiles(tmp_path)
    init_repo(files.cwd, {"f.txt": "one\n"})
    files.scenario([{"text": "ok"}])
    body = files.profile(worktree_default=True)
    r = await client.post("/api/profiles", json=body)
    assert r.status_code == 201, r.text
    r = await client.post("/api/sessions", json={"profile_id": r.json()["id"]})
    sid, path = r.json()["id"], Path(r.json()["worktree"]["path"])
    await send(client, sid, "go")
    await wait_for_events(client, sid, count("turn_end"))
    assert [Path(s["cwd"]).resolve() for s in files.starts()] == [path.resolve()]
    assert [Path(p["cwd"]) for p in files.requests("session/new")] == [path]


async def test_a_discarded_worktree_never_sends_the_agent_into_the_users_checkout(
    client: httpx.AsyncClient, repo: Path, fake_claude: dict[str, Any]
) -> None:
    pid = await make_profile(client, repo, fake_claude)
    r = await client.post("/api/sessions", json={"profile_id": pid, "worktree": True})
    sid, branch = r.json()["id"], r.json()["worktree"]["branch"]
    await send(client, sid, "hello")
    await wait_for_events(client, sid, count("turn_end"))
    r = await client.post(f"/api/sessions/{sid}/discard", json={"confirm": True})
    assert r.status_code == 200, r.text
    assert (await client.get(f"/api/sessions/{sid}")).json()["worktree"] is None

    r = await client.post(f"/api/sessions/{sid}/messages", json={"text": "go on"})
    assert r.status_code == 409, r.text
    assert f"worktree (branch {branch}) was discarded" in r.json()["detail"]
    assert [Path(s["cwd"]).resolve() for s in fake_starts(fake_claude)] != []
    assert all(Path(s["cwd"]).resolve() != repo.resolve() for s in fake_starts(fake_claude))
    page = (await client.get(f"/sessions/{sid}")).text
    assert "was discarded" in page


# Rounds of eight at once: git's lock is held for a moment, so a clash in one round is
# likely, not certain.
BATCHES = 5


async def test_worktree_sessions_made_at_once_on_one_repository(
    client: httpx.AsyncClient, repo: Path, fake_claude: dict[str, Any]
) -> None:
    # git takes .git/config.lock for each new branch and worktree and refuses a second
    # writer; made together, each must wait its turn rather than fail or be renamed.
    pid = await make_profile(client, repo, fake_claude)
    made: list[dict[str, Any]] = []
    for batch in range(BATCHES):
        answers = await asyncio.gather(
            *(
                client.post(
                    "/api/sessions",
                    json={"profile_id": pid, "title": f"run {batch} {i}", "worktree": True},
                )
                for i in range(8)
            )
        )
        assert [a.status_code for a in answers] == [201] * 8, [a.text for a in answers]
        made += [a.json()["worktree"] for a in answers]
    assert len({w["path"] for w in made}) == len({w["branch"] for w in made}) == 8 * BATCHES
    # No branch was left behind by a failed attempt, and each tracks its base.
    listed = git(repo, "branch", "--list", "angelia/*", "--format=%(refname:short)")
    assert sorted(listed.split()) == sorted(w["branch"] for w in made)
    assert len(git(repo, "worktree", "list").splitlines()) == 8 * BATCHES + 1
    for w in made:
        assert git(repo, "config", f"branch.{w['branch']}.merge").strip() == "refs/heads/main"
