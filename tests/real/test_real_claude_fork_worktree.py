"""Forking a real Claude Code session made in a worktree, driven by the fake model: the fork
resumes the conversation with ``--resume … --fork-session`` in a new worktree of its own
(a branch from the parent's head), its first tool call runs there, and the user's checkout
is byte for byte as it was."""

from __future__ import annotations

import hashlib
from pathlib import Path

import httpx
import pytest

from tests.conftest import LiveServer
from tests.fakes.fake_model_server import FakeModelServer, request_texts
from tests.helpers import count, of_kind, send, wait_for_events
from tests.real.steps import backend_pid, claude_profile_body
from tests.real.test_real_claude_app import proc_identity
from tests.real.test_real_claude_images_rewind import allow_all
from tests.real.test_real_claude_worktrees import worktree_session
from tests.services.git.conftest import git, init_repo

pytestmark = pytest.mark.real_cli


def checkout_print(repo: Path) -> dict[str, str]:
    """Every file of the user's checkout (its .git aside) with a hash of its bytes, plus
    what git says of its branch and status."""
    seen = {
        str(p.relative_to(repo)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(repo.rglob("*"))
        if p.is_file() and ".git" not in p.relative_to(repo).parts
    }
    seen["<branch>"] = git(repo, "branch", "--show-current")
    seen["<status>"] = git(repo, "status", "--porcelain", "--untracked-files=all")
    seen["<head>"] = git(repo, "rev-parse", "HEAD")
    return seen


async def test_a_fork_of_a_worktree_session_works_in_its_own_worktree(
    server: LiveServer,
    client: httpx.AsyncClient,
    project_dir: Path,
    claude_bin: Path,
    claude_env: dict[str, str],
    fake_model: FakeModelServer,
) -> None:
    repo = init_repo(project_dir, {"app.txt": "alpha\n"})
    (repo / "mine.txt").write_text("the user's own, uncommitted\n")
    before = checkout_print(repo)
    r = await client.post("/api/profiles", json=claude_profile_body(repo, claude_bin, claude_env))
    assert r.status_code == 201, r.text
    parent = await worktree_session(client, r.json()["id"], "Parent")
    sid, parent_path = parent["id"], Path(parent["worktree"]["path"])
    await send(client, sid, "say hi, and remember the word apricot")
    await wait_for_events(client, sid, count("turn_end"))
    (parent_path / "parent.txt").write_text("committed by the parent\n")
    r = await client.post(f"/api/sessions/{sid}/commit", json={"message": "parent"})
    assert r.status_code == 201, r.text
    head = r.json()["commit"]

    r = await client.post(f"/api/sessions/{sid}/fork")
    assert r.status_code == 201, r.text
    fork = r.json()
    path = Path(fork["worktree"]["path"])
    assert fork["worktree"]["base"] == parent["worktree"]["branch"]
    assert fork["worktree"]["base_commit"] == head
    assert path.resolve() not in (repo.resolve(), parent_path.resolve())

    # The fork's first tool call: a shell command with a relative path, run where it is.
    fake_model.set_rules(
        {
            "rules": [
                {
                    "match": "where are you",
                    "tool": "Bash",
                    "input": {"command": "pwd > where.txt", "description": "say where"},
                }
            ]
        }
    )
    asked = len(fake_model.message_requests())
    await send(client, fork["id"], "where are you")
    events = await allow_all(client, fork["id"], 2)
    assert not of_kind(events, "error"), of_kind(events, "error")
    pid = backend_pid(server, fork["id"])
    argv, _ = proc_identity(pid)
    assert "--fork-session" in argv and any(a.startswith("--resume=") for a in argv), argv
    assert Path(f"/proc/{pid}/cwd").resolve() == path.resolve()
    assert Path((path / "where.txt").read_text().strip()).resolve() == path.resolve()
    assert (path / "parent.txt").read_text() == "committed by the parent\n"
    assert not (parent_path / "where.txt").exists()

    # The conversation came along: the fork's first request holds the parent's history.
    sent = [e for e in fake_model.message_requests()[asked:] if "where are you" in request_texts(e)]
    assert sent
    history = "\n".join(request_texts(sent[0]))
    assert "remember the word apricot" in history, history
    new_id = (await client.get(f"/api/sessions/{fork['id']}")).json()["backend_session_id"]
    assert new_id and new_id != parent.get("backend_session_id")

    assert checkout_print(repo) == before
