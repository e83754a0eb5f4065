"""Review comments through the API: written on a line of a worktree session's diff, bounded,
listed, deleted while open, sent to the fake claude as one message, then marked answered
once the agent's edit changed their line."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import httpx
import pytest
from sqlmodel import Session, select

from app.db.models import ReviewComment
from tests.api.test_chat import fake_log, make_profile
from tests.conftest import LiveServer, write_scenario
from tests.helpers import count, send, wait_for_events
from tests.services.git.conftest import init_repo

BASE = "alpha\nbeta\ngamma\ndelta\nepsilon\nzeta\neta\n"
# The session's first turn: "beta" made upper case, "epsilon" removed.
EDITED = "alpha\nBETA\ngamma\ndelta\nzeta\neta\n"


def edit(path: Path, old: str, new: str) -> dict[str, Any]:
    return {"tool": "Edit", "input": {"file_path": str(path), "old_string": old, "new_string": new}}


def prompts_sent(fake: dict[str, Any]) -> list[str]:
    """The text of each user message the fake claude read on its stdin."""
    out = []
    for e in fake_log(fake):
        if e.get("stdin", {}).get("type") != "user":
            continue
        content = e["stdin"]["message"]["content"]
        if isinstance(content, list):
            content = "".join(b.get("text", "") for b in content if isinstance(b, dict))
        out.append(str(content))
    return out


async def edited_session(
    client: httpx.AsyncClient,
    repo: Path,
    fake: dict[str, Any],
    answer: tuple[str, str] = ("BETA", "Beta"),
) -> tuple[str, Path]:
    """A worktree session whose agent changed f.txt to ``EDITED`` in its first turn, and
    whose second turn asks to make the edit ``answer`` (what the review asks for)."""
    pid = await make_profile(client, repo, fake)
    r = await client.post("/api/sessions", json={"profile_id": pid, "worktree": True})
    assert r.status_code == 201, r.text
    sid, worktree = r.json()["id"], Path(r.json()["worktree"]["path"])
    target = worktree / "f.txt"
    first = [
        edit(target, "beta", "BETA"),
        edit(target, "delta\nepsilon\n", "delta\n"),
        {"text": "done"},
    ]
    # Asks first, so a test makes the edit on disk when it approves it.
    second = [{**edit(target, *answer), "permission": True}, {"text": "fixed"}]
    write_scenario(fake["scenario"], [first, second])
    # The fake reports its edits; the file on disk is what they made.
    target.write_text(EDITED)
    await send(client, sid, "tidy f.txt")
    await wait_for_events(client, sid, count("turn_end"))
    return sid, worktree


async def approve_edit(client: httpx.AsyncClient, sid: str, worktree: Path, text: str) -> None:
    """Let the agent's asked-for edit run: f.txt becomes ``text``, the turn ends."""
    r = await client.get("/api/permissions", params={"status": "pending", "session_id": sid})
    (request,) = r.json()
    (worktree / "f.txt").write_text(text)
    r = await client.post(
        f"/api/permissions/{request['id']}/decision", json={"decision": "allow_once"}
    )
    assert r.status_code == 200, r.text
    await wait_for_events(client, sid, count("turn_end", 2))


def make_repo(project_dir: Path) -> Path:
    """The project folder as a repository on ``main`` whose f.txt holds ``BASE``."""
    return init_repo(project_dir, {"f.txt": BASE})


@pytest.fixture
def repo(project_dir: Path) -> Path:
    return make_repo(project_dir)


async def comment(
    client: httpx.AsyncClient, sid: str, line: int, body: str, side: str = "new"
) -> httpx.Response:
    payload = {"path": "f.txt", "line": line, "side": side, "body": body}
    return await client.post(f"/api/sessions/{sid}/comments", json=payload)


