"""One cap on the agent processes the whole server runs at once, through the HTTP server
with the fake claude and real git: requests arriving together cannot go over it, a
refusal names the cap and how to raise it, and a refused request leaves nothing."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx
import pytest

from app.settings import Settings
from tests.api.test_chat import make_profile
from tests.faults._support import fake_starts
from tests.helpers import count, send, wait_for_events
from tests.services.git.conftest import git, init_repo

CAP = 4


@pytest.fixture
def settings(settings: Settings) -> Settings:
    return settings.model_copy(update={"max_agents": CAP})


def _names_the_cap(answer: httpx.Response) -> None:
    assert answer.status_code == 422, answer.text
    detail = answer.json()["detail"]
    assert f"at most {CAP} agents" in detail and "--max-agents" in detail, detail
    assert "ANGELIA_MAX_AGENTS" in detail


async def test_concurrent_compares_stay_under_the_cap(
    client: httpx.AsyncClient, tmp_path: Path, fake_claude: dict[str, Any]
) -> None:
    folders = [tmp_path / f"repo{i}" for i in range(3)]
    repos = [init_repo(f, {"f.txt": "one\n"}) for f in folders if not f.mkdir()]
    pids = [await make_profile(client, r, fake_claude, name=f"p{i}") for i, r in enumerate(repos)]
    bodies = [{"prompt": "go", "runs": [{"profile_id": pid}] * 2} for pid in pids]
    answers = await asyncio.gather(
        *(client.post("/api/board/compare", json=body) for body in bodies)
    )
    made = [a for a in answers if a.status_code == 201]
    refused = [a for a in answers if a.status_code != 201]
    assert len(made) == 2 and len(refused) == 1, [a.text for a in answers]
    _names_the_cap(refused[0])
    sessions = [s for a in made for s in a.json()]
    for s in sessions:
        await wait_for_events(client, s["id"], count("turn_end"))
    assert len(fake_starts(fake_claude)) == CAP
    # The refused comparison left no session, worktree or branch behind.
    assert len((await client.get("/api/sessions")).json()) == CAP
    worktrees = sum(len(git(r, "worktree", "list").splitlines()) - 1 for r in repos)
    assert worktrees == CAP
    assert sum(len(git(r, "branch", "--list", "angelia/*").splitlines()) for r in repos) == CAP

    # One more session cannot start its agent while all places are taken; its message is
    # not stored. Once a session goes, the place is free again.
    extra = (await client.post("/api/sessions", json={"profile_id": pids[0]})).json()["id"]
    r = await client.post(f"/api/sessions/{extra}/messages", json={"text": "hello"})
    _names_the_cap(r)
    events = (await client.get(f"/api/sessions/{extra}/events")).json()["events"]
    assert [e for e in events if e["kind"] == "user_message"] == []
    assert len(fake_starts(fake_claude)) == CAP
    assert (await client.delete(f"/api/sessions/{sessions[0]['id']}")).status_code == 204
    await send(client, extra, "hello")
    await wait_for_events(client, extra, count("turn_end"))
    assert len(fake_starts(fake_claude)) == CAP + 1


def test_the_cap_is_a_setting_and_a_serve_option(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANGELIA_MAX_AGENTS", "3")
    assert Settings().max_agents == 3
    usage = subprocess.run(
        [sys.executable, "-m", "app.cli", "serve", "--help"], capture_output=True, text=True
    )
    assert "--max-agents" in usage.stdout
    bad = subprocess.run(
        [sys.executable, "-m", "app.cli", "serve", "--max-agents", "0"],
        capture_output=True,
        text=True,
    )
    assert bad.returncode == 2 and "from 1 to 1000" in bad.stderr
