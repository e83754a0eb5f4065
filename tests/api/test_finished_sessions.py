"""Forks, continuations and finished worktree sessions over real HTTP, the real ``git`` and
the fake claude (which records each start's cwd and argv): a session made in a worktree is
followed in a worktree of its own, never in the user's checkout; once its worktree is
discarded or cleaned up it is read-only (nothing sent, forked, continued or listed), and its
Changes are its own recorded ones, never the checkout's."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest
from bs4 import BeautifulSoup

from tests.api.test_chat import make_profile
from tests.api.test_finish import commit_edit, make_repo, new_session
from tests.conftest import write_scenario
from tests.faults._support import fake_starts
from tests.helpers import count, send, wait_for_events
from tests.services.git.conftest import git


@pytest.fixture
def repo(project_dir: Path) -> Path:
    return make_repo(project_dir)


def cwds(fake: dict[str, Any]) -> list[Path]:
    return [Path(s["cwd"]).resolve() for s in fake_starts(fake)]


async def talked(client: httpx.AsyncClient, fake: dict[str, Any], repo: Path) -> dict[str, Any]:
    """A worktree session whose agent answered once and whose branch has one commit."""
    write_scenario(fake["scenario"], [[{"text": "first"}], [{"text": "second"}]])
    pid = await make_profile(client, repo, fake)
    made = await new_session(client, pid, "Parent")
    await send(client, made["id"], "hello")
    await wait_for_events(client, made["id"], count("turn_end"))
    await commit_edit(client, made, "made.txt", "by the parent\n")
    return made


async def test_a_fork_works_in_a_worktree_of_its_own_from_the_parents_branch_head(
    client: httpx.AsyncClient, repo: Path, fake_claude: dict[str, Any]
) -> None:
    parent = await talked(client, fake_claude, repo)
    branch = parent["worktree"]["branch"]
    head = git(repo, "rev-parse", branch).strip()
    before = (await client.get(f"/api/sessions/{parent['id']}")).json()

    r = await client.post(f"/api/sessions/{parent['id']}/fork")
    assert r.status_code == 201, r.text
    fork = r.json()
    wt = fork["worktree"]
    assert wt is not None, fork
    assert wt["branch"].startswith("angelia/") and wt["branch"] != branch
    assert (wt["base"], wt["base_commit"]) == (branch, head)
    path = Path(wt["path"])
    assert path != Path(parent["worktree"]["path"]) and path.resolve() != repo.resolve()
    assert (path / "made.txt").read_text() == "by the parent\n"
    assert fork["forked_from"] == before["backend_session_id"]

    await send(client, fork["id"], "go on")
    await wait_for_events(client, fork["id"], count("turn_end", 2))
    last = fake_starts(fake_claude)[-1]
    assert "--fork-session" in last["argv"]
    assert Path(last["cwd"]).resolve() == path.resolve()
    assert repo.resolve() not in cwds(fake_claude)
    assert git(repo, "status", "--porcelain") == ""

    # A continuation of a live worktree session gets one of its own too.
    r = await client.post(f"/api/sessions/{parent['id']}/continue")
    assert r.status_code == 201, r.text
    cont = r.json()
    assert cont["worktree"]["base"] == branch
    assert cont["worktree"]["path"] not in (wt["path"], parent["worktree"]["path"])
    write_scenario(fake_claude["scenario"], [[{"text": "fresh"}]])
    await send(client, cont["id"], "start over")
    await wait_for_events(client, cont["id"], count("turn_end"))
    assert cwds(fake_claude)[-1] == Path(cont["worktree"]["path"]).resolve()
    assert repo.resolve() not in cwds(fake_claude)


async def test_a_discarded_session_is_read_only_and_keeps_its_own_changes(
    client: httpx.AsyncClient, repo: Path, fake_claude: dict[str, Any]
) -> None:
    made = await talked(client, fake_claude, repo)
    sid, branch = made["id"], made["worktree"]["branch"]
    r = await client.post(f"/api/sessions/{sid}/discard", json={"confirm": True})
    assert r.status_code == 200, r.text
    # The user's checkout has work of its own, which is not the session's.
    (repo / "checkout.txt").write_text("the user's\n")
    (repo / "f.txt").write_text("edited by the user\n")

    events = (await client.get(f"/api/sessions/{sid}/events")).json()["events"]
    r = await client.post(f"/api/sessions/{sid}/messages", json={"text": "go on"})
    assert r.status_code == 409, r.text
    assert "was discarded on" in r.json()["detail"] and "read-only" in r.json()["detail"]
    r = await client.post(f"/sessions/{sid}/messages", data={"text": "go on"})
    assert r.status_code == 409 and "was discarded on" in r.text
    r = await client.post(f"/api/sessions/{sid}/compact")
    assert r.status_code == 409 and "was discarded on" in r.json()["detail"]
    soon = (datetime.now(UTC) + timedelta(hours=1)).isoformat()
    r = await client.post(f"/api/sessions/{sid}/resume-at", json={"at": soon})
    assert r.status_code == 409 and "was discarded on" in r.json()["detail"]
    after = (await client.get(f"/api/sessions/{sid}/events")).json()["events"]
    assert after == events

    r = await client.get(f"/api/sessions/{sid}/files", params={"q": "checkout"})
    assert r.status_code == 409 and "was discarded on" in r.json()["detail"]

    changes = (await client.get(f"/api/sessions/{sid}/changes")).json()
    assert [(f["path"], f["status"]) for f in changes["files"]] == [("made.txt", "created")]
    assert "+by the parent" in changes["files"][0]["diff"]
    assert not any(f["changed_outside"] for f in changes["files"])
    assert "was discarded on" in changes["note"]
    page = BeautifulSoup((await client.get(f"/sessions/{sid}/changes")).text, "html.parser")
    assert "was discarded on" in page.select_one("#changes-source").get_text()
    assert "changed outside" not in page.get_text()
    assert "checkout.txt" not in page.get_text()

    got = (await client.get(f"/api/sessions/{sid}")).json()
    assert got["worktree"] is None
    closed = got["worktree_closed"]
    assert (closed["state"], closed["branch"], closed["base"]) == ("discarded", branch, "main")
    assert closed["at"]

    for action in ("fork", "continue"):
        r = await client.post(f"/api/sessions/{sid}/{action}")
        assert r.status_code == 409, r.text
        assert "was discarded on" in r.json()["detail"]
    listed = (await client.get("/api/sessions")).json()
    assert len(listed) == 1
    assert repo.resolve() not in cwds(fake_claude)

    page = BeautifulSoup((await client.get(f"/sessions/{sid}")).text, "html.parser")
    banner = page.select_one("#closed-banner")
    assert banner is not None and banner["role"] == "status"
    assert f"worktree (branch {branch}) was discarded on" in banner.get_text()
    composer = page.select_one("#composer")
    assert composer.has_attr("data-closed") and not composer.has_attr("hx-post")
    assert composer.select_one("fieldset").has_attr("disabled")
    assert page.select_one("#mentions") is None
    assert page.select_one("form[action$='/fork']") is None


async def test_a_merged_and_cleaned_up_session_says_cleaned_up(
    client: httpx.AsyncClient, repo: Path, fake_claude: dict[str, Any]
) -> None:
    made = await talked(client, fake_claude, repo)
    sid, branch = made["id"], made["worktree"]["branch"]
    r = await client.post(f"/api/sessions/{sid}/merge", json={"strategy": "ff"})
    assert r.status_code == 200, r.text
    r = await client.post("/worktrees/clean-up")
    assert r.status_code == 303, r.text
    assert git(repo, "branch", "--list", branch) == ""

    r = await client.post(f"/api/sessions/{sid}/messages", json={"text": "more"})
    assert r.status_code == 409 and "cleaned up on" in r.json()["detail"]
    page = BeautifulSoup((await client.get(f"/sessions/{sid}")).text, "html.parser")
    text = page.select_one("#closed-banner").get_text()
    assert f"branch {branch} was merged into main and its worktree cleaned up on" in text
    assert "discarded" not in text
    assert "cleaned up" in page.select_one("#session-menu").get_text()
    changes = (await client.get(f"/api/sessions/{sid}/changes")).json()
    assert [f["path"] for f in changes["files"]] == ["made.txt"]
    got = (await client.get(f"/api/sessions/{sid}")).json()
    assert got["worktree_closed"]["state"] == "cleaned_up"
    assert repo.resolve() not in cwds(fake_claude)
