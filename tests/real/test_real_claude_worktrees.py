"""Two real Claude Code sessions in worktrees of one repository, driven by the fake model:
one changes a file through Write and Edit, the other through shell commands (sed -i, rm,
mv). Each Changes view holds all of its own changes and none of the other's; the first
merges fast-forward; the second then conflicts (409, nothing changed), its agent resolves
it when asked, and it merges; discarding it leaves the repository's other branches, stash
and worktrees as they were."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx
import pytest

from app.main import create_app
from app.settings import Settings
from tests.conftest import LiveServer
from tests.fakes.fake_model_server import FakeModelServer, request_texts
from tests.helpers import count, of_kind, send, wait_for_events
from tests.real.conftest import claude_profile_body
from tests.real.steps import backend_pid
from tests.real.test_real_claude_app import proc_identity
from tests.real.test_real_claude_images_rewind import allow_all
from tests.services.git.conftest import git, init_repo

pytestmark = pytest.mark.real_cli

START = "alpha\nbeta\ngamma\n"
RESOLVED = "alpha from edit and from shell\nbeta\ngamma\n"


@pytest.fixture
def repo(project_dir: Path) -> Path:
    """A repository on ``main``, with another branch, a stash and a worktree of the user's."""
    files = {"app.txt": START, "old.txt": "to be moved\n", "gone.txt": "to be removed\n"}
    init_repo(project_dir, files)
    git(project_dir, "branch", "feature-x")
    (project_dir / "app.txt").write_text(START + "stashed\n")
    git(project_dir, "stash", "-q")
    git(project_dir, "worktree", "add", "-q", str(project_dir.parent / "mine"), "-b", "mine")
    return project_dir


def tools_rules(one: Path, two: Path) -> dict[str, Any]:
    """ "edit it" reads, then edits app.txt in worktree one and writes a new file there;
    "shell it" changes worktree two with sed, rm and mv in one Bash call."""
    return {
        "rules": [
            {"match": "edit it", "tool": "Read", "input": {"file_path": str(one / "app.txt")}},
            {
                "match": "write notes",
                "tool": "Write",
                "input": {"file_path": str(one / "notes.txt"), "content": "written\n"},
            },
            {
                "match": "shell it",
                "tool": "Bash",
                "input": {
                    "command": "sed -i 's/alpha/alpha from shell/' app.txt && rm gone.txt"
                    " && mv old.txt moved.txt",
                    "description": "change files",
                },
            },
            {
                "match": "git merge main",
                "tool": "Bash",
                "input": {
                    "command": "git merge main >/dev/null; printf '"
                    + RESOLVED.replace("\n", "\\n")
                    + "' > app.txt && git add app.txt && git commit -q --no-edit",
                    "description": "merge main and resolve",
                },
            },
        ],
        "after_tool_rules": [
            {
                "match": "alpha\n",
                "tool": "Edit",
                "input": {
                    "file_path": str(one / "app.txt"),
                    "old_string": "alpha",
                    "new_string": "alpha from edit",
                },
            },
        ],
    }


async def changes_of(client: httpx.AsyncClient, sid: str) -> dict[str, Any]:
    """path -> (status, additions, deletions, old path), as the Changes view has them from git."""
    r = await client.get(f"/api/sessions/{sid}/changes")
    assert r.status_code == 200, r.text
    assert r.json()["source"] == "git"
    return {
        f["path"]: (f["status"], f["additions"], f["deletions"], f["old_path"])
        for f in r.json()["files"]
    }


async def worktree_session(
    client: httpx.AsyncClient, profile_id: str, title: str
) -> dict[str, Any]:
    r = await client.post(
        "/api/sessions", json={"profile_id": profile_id, "title": title, "worktree": True}
    )
    assert r.status_code == 201, r.text
    session: dict[str, Any] = r.json()
    return session


