"""Finishing a worktree session's work through the API, against the real ``git`` and the fake
claude: commit with the suggested message, merge into the base (moving the user's
checkout), conflicts refused with nothing changed, the agent asked to resolve, discard
refused while work would be lost and then removing only its folder and its branch."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.api.test_chat import fake_log, make_profile
from tests.browser.test_approvals import bash
from tests.conftest import write_scenario
from tests.faults._support import fake_starts
from tests.helpers import count, send, wait_for_events
from tests.services.git.conftest import git, init_repo, refs


def make_repo(folder: Path) -> Path:
    """``folder`` as a repository on ``main``: f.txt, committed, by an author of its own."""
    return init_repo(folder, {"f.txt": "one\n"})


@pytest.fixture
def repo(project_dir: Path) -> Path:
    return make_repo(project_dir)


async def new_session(client: httpx.AsyncClient, pid: str, title: str) -> dict[str, Any]:
    r = await client.post(
        "/api/sessions", json={"profile_id": pid, "title": title, "worktree": True}
    )
    assert r.status_code == 201, r.text
    made: dict[str, Any] = r.json()
    return made


async def commit_edit(
    client: httpx.AsyncClient, session: dict[str, Any], name: str, text: str
) -> str:
    """What an agent does in its worktree, then committed through the API."""
    (Path(session["worktree"]["path"]) / name).write_text(text)
    r = await client.post(f"/api/sessions/{session['id']}/commit", json={"message": "edit"})
    assert r.status_code == 201, r.text
    sha: str = r.json()["commit"]
    return sha


def everything(repo: Path, *worktrees: Path) -> dict[str, Any]:
    """Refs, index, status and file contents of the repository and its worktrees."""
    seen: dict[str, Any] = {"refs": refs(repo), "list": git(repo, "worktree", "list")}
    for place in (repo, *worktrees):
        seen[f"{place}:index"] = git(place, "ls-files", "-s")
        seen[f"{place}:status"] = git(place, "status", "--porcelain", "--untracked-files=all")
        seen[f"{place}:files"] = {
            str(p.relative_to(place)): p.read_bytes()
            for p in sorted(place.rglob("*"))
            if p.is_file() and ".git" not in p.relative_to(place).parts
        }
    return seen


async def test_commit_with_the_suggested_message_then_fast_forward(
    client: httpx.AsyncClient, repo: Path, fake_claude: dict[str, Any]
) -> None:
    answer = "I changed f.txt.\n\n\nIt now says two.\n" + "".join(f"line {i}\n" for i in range(20))
    write_scenario(fake_claude["scenario"], [[{"text": answer}]])
    pid = await make_profile(client, repo, fake_claude)
    session = await new_session(client, pid, "Fix the login")
    sid, path = session["id"], Path(session["worktree"]["path"])
    await send(client, sid, "change f.txt")
    await wait_for_events(client, sid, count("turn_end"))

    (path / "f.txt").write_text("two\n")
    (path / "new.txt").write_text("new\n")
    r = await client.get(f"/api/sessions/{sid}/worktree")
    assert r.status_code == 200, r.text
    info = r.json()
    assert info["branch"] == session["worktree"]["branch"] and info["base"] == "main"
    assert (info["ahead"], info["behind"], info["committed"]) == (0, 0, False)
    assert sorted(info["dirty"]) == ["f.txt", "new.txt"]
    # The title the user gave as the subject, what the session was asked as the body.
    suggested = info["suggested_message"]
    assert suggested == "Fix the login\n\nchange f.txt"

    r = await client.post(f"/api/sessions/{sid}/commit", json={"message": suggested})
    assert r.status_code == 201, r.text
    sha = r.json()["commit"]
    assert git(path, "log", "-1", "--format=%B").strip() == suggested
    assert r.json()["worktree"]["ahead"] == 1 and r.json()["worktree"]["dirty"] == []
    # Nothing left: a second commit is refused, saying why.
    again = await client.post(f"/api/sessions/{sid}/commit", json={"message": "more"})
    assert again.status_code == 409 and "nothing to commit" in again.json()["detail"]

    (repo / "notes.txt").write_text("the user's own, untouched\n")
    r = await client.post(f"/api/sessions/{sid}/merge", json={"strategy": "ff"})
    assert r.status_code == 200, r.text
    assert r.json()["commit"] == sha and r.json()["strategy"] == "ff"
    assert Path(r.json()["checkout"]).resolve() == repo.resolve()
    assert git(repo, "rev-parse", "main").strip() == sha
    # The user's own checkout moved with its branch, and is clean.
    assert (repo / "f.txt").read_text() == "two\n" and (repo / "new.txt").read_text() == "new\n"
    assert git(repo, "status", "--porcelain") == "?? notes.txt\n"
    assert (repo / "notes.txt").read_text() == "the user's own, untouched\n"
    after = (await client.get(f"/api/sessions/{sid}/worktree")).json()
    assert (after["merged"], after["committed"], after["ahead"]) == (True, True, 0)


async def test_a_conflicting_second_session_changes_nothing_anywhere(
    client: httpx.AsyncClient, repo: Path, fake_claude: dict[str, Any]
) -> None:
    write_scenario(fake_claude["scenario"], [[{"text": "on it"}]])
    pid = await make_profile(client, repo, fake_claude)
    first = await new_session(client, pid, "First")
    second = await new_session(client, pid, "Second")
    await commit_edit(client, first, "f.txt", "first\n")
    await commit_edit(client, second, "f.txt", "second\n")
    r = await client.post(f"/api/sessions/{first['id']}/merge", json={"strategy": "merge"})
    assert r.status_code == 200, r.text
    (repo / "scratch.txt").write_text("the user's own, uncommitted\n")

    paths = [Path(s["worktree"]["path"]) for s in (first, second)]
    before = everything(repo, *paths)
    for strategy in ("merge", "squash"):
        r = await client.post(f"/api/sessions/{second['id']}/merge", json={"strategy": strategy})
        assert r.status_code == 409, r.text
        assert r.json()["files"] == ["f.txt"] and r.json()["reason"] == "conflict"
        assert "nothing was changed" in r.json()["detail"]
    r = await client.post(f"/api/sessions/{second['id']}/merge", json={"strategy": "ff"})
    assert r.status_code == 409 and "cannot be fast-forwarded" in r.json()["detail"]
    assert everything(repo, *paths) == before

    # Ask the agent to resolve: it receives the file and what to do.
    r = await client.post(f"/api/sessions/{second['id']}/resolve")
    assert r.status_code == 202, r.text
    assert r.json() == {"files": ["f.txt"]}
    await wait_for_events(client, second["id"], count("turn_end"))
    said = [
        json.dumps(e["stdin"])
        for e in fake_log(fake_claude)
        if e.get("stdin", {}).get("type") == "user"
    ]
    assert len(said) == 1
    assert "f.txt" in said[0] and "git merge main" in said[0]
    assert everything(repo, *paths) == before


@pytest.mark.parametrize(
    ("name", "reason"),
    [("f.txt", "local_changes"), ("notes.txt", "untracked")],
    ids=["edited", "untracked"],
)
async def test_uncommitted_work_in_the_users_checkout_is_never_overwritten(
    client: httpx.AsyncClient, repo: Path, fake_claude: dict[str, Any], name: str, reason: str
) -> None:
    pid = await make_profile(client, repo, fake_claude)
    session = await new_session(client, pid, "Edit")
    await commit_edit(client, session, name, "from the session\n")
    (repo / name).write_text("the user's unsaved work\n")
    before = everything(repo, Path(session["worktree"]["path"]))
    for strategy in ("ff", "merge", "squash"):
        r = await client.post(f"/api/sessions/{session['id']}/merge", json={"strategy": strategy})
        assert r.status_code == 409, r.text
        assert r.json()["files"] == [name] and r.json()["reason"] == reason
        assert Path(r.json()["checkout"]).resolve() == repo.resolve()
    assert everything(repo, Path(session["worktree"]["path"])) == before


async def test_discard_is_refused_while_work_would_be_lost_then_removes_only_its_own(
    client: httpx.AsyncClient, repo: Path, fake_claude: dict[str, Any]
) -> None:
    pid = await make_profile(client, repo, fake_claude)
    doomed = await new_session(client, pid, "Doomed")
    other = await new_session(client, pid, "Other")
    git(repo, "branch", "keep-me")
    (repo / "f.txt").write_text("stashed\n")
    git(repo, "stash", "-q")
    sid, path = doomed["id"], Path(doomed["worktree"]["path"])
    branch = doomed["worktree"]["branch"]

    await commit_edit(client, doomed, "f.txt", "unmerged\n")
    (path / "new.txt").write_text("dirty\n")
    for body in (None, {"confirm": False}):
        r = await client.post(f"/api/sessions/{sid}/discard", json=body)
        assert r.status_code == 409, r.text
        assert r.json()["unmerged"] == 1 and r.json()["files"] == ["new.txt"]
        assert r.json()["reason"] == "unsafe"
    assert path.is_dir() and git(repo, "branch", "--list", branch).strip()

    r = await client.post(f"/api/sessions/{sid}/discard", json={"confirm": True})
    assert r.status_code == 200, r.text
    assert not path.exists()
    assert git(repo, "branch", "--list", branch) == ""
    assert str(path) not in git(repo, "worktree", "list")
    # Everything else of the repository stayed.
    assert git(repo, "branch", "--list", "keep-me").strip()
    assert git(repo, "stash", "list").count("\n") == 1
    assert Path(other["worktree"]["path"]).is_dir()
    assert git(repo, "branch", "--list", other["worktree"]["branch"]).strip()
    # The session stays readable, without a worktree.
    got = await client.get(f"/api/sessions/{sid}")
    assert got.status_code == 200 and got.json()["worktree"] is None
    r = await client.get(f"/api/sessions/{sid}/worktree")
    assert r.status_code == 409 and "was discarded on" in r.json()["detail"]


async def test_a_merged_worktree_is_discarded_without_confirming(
    client: httpx.AsyncClient, repo: Path, fake_claude: dict[str, Any]
) -> None:
    write_scenario(fake_claude["scenario"], [[{"text": "all done"}]])
    pid = await make_profile(client, repo, fake_claude)
    session = await new_session(client, pid, "Done")
    await commit_edit(client, session, "f.txt", "merged\n")
    r = await client.post(f"/api/sessions/{session['id']}/merge", json={"strategy": "squash"})
    assert r.status_code == 200, r.text
    await send(client, session["id"], "anything left?")
    await wait_for_events(client, session["id"], count("turn_end"))
    [start] = fake_starts(fake_claude)  # its agent runs, idle, in the worktree
    r = await client.post(f"/api/sessions/{session['id']}/discard")
    assert r.status_code == 200, r.text
    assert not Path(session["worktree"]["path"]).exists()
    with pytest.raises(ProcessLookupError):  # stopped before its folder went
        os.kill(start["pid"], 0)


async def test_deleting_a_session_with_discard_leaves_nothing_behind(
    client: httpx.AsyncClient, repo: Path, fake_claude: dict[str, Any], tmp_path: Path
) -> None:
    pid = await make_profile(client, repo, fake_claude)
    kept = await new_session(client, pid, "Kept")
    gone = await new_session(client, pid, "Gone")
    await commit_edit(client, gone, "f.txt", "unmerged work\n")
    r = await client.delete(f"/api/sessions/{kept['id']}")
    assert r.status_code == 204
    assert Path(kept["worktree"]["path"]).is_dir()  # without discard it stays
    r = await client.delete(f"/api/sessions/{gone['id']}", params={"discard": "true"})
    assert r.status_code == 204, r.text
    assert not Path(gone["worktree"]["path"]).exists()
    assert git(repo, "branch", "--list", gone["worktree"]["branch"]) == ""
    assert gone["worktree"]["path"] not in git(repo, "worktree", "list")
    assert (await client.get(f"/api/sessions/{gone['id']}")).status_code == 404


async def test_merge_waits_for_the_agent_to_finish_its_turn(
    client: httpx.AsyncClient, repo: Path, fake_claude: dict[str, Any]
) -> None:
    write_scenario(fake_claude["scenario"], [[bash("touch x"), {"text": "done"}]])
    pid = await make_profile(client, repo, fake_claude)
    session = await new_session(client, pid, "Busy")
    await commit_edit(client, session, "f.txt", "work\n")
    await send(client, session["id"], "go")
    await wait_for_events(client, session["id"], count("permission_request"))
    before = refs(repo)
    for action, body in (("merge", {"strategy": "ff"}), ("discard", {"confirm": True})):
        r = await client.post(f"/api/sessions/{session['id']}/{action}", json=body)
        assert r.status_code == 409, r.text
        assert "middle of a turn" in r.json()["detail"]
    assert refs(repo) == before and Path(session["worktree"]["path"]).is_dir()


@pytest.mark.parametrize(
    ("action", "body"),
    [
        ("commit", {"message": "x"}),
        ("merge", {"strategy": "ff"}),
        ("discard", {"confirm": True}),
        ("resolve", None),
    ],
)
async def test_a_session_without_a_worktree_gets_422(
    client: httpx.AsyncClient,
    repo: Path,
    fake_claude: dict[str, Any],
    action: str,
    body: dict[str, Any] | None,
) -> None:
    pid = await make_profile(client, repo, fake_claude)
    sid = (await client.post("/api/sessions", json={"profile_id": pid})).json()["id"]
    before = everything(repo)
    r = await client.post(f"/api/sessions/{sid}/{action}", json=body)
    assert r.status_code == 422, r.text
    assert "no worktree of its own" in r.json()["detail"]
    assert (await client.get(f"/api/sessions/{sid}/worktree")).status_code == 422
    assert everything(repo) == before


@pytest.mark.parametrize(
    ("action", "body", "field"),
    [
        ("merge", {"strategy": "rebase"}, "strategy"),
        ("merge", {}, "strategy"),
        ("commit", {"message": ""}, "message"),
        ("commit", {"message": "   "}, "message"),
    ],
)
async def test_bad_input_is_a_clear_422(
    client: httpx.AsyncClient,
    repo: Path,
    fake_claude: dict[str, Any],
    action: str,
    body: dict[str, Any],
    field: str,
) -> None:
    pid = await make_profile(client, repo, fake_claude)
    session = await new_session(client, pid, "Input")
    (Path(session["worktree"]["path"]) / "f.txt").write_text("changed\n")
    before = everything(repo, Path(session["worktree"]["path"]))
    r = await client.post(f"/api/sessions/{session['id']}/{action}", json=body)
    assert r.status_code == 422, r.text
    assert field in r.text
    assert everything(repo, Path(session["worktree"]["path"])) == before
