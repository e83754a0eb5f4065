"""The board of running agents, through the API against the real ``git`` and the fake
claude: which sessions it shows and with what, answering an approval from it, a merged
session leaving it, its live stream, and the same prompt started in N worktrees."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest

from app.services.git.merge import merge
from app.services.sessions.board import CACHE
from tests.api.test_chat import make_profile
from tests.api.test_worktree_sessions import repo
from tests.conftest import write_scenario
from tests.faults._support import fake_starts
from tests.helpers import count, read_sse, send, wait_for_events
from tests.services.git.conftest import commit_all, git

# The project folder as a repository on ``main`` with one commit.
__all__ = ["repo"]

Card = dict[str, Any]


def bash(command: str) -> dict[str, Any]:
    return {"tool": "Bash", "input": {"command": command}, "permission": True}


async def profile_with(
    client: httpx.AsyncClient, folder: Path, fake: dict[str, Any], name: str, turns: Any
) -> str:
    """A profile whose fake claude plays ``turns`` (each profile its own scenario)."""
    scenario = write_scenario(fake["scenario"].with_name(f"{name}.json"), turns)
    own = {**fake, "env": {**fake["env"], "FAKE_CLAUDE_SCENARIO": str(scenario)}}
    return await make_profile(client, folder, own, name=name)


async def worktree_session(client: httpx.AsyncClient, profile_id: str, title: str) -> Card:
    r = await client.post(
        "/api/sessions", json={"profile_id": profile_id, "title": title, "worktree": True}
    )
    assert r.status_code == 201, r.text
    made: Card = r.json()
    return made


async def board(client: httpx.AsyncClient) -> dict[str, Card]:
    r = await client.get("/api/board")
    assert r.status_code == 200, r.text
    return {c["id"]: c for c in r.json()}


async def board_until(
    client: httpx.AsyncClient, done: Callable[[dict[str, Card]], bool], timeout: float = 30
) -> dict[str, Card]:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    cards = await board(client)
    while not done(cards):
        assert loop.time() < deadline, f"the board never got there: {cards}"
        await asyncio.sleep(0.1)
        cards = await board(client)
    return cards


async def test_two_worktree_sessions_one_waiting(
    client: httpx.AsyncClient, repo: Path, fake_claude: dict[str, Any]
) -> None:
    asking = await profile_with(
        client, repo, fake_claude, "asking", [[bash("rm -rf build"), {"text": "Cleaned."}]]
    )
    done = await profile_with(
        client, repo, fake_claude, "done", [[{"text": "I changed g.txt.\n\nAll tests pass."}]]
    )
    a = await worktree_session(client, asking, "Clean up")
    b = await worktree_session(client, done, "Add g")
    plain = (await client.post("/api/sessions", json={"profile_id": done})).json()
    await send(client, a["id"], "clean the build")
    await send(client, b["id"], "add g")
    await send(client, plain["id"], "hello")
    await wait_for_events(client, b["id"], count("turn_end"))
    await wait_for_events(client, plain["id"], count("turn_end"))
    # The agent's work, committed in its worktree: not on main yet.
    wt = Path(b["worktree"]["path"])
    (wt / "g.txt").write_text("g\n")
    commit_all(wt, "add g")

    cards = await board_until(client, lambda c: c.get(a["id"], {}).get("status") == "waiting")
    assert set(cards) == {a["id"], b["id"]}, "a finished session without a worktree is not shown"
    first, second = cards[a["id"]], cards[b["id"]]
    assert first["title"] == "Clean up" and first["backend"] == "claude"
    assert first["pending_count"] == 1
    assert first["pending"]["tool"] == "Bash"
    assert first["pending"]["summary"] == "rm -rf build"
    assert first["worktree"]["branch"] == a["worktree"]["branch"]
    assert first["worktree"]["base"] == "main"
    assert (first["worktree"]["ahead"], first["worktree"]["behind"]) == (0, 0)
    assert second["status"] == "live"
    assert second["pending"] is None and second["pending_count"] == 0
    assert second["last_line"] == "All tests pass."
    assert second["worktree"]["ahead"] == 1
    assert second["worktree"]["files_changed"] == 1
    assert second["worktree"]["merged"] is False
    assert list(cards) == [c["id"] for c in (await client.get("/api/board")).json()]

    # Answered with the board card's own form: the turn ends, and a session with nothing
    # to merge leaves the board once it stops working.
    r = await client.post(
        f"/permissions/{first['pending']['id']}/decision", data={"decision": "allow_once"}
    )
    assert r.status_code == 200, r.text
    await wait_for_events(client, a["id"], count("turn_end"))
    cards = await board_until(client, lambda c: a["id"] not in c)
    assert set(cards) == {b["id"]}


async def test_a_merged_session_leaves_the_board(
    client: httpx.AsyncClient, repo: Path, fake_claude: dict[str, Any]
) -> None:
    pid = await make_profile(client, repo, fake_claude)
    made = await worktree_session(client, pid, "Add h")
    await send(client, made["id"], "add h")
    await wait_for_events(client, made["id"], count("turn_end"))
    wt = Path(made["worktree"]["path"])
    # Uncommitted work keeps it on the board as well as commits do.
    (wt / "h.txt").write_text("h\n")
    cards = await board_until(client, lambda c: made["id"] in c)
    assert cards[made["id"]]["worktree"]["dirty"] is True
    assert cards[made["id"]]["worktree"]["files_changed"] == 1
    commit_all(wt, "add h")
    await asyncio.to_thread(merge, repo, made["worktree"]["branch"], "main", "ff")
    await board_until(client, lambda c: made["id"] not in c)


async def test_the_stream_shows_a_new_session_without_asking_again(
    client: httpx.AsyncClient, repo: Path, fake_claude: dict[str, Any]
) -> None:
    pid = await profile_with(client, repo, fake_claude, "asking", [[bash("make"), {"text": "ok"}]])
    made: Card = {}

    async def start_one() -> None:
        made.update(await worktree_session(client, pid, "Build it"))
        await send(client, made["id"], "build")

    def waiting(frames: list[Card]) -> bool:
        if len(frames) == 1:
            assert frames[0]["_sse_event"] == "ids" and frames[0]["ids"] == []
            asyncio.get_running_loop().create_task(start_one())
        return any(
            f["_sse_event"] == "card" and f["id"] == made.get("id") and f["status"] == "waiting"
            for f in frames
        )

    frames = await read_sse(client, "/api/board/stream", until=waiting)
    card = next(f for f in frames if f["_sse_event"] == "card" and f["status"] == "waiting")
    assert card["pending"]["summary"] == "make"
    assert card["worktree"]["branch"] == made["worktree"]["branch"]


async def test_the_same_prompt_in_three_worktrees(
    client: httpx.AsyncClient, repo: Path, fake_claude: dict[str, Any]
) -> None:
    pid = await make_profile(client, repo, fake_claude, name="first")
    other = await make_profile(client, repo, fake_claude, name="second", model="haiku")
    runs = [
        {"profile_id": pid, "model": "sonnet"},
        {"profile_id": pid, "model": "opus"},
        {"profile_id": other},
    ]
    r = await client.post("/api/board/compare", json={"prompt": "Add a README", "runs": runs})
    assert r.status_code == 201, r.text
    made = r.json()
    assert [s["profile_id"] for s in made] == [pid, pid, other]
    assert [s["model"] for s in made] == ["sonnet", "opus", None]
    paths = [Path(s["worktree"]["path"]) for s in made]
    assert len(set(paths)) == 3 and all(p.is_dir() for p in paths)
    for s in made:
        events = await wait_for_events(client, s["id"], count("turn_end"))
        assert [e["text"] for e in events if e["kind"] == "user_message"] == ["Add a README"]
    starts = fake_starts(fake_claude)
    assert sorted(Path(s["cwd"]).resolve() for s in starts) == sorted(p.resolve() for p in paths)
    models = sorted(s["argv"][s["argv"].index("--model") + 1] for s in starts)
    assert models == ["haiku", "opus", "sonnet"]


async def test_compare_makes_nothing_when_a_folder_is_not_a_repository(
    client: httpx.AsyncClient, repo: Path, fake_claude: dict[str, Any], tmp_path: Path
) -> None:
    plain = tmp_path / "plain"
    plain.mkdir()
    good = await make_profile(client, repo, fake_claude, name="good")
    bad = await make_profile(client, plain, fake_claude, name="outside")
    body = {"prompt": "go", "runs": [{"profile_id": good}, {"profile_id": bad}]}
    r = await client.post("/api/board/compare", json=body)
    assert r.status_code == 422, r.text
    assert "outside" in r.json()["detail"] and "git" in r.json()["detail"]
    assert (await client.get("/api/sessions")).json() == []
    assert len(git(repo, "worktree", "list").splitlines()) == 1
    assert git(repo, "branch", "--list", "angelia/*") == ""


async def test_compare_takes_back_what_it_made_when_a_run_is_refused(
    client: httpx.AsyncClient, repo: Path, fake_claude: dict[str, Any], tmp_path: Path
) -> None:
    # A repository without a commit yet: git cannot branch a worktree from it.
    empty = tmp_path / "empty"
    empty.mkdir()
    git(empty, "init", "-q", "-b", "main")
    good = await make_profile(client, repo, fake_claude, name="good")
    unborn = await make_profile(client, empty, fake_claude, name="unborn")
    body = {"prompt": "go", "runs": [{"profile_id": good}, {"profile_id": unborn}]}
    r = await client.post("/api/board/compare", json=body)
    assert r.status_code in (409, 422), r.text
    assert (await client.get("/api/sessions")).json() == []
    assert len(git(repo, "worktree", "list").splitlines()) == 1
    assert git(repo, "branch", "--list", "angelia/*") == ""
    assert fake_starts(fake_claude) == []


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"prompt": "  ", "runs": [{"profile_id": "x"}]}, "prompt"),
        ({"prompt": "go", "runs": []}, "runs"),
        ({"prompt": "go", "runs": [{"profile_id": "x"}] * 9}, "runs"),
    ],
)
async def test_bad_compare_requests_are_refused(
    client: httpx.AsyncClient, body: dict[str, Any], field: str
) -> None:
    r = await client.post("/api/board/compare", json=body)
    assert r.status_code == 422, r.text
    assert r.json()["detail"][0]["field"] == field


async def test_the_board_page_and_its_compare_form(
    client: httpx.AsyncClient, repo: Path, fake_claude: dict[str, Any], tmp_path: Path
) -> None:
    pid = await make_profile(client, repo, fake_claude, name="first")
    page = await client.get("/board")
    assert page.status_code == 200 and "The same prompt in several worktrees" in page.text
    form = {"profile_id": pid, "prompt": "Tidy up", "model-0": "sonnet", "model-2": "opus"}
    r = await client.post("/board/compare", data=form)
    assert r.status_code == 303, r.text
    made = (await client.get("/api/sessions")).json()
    assert sorted(s["model"] for s in made) == ["opus", "sonnet"]
    assert all(s["worktree"] for s in made)
    plain = tmp_path / "plain"
    plain.mkdir()
    bad = await make_profile(client, plain, fake_claude, name="outside")
    r = await client.post("/board/compare", data={"profile_id": bad, "prompt": "Tidy up"})
    assert r.status_code == 422
    assert "cannot run in a worktree" in r.text and "Tidy up" in r.text
    assert len((await client.get("/api/sessions")).json()) == 2


async def test_an_idle_board_asks_git_nothing_again(
    client: httpx.AsyncClient, repo: Path, fake_claude: dict[str, Any]
) -> None:
    pid = await make_profile(client, repo, fake_claude)
    worktrees = []
    for title in ("one", "two", "three"):
        made = await worktree_session(client, pid, title)
        wt = Path(made["worktree"]["path"])
        (wt / f"{title}.txt").write_text(f"{title}\n")
        commit_all(wt, title)
        worktrees.append(wt)
    assert len(await board(client)) == 3
    read = CACHE.reads
    assert len(await board(client)) == 3
    assert CACHE.reads == read, "nothing changed, yet git was asked again"
    (worktrees[0] / "more.txt").write_text("more\n")
    commit_all(worktrees[0], "more")
    cards = await board(client)
    assert CACHE.reads == read + 1, "only the worktree whose branch moved is read again"
    assert sorted(c["worktree"]["ahead"] for c in cards.values()) == [1, 1, 2]


async def test_agent_text_on_the_board_stays_text(
    client: httpx.AsyncClient, repo: Path, fake_claude: dict[str, Any]
) -> None:
    hostile = '<img src=x onerror="alert(1)">'
    pid = await profile_with(
        client, repo, fake_claude, "hostile", [[bash(hostile), {"text": f"Done.\n{hostile}"}]]
    )
    made = await worktree_session(client, pid, hostile)
    await send(client, made["id"], "go")
    cards = await board_until(client, lambda c: c.get(made["id"], {}).get("status") == "waiting")
    assert cards[made["id"]]["pending"]["summary"] == hostile
    page = (await client.get("/board")).text
    assert hostile not in page
    assert "&lt;img src=x onerror=&#34;alert(1)&#34;&gt;" in page
