"""The worktrees page over real HTTP and the real ``git``: each session worktree with its
session, size and state (merged, unmerged, dirty, orphaned), the one clean-up button,
``git worktree prune`` for folders deleted by hand, and ``angelia doctor``'s line."""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any

import httpx
import pytest
from bs4 import BeautifulSoup

from app.services.profiles import doctor
from app.services.profiles.backends import BackendDetector
from app.settings import Settings
from tests.api.test_chat import make_profile
from tests.api.test_finish import commit_edit, make_repo, new_session
from tests.conftest import write_scenario
from tests.faults._support import fake_starts
from tests.helpers import count, send, wait_for_events
from tests.services.git.conftest import git


@pytest.fixture
def repo(project_dir: Path) -> Path:
    return make_repo(project_dir)


async def rows(client: httpx.AsyncClient, url: str = "/worktrees") -> dict[str, Any]:
    """The page's table: each worktree's folder name → (state, session cell, size cell)."""
    r = await client.get(url)
    assert r.status_code == 200, r.text
    soup = BeautifulSoup(r.text, "html.parser")
    found = {}
    for tr in soup.select("#worktrees tbody tr"):
        cells = tr.find_all("td")
        found[Path(tr["data-path"]).name] = (tr["data-state"], cells[1], cells[4].get_text())
    return {"rows": found, "soup": soup}


async def doctor_line(settings: Settings, tmp_path: Path) -> str:
    """The doctor's text line, checked against its JSON's count."""
    detector = BackendDetector(path=str(tmp_path / "no-bin"))
    report = await doctor.diagnose(settings, detector, profile=None)
    line = next(f.value for f in report.facts() if f.key == "session worktrees")
    counted = report.to_json()["session_worktrees"]
    assert line.startswith(f"{counted['count']} using ") and counted["bytes"] >= 0
    return line


async def test_states_sizes_clean_up_and_prune(
    client: httpx.AsyncClient,
    repo: Path,
    fake_claude: dict[str, Any],
    settings: Settings,
    tmp_path: Path,
) -> None:
    assert (await doctor_line(settings, tmp_path)).startswith("0 using 0 bytes")
    write_scenario(fake_claude["scenario"], [[{"text": "nothing"}]])
    pid = await make_profile(client, repo, fake_claude)
    made = {t: await new_session(client, pid, t) for t in ("merged", "unmerged", "dirty", "orphan")}
    path = {t: Path(s["worktree"]["path"]) for t, s in made.items()}
    await commit_edit(client, made["merged"], "m.txt", "merged\n")
    r = await client.post(f"/api/sessions/{made['merged']['id']}/merge", json={"strategy": "ff"})
    assert r.status_code == 200, r.text
    await commit_edit(client, made["unmerged"], "u.txt", "unmerged\n")
    (path["dirty"] / "d.txt").write_text("dirty\n")
    await commit_edit(client, made["orphan"], "o.txt", "left behind\n")
    assert (await client.delete(f"/api/sessions/{made['orphan']['id']}")).status_code == 204

    page = await rows(client)
    states = {name: row[0] for name, row in page["rows"].items()}
    assert states == {
        path["merged"].name: "merged",
        path["unmerged"].name: "unmerged",
        path["dirty"].name: "dirty",
        path["orphan"].name: "orphaned",
    }
    merged_session = page["rows"][path["merged"].name][1].find("a")
    assert merged_session["href"] == f"/sessions/{made['merged']['id']}/changes#finish"
    assert merged_session.get_text() == "merged"
    assert page["rows"][path["orphan"].name][1].get_text(strip=True) == "deleted"
    assert all(
        size.strip()[0].isdigit() and "0 Bytes" not in size for _, _, size in page["rows"].values()
    )
    # The orphan's commit would be lost: the button asks for a tick first.
    assert page["soup"].select_one(".wt-loses") is not None
    tick = page["soup"].select_one("#cleanup-confirm")
    assert tick is not None and tick.has_attr("required")
    assert tick.find_parent("form")["action"] == "/worktrees/clean-up"
    assert page["soup"].select_one("code.wt-repo").get_text() == str(repo)
    line = await doctor_line(settings, tmp_path)
    assert line.startswith("4 using ") and line.endswith(
        "kB (the worktrees page lists and cleans them up)"
    )

    # A worktree folder deleted by hand: git still lists it until pruned.
    shutil.rmtree(path["unmerged"])
    assert str(path["unmerged"]) in git(repo, "worktree", "list")
    others = git(repo, "branch", "--list", "--format=%(refname:short)")

    # The merged session's agent is running (idle) in the folder clean-up takes.
    await send(client, made["merged"]["id"], "anything else?")
    await wait_for_events(client, made["merged"]["id"], count("turn_end"))
    [start] = fake_starts(fake_claude)
    assert Path(start["cwd"]).resolve() == path["merged"].resolve()

    r = await client.post("/worktrees/clean-up")
    assert r.status_code == 303 and r.headers["location"] == "/worktrees?removed=2"
    for gone in ("merged", "orphan"):
        assert not path[gone].exists()
        assert git(repo, "branch", "--list", made[gone]["worktree"]["branch"]) == ""
    assert path["dirty"].is_dir() and (path["dirty"] / "d.txt").read_text() == "dirty\n"
    assert str(path["unmerged"]) not in git(repo, "worktree", "list")
    # Pruned, not deleted: its branch and commit stay for the user.
    assert git(repo, "branch", "--list", made["unmerged"]["worktree"]["branch"]).strip()
    left = set(git(repo, "branch", "--list", "--format=%(refname:short)").split())
    assert left == set(others.split()) - {
        made[t]["worktree"]["branch"] for t in ("merged", "orphan")
    }
    with pytest.raises(ProcessLookupError):  # stopped before its folder went
        os.kill(start["pid"], 0)
    # The merged session stays, and records it has no worktree any more.
    got = (await client.get(f"/api/sessions/{made['merged']['id']}")).json()
    assert got["worktree"] is None

    page = await rows(client, r.headers["location"])
    assert set(page["rows"]) == {path["dirty"].name}
    assert page["soup"].select_one("#cleanup-done").get_text(strip=True).startswith("Cleaned up 2")
    assert (await doctor_line(settings, tmp_path)).startswith("1 using ")


async def test_an_empty_page(client: httpx.AsyncClient) -> None:
    page = await rows(client)
    assert page["rows"] == {}
    assert page["soup"].select_one("#worktrees-none") is not None
    nav = page["soup"].select_one('nav.sidebar a[href="/worktrees"]')
    assert nav is not None and nav.get("aria-current") == "page"
