"""What the finish panel offers, through the API with the real ``git`` and the fake claude:
only the merge strategies possible now (with why not for the others), a fast-forward the
base has outgrown refused with nothing changed, the uncommitted files counted as the
Changes tab counts them (a rename once), and a commit message suggested from the
session's task rather than from the agent's last reply."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.api.test_chat import make_profile
from tests.api.test_finish import commit_edit, everything, make_repo, new_session
from tests.conftest import write_scenario
from tests.helpers import count, send, wait_for_events
from tests.services.git.conftest import commit_all, git


@pytest.fixture
def repo(project_dir: Path) -> Path:
    return make_repo(project_dir)


def main_moves_on(repo: Path, commits: int) -> None:
    """The user commits on main meanwhile, in files the session does not touch."""
    for i in range(commits):
        (repo / f"user-{i}.txt").write_text(f"the user's {i}\n")
        commit_all(repo, f"user's work {i}")


async def test_a_fast_forward_the_base_has_outgrown_is_not_offered(
    client: httpx.AsyncClient, repo: Path, fake_claude: dict[str, Any]
) -> None:
    session = await new_session(client, await make_profile(client, repo, fake_claude), "Notes")
    await commit_edit(client, session, "notes.txt", "from the session\n")
    main_moves_on(repo, 2)

    info = (await client.get(f"/api/sessions/{session['id']}/worktree")).json()
    assert (info["ahead"], info["behind"], info["conflicts"]) == (1, 2, [])
    ways = {w["strategy"]: (w["possible"], w["why_not"]) for w in info["strategies"]}
    assert ways == {
        "ff": (False, "main has 2 commits this branch does not"),
        "merge": (True, ""),
        "squash": (True, ""),
    }


async def test_a_fast_forward_the_base_has_outgrown_is_refused_with_nothing_changed(
    client: httpx.AsyncClient, repo: Path, fake_claude: dict[str, Any]
) -> None:
    session = await new_session(client, await make_profile(client, repo, fake_claude), "Notes")
    sid, path = session["id"], Path(session["worktree"]["path"])
    await commit_edit(client, session, "notes.txt", "from the session\n")
    main_moves_on(repo, 2)

    before = everything(repo, path)
    r = await client.post(f"/api/sessions/{sid}/merge", json={"strategy": "ff"})
    assert r.status_code == 409, r.text
    assert (r.json()["reason"], r.json()["strategy"]) == ("not_possible", "ff")
    assert "main has 2 commits this branch does not" in r.json()["detail"]
    assert "nothing was changed" in r.json()["detail"]
    r = await client.post(f"/sessions/{sid}/finish/merge", data={"strategy": "ff"})
    assert r.status_code == 303 and "finish_error" in r.headers["location"]
    assert everything(repo, path) == before

    # A possible one still works afterwards: nothing was left half done.
    r = await client.post(f"/api/sessions/{sid}/merge", json={"strategy": "merge"})
    assert r.status_code == 200, r.text
    assert (repo / "notes.txt").read_text() == "from the session\n"
    assert git(repo, "status", "--porcelain") == ""
    after = (await client.get(f"/api/sessions/{sid}/worktree")).json()
    assert after["merged"] is True and after["strategies"] == []


async def two_editing_one_file(
    client: httpx.AsyncClient, repo: Path, fake_claude: dict[str, Any]
) -> tuple[dict[str, Any], dict[str, Any]]:
    """Two sessions that each committed their own f.txt; none merged yet."""
    pid = await make_profile(client, repo, fake_claude)
    first, second = [await new_session(client, pid, t) for t in ("One", "Two")]
    await commit_edit(client, first, "f.txt", "one's\n")
    await commit_edit(client, second, "f.txt", "two's\n")
    return first, second


async def merge_ff(client: httpx.AsyncClient, session: dict[str, Any]) -> None:
    r = await client.post(f"/api/sessions/{session['id']}/merge", json={"strategy": "ff"})
    assert r.status_code == 200, r.text


async def test_counts_of_one_read_in_the_singular(
    client: httpx.AsyncClient, repo: Path, fake_claude: dict[str, Any]
) -> None:
    first, second = await two_editing_one_file(client, repo, fake_claude)
    r = await client.post(f"/api/sessions/{second['id']}/discard")
    assert r.status_code == 409 and "has 1 commit not merged into main" in r.json()["detail"]
    await merge_ff(client, first)
    r = await client.post(f"/api/sessions/{second['id']}/merge", json={"strategy": "merge"})
    assert r.status_code == 409 and "conflicts with main in 1 file: f.txt" in r.json()["detail"]
    r = await client.post(f"/api/sessions/{second['id']}/merge", json={"strategy": "ff"})
    assert r.status_code == 409 and "main has 1 commit this branch does not" in r.json()["detail"]
    assert "(s)" not in r.text


async def test_conflicts_leave_no_strategy_but_say_why(
    client: httpx.AsyncClient, repo: Path, fake_claude: dict[str, Any]
) -> None:
    first, second = await two_editing_one_file(client, repo, fake_claude)
    await merge_ff(client, first)

    info = (await client.get(f"/api/sessions/{second['id']}/worktree")).json()
    assert info["conflicts"] == ["f.txt"]
    ways = {w["strategy"]: (w["possible"], w["why_not"]) for w in info["strategies"]}
    assert ways == {
        "ff": (False, "main has 1 commit this branch does not"),
        "merge": (False, "1 file conflicts with main (f.txt)"),
        "squash": (False, "1 file conflicts with main (f.txt)"),
    }
    r = await client.post(f"/api/sessions/{second['id']}/merge", json={"strategy": "squash"})
    assert r.status_code == 409 and r.json()["reason"] == "conflict"


async def test_a_rename_is_one_uncommitted_file_as_on_the_changes_tab(
    client: httpx.AsyncClient, repo: Path, fake_claude: dict[str, Any]
) -> None:
    (repo / "old.txt").write_text("".join(f"line {i}\n" for i in range(20)))
    commit_all(repo, "a file to rename")
    session = await new_session(client, await make_profile(client, repo, fake_claude), "Move")
    sid, path = session["id"], Path(session["worktree"]["path"])
    (path / "old.txt").rename(path / "new.txt")  # as ``mv`` would: git sees a rename only
    (path / "f.txt").write_text("edited\n")  # when it compares trees
    (path / "added.txt").write_text("added\n")

    info = (await client.get(f"/api/sessions/{sid}/worktree")).json()
    assert info["dirty"] == ["added.txt", "f.txt", "new.txt"]
    changes = (await client.get(f"/api/sessions/{sid}/changes")).json()
    assert sorted(f["path"] for f in changes["files"]) == info["dirty"]
    # Discarding is refused naming the same three (and loses nothing without a tick).
    r = await client.post(f"/api/sessions/{sid}/discard")
    assert r.status_code == 409 and r.json()["files"] == info["dirty"]
    assert path.is_dir()


async def test_the_suggested_message_is_the_sessions_task_not_its_last_reply(
    client: httpx.AsyncClient, repo: Path, fake_claude: dict[str, Any]
) -> None:
    write_scenario(
        fake_claude["scenario"],
        [
            [{"text": "Added the --verbose flag; it prints each file."}],
            [{"text": "Good point, I have renamed the variable as you suggested."}],
        ],
    )
    pid = await make_profile(client, repo, fake_claude)
    r = await client.post("/api/sessions", json={"profile_id": pid, "worktree": True})
    assert r.status_code == 201, r.text
    sid = r.json()["id"]
    task = "Add a --verbose flag to the CLI\n\nIt should print each file as it is processed."
    await send(client, sid, task)
    await wait_for_events(client, sid, count("turn_end"))
    await send(client, sid, "Review: call the variable `verbose`, not `v`.")
    await wait_for_events(client, sid, count("turn_end", 2))

    info = (await client.get(f"/api/sessions/{sid}/worktree")).json()
    assert info["suggested_message"] == (
        "Add a --verbose flag to the CLI\n\nIt should print each file as it is processed."
    )


async def test_a_long_task_gives_one_short_subject_line_and_a_short_body(
    client: httpx.AsyncClient, repo: Path, fake_claude: dict[str, Any]
) -> None:
    write_scenario(fake_claude["scenario"], [[{"text": "Done."}]])
    pid = await make_profile(client, repo, fake_claude)
    sid = (await client.post("/api/sessions", json={"profile_id": pid, "worktree": True})).json()[
        "id"
    ]
    task = "Make the importer skip rows whose date cannot be parsed " + "and log them " * 60
    await send(client, sid, task)
    await wait_for_events(client, sid, count("turn_end"))

    message = (await client.get(f"/api/sessions/{sid}/worktree")).json()["suggested_message"]
    subject, blank, *body = message.split("\n")
    assert len(subject) <= 72 and subject.startswith("Make the importer skip rows")
    assert subject.endswith("…") and blank == "" and 0 < len(body) <= 6
    assert all(len(line) <= 72 for line in body) and body[-1].endswith("…")
    assert "Done." not in message