async def test_comments_go_to_the_agent_and_show_what_it_answered(
    client: httpx.AsyncClient, repo: Path, fake_claude: dict[str, Any]
) -> None:
    sid, worktree = await edited_session(client, repo, fake_claude)
    r = await comment(client, sid, 2, "Keep it lower case.")
    assert r.status_code == 201, r.text
    made = r.json()
    assert (made["path"], made["line"], made["side"]) == ("f.txt", 2, "new")
    assert (made["quote"], made["status"], made["answered"]) == ("BETA", "open", None)
    removed = (await comment(client, sid, 5, "Why did this go?", side="old")).json()
    assert removed["quote"] == "epsilon"
    far = (await comment(client, sid, 6, "Fine as it is.\nReally.")).json()
    assert far["quote"] == "eta"
    throwaway = (await comment(client, sid, 1, "never mind")).json()
    r = await client.delete(f"/api/sessions/{sid}/comments/{throwaway['id']}")
    assert r.status_code == 204
    listed = (await client.get(f"/api/sessions/{sid}/comments")).json()
    assert [(c["line"], c["side"], c["status"]) for c in listed] == [
        (2, "new", "open"),
        (5, "old", "open"),
        (6, "new", "open"),
    ]

    r = await client.post(f"/api/sessions/{sid}/comments/send")
    assert r.status_code == 200, r.text
    sent = r.json()
    assert (sent["sent"], sent["left"], sent["queued"]) == (3, 0, False)
    events = await wait_for_events(client, sid, count("permission_request"))
    message = [e for e in events if e["kind"] == "user_message"][-1]
    assert message["seq"] == sent["seq"]
    assert (
        prompts_sent(fake_claude)[-1]
        == message["text"]
        == (
            "Review comments on your changes:\n\n"
            "f.txt:2\n> BETA\nKeep it lower case.\n\n"
            "f.txt:5 (a removed line)\n> epsilon\nWhy did this go?\n\n"
            "f.txt:6\n> eta\nFine as it is.\nReally."
        )
    )
    listed = (await client.get(f"/api/sessions/{sid}/comments")).json()
    assert {(c["status"], c["sent_seq"], c["answered"]) for c in listed} == {
        ("sent", sent["seq"], False)
    }
    assert all(c["sent_at"] for c in listed)

    # The agent's edit of line 2 answers that comment, and only that one.
    await approve_edit(client, sid, worktree, EDITED.replace("BETA", "Beta"))
    listed = (await client.get(f"/api/sessions/{sid}/comments")).json()
    assert [(c["line"], c["answered"]) for c in listed] == [(2, True), (5, False), (6, False)]

    # Nothing is left to send, and what was sent stays.
    r = await client.post(f"/api/sessions/{sid}/comments/send")
    assert r.status_code == 409 and "No open review comments" in r.json()["detail"]
    r = await client.delete(f"/api/sessions/{sid}/comments/{made['id']}")
    assert r.status_code == 409
    assert len((await client.get(f"/api/sessions/{sid}/comments")).json()) == 3


async def test_a_removed_line_put_back_answers_its_comment(
    client: httpx.AsyncClient, repo: Path, fake_claude: dict[str, Any]
) -> None:
    put_back = ("delta\n", "delta\nepsilon\n")
    sid, worktree = await edited_session(client, repo, fake_claude, answer=put_back)
    assert (await comment(client, sid, 5, "Put it back.", side="old")).status_code == 201
    assert (await client.post(f"/api/sessions/{sid}/comments/send")).status_code == 200
    await wait_for_events(client, sid, count("permission_request"))
    # Sent while the agent waits for an answer: the message waits too, like any other.
    assert (await comment(client, sid, 1, "And this one?")).status_code == 201
    r = await client.post(f"/api/sessions/{sid}/comments/send")
    assert r.status_code == 200 and r.json()["queued"] is True
    waiting = r.json()["seq"]
    queue = (await client.get(f"/api/sessions/{sid}/queue")).json()
    assert [q["seq"] for q in queue] == [waiting]
    await approve_edit(client, sid, worktree, EDITED.replace("delta\n", "delta\nepsilon\n"))
    # The diff still shows the session's other change, no longer the removal.
    (changed,) = (await client.get(f"/api/sessions/{sid}/changes")).json()["files"]
    assert "-beta" in changed["diff"] and "-epsilon" not in changed["diff"]
    listed = (await client.get(f"/api/sessions/{sid}/comments")).json()
    assert [(c["line"], c["side"], c["answered"]) for c in listed] == [
        (1, "new", False),
        (5, "old", True),
    ]
    await wait_for_events(client, sid, count("turn_end", 3))
    assert prompts_sent(fake_claude)[-1] == (
        "Review comments on your changes:\n\nf.txt:1\n> alpha\nAnd this one?"
    )


async def test_one_message_holds_what_fits_and_no_comment_goes_twice(
    server: LiveServer, client: httpx.AsyncClient, repo: Path, fake_claude: dict[str, Any]
) -> None:
    sid, _ = await edited_session(client, repo, fake_claude)
    first = (await comment(client, sid, 2, "x" * 10_000)).json()
    fields = {k: first[k] for k in ("session_id", "path", "line", "side", "quote")}
    with Session(server.app.state.angelia.engine) as db:
        db.add_all(ReviewComment(**fields, body="y" * 10_000, context="") for _ in range(100))
        db.commit()
    # 101 comments of 10,000 characters are more than a message's 1,000,000: one send
    # takes what fits, and a second send at the same moment takes the rest, not the same.
    answers = await asyncio.gather(
        client.post(f"/api/sessions/{sid}/comments/send"),
        client.post(f"/api/sessions/{sid}/comments/send"),
    )
    assert [r.status_code for r in answers] == [200, 200]
    sent = sorted((r.json() for r in answers), key=lambda a: a["sent"])
    assert [(a["sent"], a["left"]) for a in sent] == [(2, 0), (99, 2)]
    events = await wait_for_events(client, sid, count("user_message", 3))
    (big,) = [e for e in events if e["seq"] == sent[1]["seq"]]
    assert 990_000 < len(big["text"]) <= 1_000_000
    listed = (await client.get(f"/api/sessions/{sid}/comments")).json()
    seqs = [c["sent_seq"] for c in listed]
    assert (seqs.count(sent[0]["seq"]), seqs.count(sent[1]["seq"])) == (2, 99)
    assert (await client.post(f"/api/sessions/{sid}/comments/send")).status_code == 409