async def test_two_sessions_work_apart_in_worktrees_of_one_repository(
    client: httpx.AsyncClient,
    repo: Path,
    claude_bin: Path,
    claude_env: dict[str, str],
    fake_model: FakeModelServer,
) -> None:
    before = {
        "refs": git(repo, "for-each-ref", "--format=%(refname) %(objectname)"),
        "stash": git(repo, "stash", "list"),
        "status": git(repo, "status", "--porcelain"),
    }
    r = await client.post("/api/profiles", json=claude_profile_body(repo, claude_bin, claude_env))
    assert r.status_code == 201, r.text
    profile_id = r.json()["id"]
    one = await worktree_session(client, profile_id, "Edit the app")
    two = await worktree_session(client, profile_id, "Shell the app")
    path_one, path_two = Path(one["worktree"]["path"]), Path(two["worktree"]["path"])
    fake_model.set_rules(tools_rules(path_one, path_two))

    await send(client, one["id"], "edit it")
    await send(client, two["id"], "shell it")
    await allow_all(client, one["id"], 1)
    await allow_all(client, two["id"], 1)
    await send(client, one["id"], "write notes")
    await allow_all(client, one["id"], 2)

    assert (path_one / "app.txt").read_text() == "alpha from edit\nbeta\ngamma\n"
    assert (path_one / "notes.txt").read_text() == "written\n"
    assert (path_one / "gone.txt").exists() and (path_one / "old.txt").exists()
    assert (path_two / "app.txt").read_text() == "alpha from shell\nbeta\ngamma\n"
    assert not (path_two / "gone.txt").exists() and not (path_two / "notes.txt").exists()
    assert (path_two / "moved.txt").read_text() == "to be moved\n"
    # Each Changes view is the repository's truth for that worktree alone.
    mine = await changes_of(client, one["id"])
    assert mine == {"app.txt": ("edited", 1, 1, None), "notes.txt": ("created", 1, 0, None)}
    theirs = await changes_of(client, two["id"])
    assert theirs == {
        "app.txt": ("edited", 1, 1, None),
        "gone.txt": ("deleted", 0, 1, None),
        "moved.txt": ("renamed", 0, 0, "old.txt"),
    }

    # The first merges fast-forward into main, and the user's checkout follows it.
    r = await client.post(f"/api/sessions/{one['id']}/commit", json={"message": "Edit the app"})
    assert r.status_code == 201, r.text
    r = await client.post(f"/api/sessions/{one['id']}/merge", json={"strategy": "ff"})
    assert r.status_code == 200, r.text
    assert (repo / "app.txt").read_text() == "alpha from edit\nbeta\ngamma\n"
    assert git(repo, "rev-parse", "main").strip() == r.json()["commit"]

    # The second now conflicts: 409 with the file, and nothing changed anywhere.
    r = await client.post(f"/api/sessions/{two['id']}/commit", json={"message": "Shell it"})
    assert r.status_code == 201, r.text
    snapshot = {
        "refs": git(repo, "for-each-ref"),
        "status": git(repo, "status", "--porcelain"),
        "worktrees": git(repo, "worktree", "list", "--porcelain"),
        "app": (repo / "app.txt").read_text(),
        "two": git(path_two, "status", "--porcelain"),
    }
    r = await client.post(f"/api/sessions/{two['id']}/merge", json={"strategy": "merge"})
    assert r.status_code == 409, r.text
    assert (r.json()["reason"], r.json()["files"]) == ("conflict", ["app.txt"])
    assert snapshot == {
        "refs": git(repo, "for-each-ref"),
        "status": git(repo, "status", "--porcelain"),
        "worktrees": git(repo, "worktree", "list", "--porcelain"),
        "app": (repo / "app.txt").read_text(),
        "two": git(path_two, "status", "--porcelain"),
    }

    # Asked to resolve, the agent merges main into its branch and commits; then it merges.
    r = await client.post(f"/api/sessions/{two['id']}/resolve")
    assert r.status_code == 202, r.text
    await allow_all(client, two["id"], 2)
    assert (path_two / "app.txt").read_text() == RESOLVED
    r = await client.post(f"/api/sessions/{two['id']}/merge", json={"strategy": "merge"})
    assert r.status_code == 200, r.text
    assert (repo / "app.txt").read_text() == RESOLVED
    assert not (repo / "gone.txt").exists() and (repo / "moved.txt").exists()

    # Discarded once merged, it takes only its own folder and branch with it.
    r = await client.post(f"/api/sessions/{two['id']}/discard", json={})
    assert r.status_code == 200, r.text
    assert not path_two.exists()
    assert two["worktree"]["branch"] not in git(repo, "branch", "--list")
    worktrees = git(repo, "worktree", "list")
    assert str(path_one) in worktrees and str(repo.parent / "mine") in worktrees

    # The user's branches (main aside), stash and own worktree are as they were.
    assert git(repo, "status", "--porcelain") == before["status"]
    assert git(repo, "stash", "list") == before["stash"]
    refs = git(repo, "for-each-ref", "--format=%(refname) %(objectname)")

    def others(listing: str) -> list[str]:
        """Every ref but main (which the merges moved) and the sessions' own branches."""
        return [
            line
            for line in listing.splitlines()
            if not line.startswith(("refs/heads/main ", "refs/heads/angelia/"))
        ]

    assert others(refs) == others(before["refs"])
    assert len(others(refs)) == 3  # feature-x, mine and the stash


async def test_a_restart_resumes_a_worktree_session_in_its_worktree(
    settings: Settings,
    server: LiveServer,
    client: httpx.AsyncClient,
    repo: Path,
    claude_bin: Path,
    claude_env: dict[str, str],
    fake_model: FakeModelServer,
) -> None:
    """The real CLI keeps its transcript under the folder it ran in: a new server process
    resumes the conversation in the session's worktree, with its history."""
    r = await client.post("/api/profiles", json=claude_profile_body(repo, claude_bin, claude_env))
    made = await worktree_session(client, r.json()["id"], "Remember a word")
    sid, path = made["id"], Path(made["worktree"]["path"])
    await send(client, sid, "say hi, and remember the word apricot")
    await wait_for_events(client, sid, count("turn_end"))
    assert Path(f"/proc/{backend_pid(server, sid)}/cwd").resolve() == path.resolve()
    await server.stop()

    restarted = LiveServer(create_app(settings))
    await restarted.start()
    try:
        async with restarted.client() as again:
            before = len(fake_model.message_requests())
            await send(again, sid, "say again")
            events = await wait_for_events(again, sid, count("turn_end", 2))
            assert not of_kind(events, "error"), of_kind(events, "error")
            pid = backend_pid(restarted, sid)
            argv, _ = proc_identity(pid)
            assert any(a.startswith("--resume=") for a in argv), argv
            assert Path(f"/proc/{pid}/cwd").resolve() == path.resolve()
    finally:
        await restarted.stop()
    resumed = [e for e in fake_model.message_requests()[before:] if "say again" in request_texts(e)]
    assert resumed
    history = "\n".join(request_texts(resumed[-1]))
    for said in ("remember the word apricot", "hello from fake", "say again"):
        assert said in history, history
