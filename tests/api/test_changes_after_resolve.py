"""After the agent resolves a conflict by merging the base into its branch, the Changes tab
(API and page, over real HTTP with the real ``git``) shows what merging would bring into
the base: the diff from the merge base of the two branches, not from where the worktree
started, so the other session's work merged meanwhile is not listed as this one's, and
the page names the commit it compares with."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx
import pytest
from bs4 import BeautifulSoup

from tests.api.test_chat import make_profile
from tests.api.test_finish import commit_edit, new_session
from tests.conftest import write_scenario
from tests.helpers import count, wait_for_events
from tests.services.git.conftest import git, init_repo


@pytest.fixture
def repo(project_dir: Path) -> Path:
    return init_repo(project_dir, {"config.ini": "color=red\n", "f.txt": "one\n"})


async def merge(client: httpx.AsyncClient, session: dict[str, Any], strategy: str) -> int:
    r = await client.post(f"/api/sessions/{session['id']}/merge", json={"strategy": strategy})
    return r.status_code


def merge_main_keeping(worktree: Path, name: str, text: str) -> None:
    """What the agent does when asked to resolve: merge main in, keep its side, commit."""
    git(worktree, "merge", "--no-edit", "main", check=False)
    assert git(worktree, "diff", "--name-only", "--diff-filter=U") == f"{name}\n"
    (worktree / name).write_text(text)
    git(worktree, "add", name)
    git(worktree, "commit", "-q", "--no-edit")


async def test_changes_after_the_agent_merged_main_in_are_what_merging_brings(
    client: httpx.AsyncClient, repo: Path, fake_claude: dict[str, Any]
) -> None:
    write_scenario(fake_claude["scenario"], [[{"text": "resolving"}]])
    pid = await make_profile(client, repo, fake_claude)
    first = await new_session(client, pid, "Blue")
    second = await new_session(client, pid, "Green")
    (Path(first["worktree"]["path"]) / "first-only.txt").write_text("the first session's\n")
    await commit_edit(client, first, "config.ini", "color=blue\n")
    assert await merge(client, first, "ff") == 200
    await commit_edit(client, second, "config.ini", "color=green\n")
    assert await merge(client, second, "merge") == 409

    sid, wt = second["id"], Path(second["worktree"]["path"])
    r = await client.post(f"/api/sessions/{sid}/resolve")
    assert r.status_code == 202, r.text
    await wait_for_events(client, sid, count("turn_end"))
    merge_main_keeping(wt, "config.ini", "color=green\n")
    (wt / "notes.md").write_text("not committed yet\n")
    met = git(repo, "merge-base", second["worktree"]["branch"], "main").strip()
    assert met == git(repo, "rev-parse", "main").strip() != second["worktree"]["base_commit"]

    r = await client.get(f"/api/sessions/{sid}/changes")
    assert r.status_code == 200, r.text
    body = r.json()
    files = {f["path"]: f for f in body["files"]}
    assert sorted(files) == ["config.ini", "notes.md"]
    assert (files["config.ini"]["status"], files["notes.md"]["status"]) == ("edited", "created")
    assert "-color=blue\n+color=green\n" in files["config.ini"]["diff"]
    assert "red" not in files["config.ini"]["diff"]
    assert (body["source"], body["base"], body["target"], body["merge_base"]) == (
        "git",
        met,
        "main",
        True,
    )
    assert body["note"] is None

    r = await client.get(f"/sessions/{sid}/changes")
    assert r.status_code == 200, r.text
    page = BeautifulSoup(r.text, "html.parser")
    said = page.select_one("#changes-source")
    assert said is not None
    assert f"Compared with main at {met[:7]} (merge base)" in " ".join(said.get_text().split())
    shown = page.select_one("#changes-base")
    assert shown is not None and shown["data-base"] == met
    listed = [s["data-path"] for s in page.select("section.file-change")]
    assert listed == ["config.ini", "notes.md"]
    lines = page.select("section.file-change[data-path='config.ini'] pre.diff span")
    changed = [s.get_text() for s in lines if s.get_text()[:1] in "+-"]
    assert "-color=blue" in changed and "+color=green" in changed
    assert not any("red" in line for line in changed)

    # The board counts the same files.
    cards = (await client.get("/api/board")).json()
    card = next(c for c in cards if c["id"] == sid)
    assert card["worktree"]["files_changed"] == 2

    # And it is what the merge then brings: main gains exactly config.ini's green.
    assert await merge(client, second, "ff") == 200
    assert (repo / "config.ini").read_text() == "color=green\n"


async def test_without_its_target_branch_the_start_commit_is_used_and_said(
    client: httpx.AsyncClient, repo: Path, fake_claude: dict[str, Any]
) -> None:
    pid = await make_profile(client, repo, fake_claude)
    session = await new_session(client, pid, "Orphaned")
    await commit_edit(client, session, "config.ini", "color=green\n")
    git(repo, "switch", "-q", "-c", "trunk")
    git(repo, "branch", "-q", "-D", "main")

    body = (await client.get(f"/api/sessions/{session['id']}/changes")).json()
    assert (body["base"], body["merge_base"]) == (session["worktree"]["base_commit"], False)
    assert "no longer exists" in body["note"]
    assert [f["path"] for f in body["files"]] == ["config.ini"]
    r = await client.get(f"/sessions/{session['id']}/changes")
    page = BeautifulSoup(r.text, "html.parser")
    said = page.select_one("#changes-source")
    assert said is not None and "no longer exists" in said.get_text()