@pytest.mark.parametrize(
    ("body", "field", "words"),
    [
        ({"path": "f.txt", "line": 2, "side": "new", "body": "x" * 10_001}, "body", "10,000"),
        ({"path": "f.txt", "line": 2, "side": "new", "body": "  \n"}, "body", "empty"),
        ({"path": "f" * 4_097, "line": 2, "side": "new", "body": "x"}, "path", "4096"),
        ({"path": "", "line": 2, "side": "new", "body": "x"}, "path", "name the file"),
        ({"path": "f.txt", "line": 0, "side": "new", "body": "x"}, "line", "1 or more"),
        ({"path": "f.txt", "line": 99, "side": "new", "body": "x"}, "line", "no line 99"),
        ({"path": "f.txt", "line": 99, "side": "old", "body": "x"}, "line", "removed lines"),
        ({"path": "f.txt", "line": 2, "side": "left", "body": "x"}, "side", "'new' or 'old'"),
        ({"path": "../f.txt", "line": 1, "side": "new", "body": "x"}, "path", "not a file"),
        ({"path": "/etc/passwd", "line": 1, "side": "new", "body": "x"}, "path", "not a file"),
        ({"path": "f.txt", "line": "two", "side": "new", "body": "x"}, "line", "integer"),
        ({"path": "f.txt", "line": 2, "side": "new", "body": "x", "extra": 1}, "extra", ""),
    ],
)
async def test_bad_comments_are_refused_with_the_field(
    client: httpx.AsyncClient,
    repo: Path,
    fake_claude: dict[str, Any],
    body: dict[str, Any],
    field: str,
    words: str,
) -> None:
    sid, _ = await edited_session(client, repo, fake_claude)
    r = await client.post(f"/api/sessions/{sid}/comments", json=body)
    assert r.status_code == 422, r.text
    problem = r.json()["detail"][0]
    assert problem["field"] == field and words in problem["message"], problem
    assert (await client.get(f"/api/sessions/{sid}/comments")).json() == []


async def test_a_session_keeps_at_most_500(
    server: LiveServer, client: httpx.AsyncClient, repo: Path, fake_claude: dict[str, Any]
) -> None:
    sid, _ = await edited_session(client, repo, fake_claude)
    first = (await comment(client, sid, 2, "first")).json()
    engine = server.app.state.angelia.engine
    with Session(engine) as db:
        fields = {k: first[k] for k in ("session_id", "path", "line", "side", "quote")}
        db.add_all(ReviewComment(**fields, body=f"copy {i}", context="") for i in range(499))
        db.commit()
    r = await comment(client, sid, 3, "one too many")
    assert r.status_code == 422
    assert r.json()["detail"][0]["field"] == "comments"
    assert "at most 500" in r.json()["detail"][0]["message"]


async def test_unknown_sessions_and_comments_and_deleting_the_session(
    server: LiveServer, client: httpx.AsyncClient, repo: Path, fake_claude: dict[str, Any]
) -> None:
    for method, url in [
        ("GET", "/api/sessions/nope/comments"),
        ("POST", "/api/sessions/nope/comments/send"),
        ("DELETE", "/api/sessions/nope/comments/x"),
    ]:
        assert (await client.request(method, url)).status_code == 404, url
    r = await client.post(
        "/api/sessions/nope/comments", json={"path": "f.txt", "line": 1, "body": "x"}
    )
    assert r.status_code == 404
    sid, _ = await edited_session(client, repo, fake_claude)
    assert (await client.delete(f"/api/sessions/{sid}/comments/nope")).status_code == 404
    assert (await client.post(f"/api/sessions/{sid}/comments/send")).status_code == 409
    assert (await comment(client, sid, 2, "gone with the session")).status_code == 201
    assert (await client.delete(f"/api/sessions/{sid}")).status_code == 204
    with Session(server.app.state.angelia.engine) as db:
        assert db.exec(select(ReviewComment)).all() == []
