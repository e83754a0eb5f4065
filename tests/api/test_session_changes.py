"""GET /api/sessions/{id}/changes against real repositories: a session in a worktree sees
everything since its base commit (shell commands and commits included), a session in a
plain git folder everything since it started, and outside git what its tools wrote."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.api.test_chat import make_profile
from tests.conftest import write_scenario
from tests.helpers import count, send, wait_for_events
from tests.services.git.conftest import git, init_repo, sh


def make_repo(folder: Path) -> Path:
    """``folder`` as a repository on ``main``: a few committed files, an ignored ``.env``."""
    files = {
        "f.txt": "one\ntwo\nthree\n",
        "gone.txt": "to be removed\n",
        "old.txt": "".join(f"line {i}\n" for i in range(40)),
        ".gitignore": ".env\n",
        ".env": "TOKEN=local\n",
    }
    return init_repo(folder, files)


@pytest.fixture
def repo(project_dir: Path) -> Path:
    return make_repo(project_dir)


async def new_session(client: httpx.AsyncClient, pid: str, *, worktree: bool) -> dict[str, Any]:
    r = await client.post("/api/sessions", json={"profile_id": pid, "worktree": worktree})
    assert r.status_code == 201, r.text
    made: dict[str, Any] = r.json()
    return made


async def write_with_the_tool(
    client: httpx.AsyncClient, fake: dict[str, Any], sid: str, files: dict[Path, str]
) -> None:
    """The agent's Write tool writes ``files``: the fake claude reports each call, and the
    file is on disk before its result, as the real CLI leaves it."""
    steps: list[dict[str, Any]] = [
        {"tool": "Write", "input": {"file_path": str(path), "content": content}}
        for path, content in files.items()
    ]
    write_scenario(fake["scenario"], [[*steps, {"text": "done"}]])
    for path, content in files.items():
        path.write_text(content)
    await send(client, sid, "write them")
    await wait_for_events(client, sid, count("turn_end"))


async def changes(client: httpx.AsyncClient, sid: str) -> dict[str, Any]:
    r = await client.get(f"/api/sessions/{sid}/changes")
    assert r.status_code == 200, r.text
    body: dict[str, Any] = r.json()
    return body


def summary(body: dict[str, Any]) -> dict[str, tuple[Any, ...]]:
    return {
        f["path"]: (
            f["status"],
            f["old_path"],
            f["additions"],
            f["deletions"],
            f["changed_outside"],
        )
        for f in body["files"]
    }


async def test_a_worktree_session_sees_everything_since_its_base(
    client: httpx.AsyncClient, repo: Path, fake_claude: dict[str, Any]
) -> None:
    made = await new_session(client, await make_profile(client, repo, fake_claude), worktree=True)
    wt = Path(made["worktree"]["path"])
    await write_with_the_tool(client, fake_claude, made["id"], {wt / "new.py": "print('hi')\n"})
    # What the agent's shell commands do, in the worktree.
    sh(wt, "sed -i 's/two/TWO/' f.txt && rm gone.txt && mv old.txt moved.txt")
    sh(wt, "echo note > notes.md")
    sh(wt, "echo c > committed.txt && git add committed.txt && git commit -qm 'add committed'")

    body = await changes(client, made["id"])
    assert (body["source"], body["base"]) == ("git", made["worktree"]["base_commit"])
    assert body["cwd"] == body["root"] == str(wt)
    assert summary(body) == {
        "committed.txt": ("created", None, 1, 0, False),
        "f.txt": ("edited", None, 1, 1, False),
        "gone.txt": ("deleted", None, 0, 1, False),
        "moved.txt": ("renamed", "old.txt", 0, 0, False),
        "new.py": ("created", None, 1, 0, False),
        "notes.md": ("created", None, 1, 0, False),
    }
    files = {f["path"]: f for f in body["files"]}
    assert "-two\n+TWO\n" in files["f.txt"]["diff"]
    assert files["new.py"]["steps"] == 1 and files["f.txt"]["steps"] == 0
    assert not any(f["binary"] or f["truncated"] for f in body["files"])
    # Reading it changed nothing in the user's checkout.
    assert git(repo, "status", "--porcelain") == ""


async def test_two_worktree_sessions_each_see_only_their_own(
    client: httpx.AsyncClient, repo: Path, fake_claude: dict[str, Any]
) -> None:
    pid = await make_profile(client, repo, fake_claude)
    first = await new_session(client, pid, worktree=True)
    second = await new_session(client, pid, worktree=True)
    sh(Path(first["worktree"]["path"]), "sed -i 's/one/first/' f.txt")
    sh(Path(second["worktree"]["path"]), "echo second >> f.txt")

    one, two = await changes(client, first["id"]), await changes(client, second["id"])
    assert summary(one) == {"f.txt": ("edited", None, 1, 1, False)}
    assert summary(two) == {"f.txt": ("edited", None, 1, 0, False)}
    assert "+first" in one["files"][0]["diff"] and "second" not in one["files"][0]["diff"]
    assert "+second" in two["files"][0]["diff"] and "first" not in two["files"][0]["diff"]


async def test_a_plain_git_folder_is_read_against_its_snapshot(
    client: httpx.AsyncClient, repo: Path, fake_claude: dict[str, Any]
) -> None:
    # The folder is not clean when the session starts: none of this is the session's.
    sh(repo, "echo before >> f.txt && echo early > before.txt")
    made = await new_session(client, await make_profile(client, repo, fake_claude), worktree=False)
    assert made["worktree"] is None
    await write_with_the_tool(
        client, fake_claude, made["id"], {repo / "own.py": "x = 1\n", repo / ".env": "TOKEN=new\n"}
    )
    sh(repo, "echo later >> f.txt")

    body = await changes(client, made["id"])
    assert body["source"] == "snapshot", body["note"]
    assert git(repo, "cat-file", "-t", body["base"]).strip() == "tree"
    assert summary(body) == {
        # Changed after the session started, by no tool of it: shown, marked.
        "f.txt": ("edited", None, 1, 0, True),
        "own.py": ("created", None, 1, 0, False),
        # Ignored by git, written by the session's tool: still listed, from the tools.
        ".env": ("edited", None, 0, 0, False),
    }
    f = next(f for f in body["files"] if f["path"] == "f.txt")
    assert "+later" in f["diff"] and "+before" not in f["diff"] and f["steps"] == 0


async def test_a_snapshot_git_no_longer_has_falls_back_to_the_tools(
    client: httpx.AsyncClient, repo: Path, fake_claude: dict[str, Any]
) -> None:
    sh(repo, "echo dirty >> f.txt")  # so the snapshot is a tree no commit holds
    made = await new_session(client, await make_profile(client, repo, fake_claude), worktree=False)
    git(repo, "reflog", "expire", "--expire=now", "--all")
    git(repo, "gc", "-q", "--prune=now")
    sh(repo, "echo later >> f.txt")

    body = await changes(client, made["id"])
    assert (body["source"], body["base"], body["files"]) == ("tools", None, [])
    assert "could not be read with git" in body["note"]
    assert "no longer in the repository" in body["note"]


async def test_outside_git_it_is_read_against_a_private_snapshot(
    client: httpx.AsyncClient, project_dir: Path, fake_claude: dict[str, Any]
) -> None:
    made = await new_session(
        client, await make_profile(client, project_dir, fake_claude), worktree=False
    )
    await write_with_the_tool(client, fake_claude, made["id"], {project_dir / "a.py": "a = 1\n"})
    sh(project_dir, "echo shell > b.txt")

    body = await changes(client, made["id"])
    assert (body["source"], body["note"]) == ("snapshot", None)
    # The tool's file, and the shell's (by no tool of the session: marked).
    assert summary(body) == {
        "a.py": ("created", None, 1, 0, False),
        "b.txt": ("created", None, 1, 0, True),
    }


async def test_a_session_in_a_subfolder_names_files_from_the_repositorys_top(
    client: httpx.AsyncClient, repo: Path, fake_claude: dict[str, Any]
) -> None:
    sub = repo / "sub"
    sub.mkdir()
    made = await new_session(client, await make_profile(client, sub, fake_claude), worktree=False)
    await write_with_the_tool(
        client, fake_claude, made["id"], {sub / "own.py": "x = 1\n", sub / ".env": "A=1\n"}
    )
    sh(repo, "echo later >> f.txt")

    body = await changes(client, made["id"])
    assert (body["source"], body["cwd"], body["root"]) == ("snapshot", str(sub), str(repo))
    assert summary(body) == {
        "f.txt": ("edited", None, 1, 0, True),
        "sub/own.py": ("created", None, 1, 0, False),
        "sub/.env": ("edited", None, 0, 0, False),
    }


async def test_a_huge_file_is_listed_as_too_big_and_never_read(
    client: httpx.AsyncClient, repo: Path, fake_claude: dict[str, Any]
) -> None:
    pid = await make_profile(client, repo, fake_claude)
    made = await new_session(client, pid, worktree=True)
    worktree = Path(made["worktree"]["path"])
    # Sparse files: 1 GiB to git, no disk used. One new, one tracked that grew.
    sh(worktree, "truncate -s 1G huge.bin old.txt && echo more >> f.txt")

    board = (await client.get("/api/board")).json()
    card = next(c for c in board if c["id"] == made["id"])
    assert card["worktree"]["files_changed"] == 3 and card["worktree"]["dirty"] is True

    r = await client.get(f"/api/sessions/{made['id']}/changes")
    assert r.status_code == 200, r.text
    files = {f["path"]: f for f in r.json()["files"]}
    assert set(files) == {"f.txt", "huge.bin", "old.txt"}
    for path, status in (("huge.bin", "created"), ("old.txt", "edited")):
        assert files[path]["status"] == status and files[path]["too_big"] == 1024**3
        assert files[path]["binary"] is True and files[path]["diff"] == ""
    assert files["f.txt"]["additions"] == 1 and files["f.txt"]["too_big"] is None
    page = await client.get(f"/sessions/{made['id']}/changes")
    assert "too big to diff (1.0 GiB)" in page.text

    # git never read it: no object of its size was written, and the store stays small.
    objects = git(repo, "cat-file", "--batch-all-objects", "--batch-check=%(objectsize)")
    assert str(1024**3) not in objects.split()
    store = sum(p.stat().st_size for p in (repo / ".git" / "objects").rglob("*") if p.is_file())
    assert store < 1024 * 1024
