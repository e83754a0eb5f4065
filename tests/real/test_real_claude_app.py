"""Angelia end to end with the real Claude Code CLI against the scripted fake model server.

Everything goes through the public HTTP API of a live uvicorn server: profiles, messages,
the SSE stream, permission decisions. The only look behind the API is the backend pid the
session manager records, used to tell "the same process" from "a resumed one".
"""

from __future__ import annotations

import asyncio
import re
from pathlib import Path

import httpx
import pytest

from app.main import create_app
from app.settings import Settings
from tests.conftest import LiveServer
from tests.fakes.fake_model_server import FakeModelServer, request_texts
from tests.helpers import (
    assert_frames_are_stored,
    count,
    covered,
    kinds,
    of_kind,
    read_sse,
    send,
    seqs_of,
    wait_for_events,
)
from tests.real.steps import backend_pid, take_turn

pytestmark = pytest.mark.real_cli

UUID_RE = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")


def proc_identity(pid: int) -> tuple[list[str], str]:
    """(argv, start time) of a running process; the start time tells a reused pid apart."""
    proc = Path(f"/proc/{pid}")
    argv = proc.joinpath("cmdline").read_bytes().decode().split("\0")[:-1]
    # Field 22 of /proc/<pid>/stat, counted after the parenthesised command name.
    start_time = proc.joinpath("stat").read_text().rsplit(")", 1)[1].split()[19]
    return argv, start_time


def pid_gone(pid: int) -> bool:
    stat = Path(f"/proc/{pid}/stat")
    # A zombie still has an entry; it no longer runs.
    return not stat.exists() or stat.read_text().rsplit(")", 1)[1].split()[0] == "Z"


@pytest.mark.conformance("stream", backend="claude")
async def test_text_turn_streams_into_sse(client: httpx.AsyncClient, claude_session: str) -> None:
    sid = claude_session
    reader = asyncio.create_task(
        read_sse(
            client,
            f"/api/sessions/{sid}/stream",
            until=lambda frames: frames[-1]["kind"] == "turn_end",
        )
    )
    await send(client, sid, "say hi")
    frames = await reader

    # Every frame is one stored event: id = seq, event = kind, gapless from 1.
    assert [f["_sse_id"] for f in frames] == [str(f["seq"]) for f in frames]
    assert [f["_sse_event"] for f in frames] == kinds(frames)
    assert seqs_of(frames) == list(range(1, len(seqs_of(frames)) + 1))
    assert frames[0]["kind"] == "user_message" and frames[0]["text"] == "say hi"

    k = kinds(frames)
    deltas = of_kind(frames, "text_delta")
    # Streamed in pieces: at least two stored deltas, though a client that fell behind
    # gets them joined into one frame.
    assert [kind for _, kind in covered(frames)].count("text_delta") >= 2, k
    assert "".join(d["text"] for d in deltas) == "hello from fake"
    answers = of_kind(frames, "assistant_message")
    assert [a["text"] for a in answers] == ["hello from fake"], k
    last_delta = max(i for i, kind in enumerate(k) if kind == "text_delta")
    assert last_delta < k.index("assistant_message") < k.index("turn_end"), k
    turn_end = frames[-1]
    assert turn_end["is_error"] is False and turn_end["result"] == "hello from fake"

    announced = of_kind(frames, "backend_session")
    assert len(announced) == 1, k
    backend_session_id = announced[0]["backend_session_id"]
    assert UUID_RE.match(backend_session_id)
    session = (await client.get(f"/api/sessions/{sid}")).json()
    assert session["backend_session_id"] == backend_session_id
    assert session["status"] == "live" and session["turns"] == 1


async def test_second_turn_reuses_the_process(
    server: LiveServer,
    client: httpx.AsyncClient,
    claude_session: str,
    fake_model: FakeModelServer,
) -> None:
    sid = claude_session
    await take_turn(client, sid, "say hi")
    pid = backend_pid(server, sid)
    argv, started = proc_identity(pid)
    backend_session_id = (await client.get(f"/api/sessions/{sid}")).json()["backend_session_id"]
    assert f"--session-id={backend_session_id}" in argv, argv
    assert not any(a.startswith("--resume") for a in argv), argv

    await send(client, sid, "say hi again")
    events = await wait_for_events(client, sid, count("turn_end", 2))

    # Same pid, same start time: the first process answered the second turn too.
    assert backend_pid(server, sid) == pid
    assert proc_identity(pid) == (argv, started)
    assert [a["text"] for a in of_kind(events, "assistant_message")] == ["hello from fake"] * 2
    assert len(of_kind(events, "backend_session")) == 1
    session = (await client.get(f"/api/sessions/{sid}")).json()
    assert session["turns"] == 2 and session["backend_session_id"] == backend_session_id
    # The second model call carried the first turn: one conversation, not two.
    main = [e for e in fake_model.message_requests() if "say hi again" in request_texts(e)]
    assert main and "say hi" in request_texts(main[-1]), request_texts(main[-1])


@pytest.mark.conformance("tool_prompt", backend="claude")
async def test_permission_allow_once_runs_the_tool(
    client: httpx.AsyncClient, claude_session: str, project_dir: Path
) -> None:
    sid = claude_session
    await send(client, sid, "run touch")
    await wait_for_events(client, sid, count("permission_request"))
    r = await client.get("/api/permissions", params={"status": "pending", "session_id": sid})
    pending = r.json()
    assert len(pending) == 1, pending
    request = pending[0]
    assert request["tool"] == "Bash"
    assert request["input"]["command"] == "touch made_by_fake.txt"
    assert not (project_dir / "made_by_fake.txt").exists()
    session = (await client.get(f"/api/sessions/{sid}")).json()
    assert session["status"] == "waiting"

    r = await client.post(
        f"/api/permissions/{request['id']}/decision", json={"decision": "allow_once"}
    )
    assert r.status_code == 200, r.text
    assert r.json()["decision"] == "allow_once" and r.json()["source"] == "user"

    events = await wait_for_events(client, sid, count("turn_end"))
    assert (project_dir / "made_by_fake.txt").exists()
    k = kinds(events)
    asked = of_kind(events, "permission_request")[0]
    assert asked["permission_id"] == request["id"]
    decision = of_kind(events, "permission_decision")
    assert [(d["permission_id"], d["decision"], d["source"]) for d in decision] == [
        (request["id"], "allow_once", "user")
    ]
    results = of_kind(events, "tool_result")
    assert len(results) == 1 and results[0]["is_error"] is False, results
    call = of_kind(events, "tool_call")[0]
    assert results[0]["tool_call_id"] == call["tool_call_id"] == request["tool_call_id"]
    assert (
        k.index("permission_request")
        < k.index("permission_decision")
        < k.index("tool_result")
        < k.index("turn_end")
    ), k
    assert of_kind(events, "assistant_message")[-1]["text"] == "done"

    r = await client.post(f"/api/permissions/{request['id']}/decision", json={"decision": "deny"})
    assert r.status_code == 409, r.text
    r = await client.get("/api/permissions", params={"status": "pending", "session_id": sid})
    assert r.json() == []


@pytest.mark.conformance("resume", backend="claude")
async def test_restart_resumes_the_cli_session_with_its_history(
    settings: Settings,
    server: LiveServer,
    client: httpx.AsyncClient,
    claude_session: str,
    fake_model: FakeModelServer,
) -> None:
    sid = claude_session
    await send(client, sid, "say hi, and remember the word apricot")
    await wait_for_events(client, sid, count("turn_end"))
    backend_session_id = (await client.get(f"/api/sessions/{sid}")).json()["backend_session_id"]
    assert backend_session_id
    old_pid = backend_pid(server, sid)

    await server.stop()
    assert pid_gone(old_pid)

    restarted = LiveServer(create_app(settings))
    await restarted.start()
    try:
        async with restarted.client() as client2:
            session = (await client2.get(f"/api/sessions/{sid}")).json()
            assert session["status"] == "idle", session
            before = len(fake_model.message_requests())
            await send(client2, sid, "say again")
            events = await wait_for_events(client2, sid, count("turn_end", 2))
            assert not of_kind(events, "error"), of_kind(events, "error")
            assert of_kind(events, "assistant_message")[-1]["text"] == "hello from fake"
            session = (await client2.get(f"/api/sessions/{sid}")).json()
            assert session["backend_session_id"] == backend_session_id
            assert session["turns"] == 2

            argv, _ = proc_identity(backend_pid(restarted, sid))
            assert f"--resume={backend_session_id}" in argv, argv
            assert not any(a.startswith("--session-id") for a in argv), argv
    finally:
        await restarted.stop()

    newest = [
        e
        for e in fake_model.message_requests()[before:]
        if e["body"].get("tools") and "say again" in request_texts(e)
    ]
    assert newest, [e["reply"] for e in fake_model.message_requests()[before:]]
    history = request_texts(newest[-1])
    for expected in ("remember the word apricot", "hello from fake", "say again"):
        assert any(expected in t for t in history), (expected, history)


@pytest.mark.parametrize(
    "fake_rules",
    # Slow, many-piece streaming so the reconnect below lands in the middle of the turn.
    [{"default": "hello from fake, streamed in many small pieces", "chunk_delay": 0.02}],
)
async def test_sse_reconnect_with_last_event_id(
    client: httpx.AsyncClient, claude_session: str
) -> None:
    sid = claude_session
    url = f"/api/sessions/{sid}/stream"
    first = asyncio.create_task(
        read_sse(client, url, until=lambda frames: frames[-1]["kind"] == "text_delta")
    )
    await send(client, sid, "say hi")
    # Drop the connection at the first streamed piece, then come back from there.
    frames1 = await first
    n = frames1[-1]["seq"]
    frames2 = await read_sse(
        client,
        url,
        headers={"Last-Event-ID": str(n)},
        until=lambda frames: frames[-1]["kind"] == "turn_end",
    )
    stored = (await client.get(f"/api/sessions/{sid}/events")).json()["events"]
    end = frames2[-1]["seq"]

    seqs2 = seqs_of(frames2)
    assert seqs2 == [e["seq"] for e in stored if n < e["seq"] <= end]
    assert seqs2 == list(range(n + 1, end + 1))  # gapless, no duplicates
    assert seqs_of(frames1) + seqs2 == list(range(1, end + 1))
    # Exactly what is stored; a client that fell behind gets a run of pieces joined.
    assert_frames_are_stored(frames2, stored)
    deltas = of_kind(frames1 + frames2, "text_delta")
    assert "".join(d["text"] for d in deltas) == "hello from fake, streamed in many small pieces"

    # After the turn: resume from a point in the middle; exactly the later events come back.
    last = stored[-1]["seq"]
    middle = last // 2
    frames3 = await read_sse(
        client,
        url,
        headers={"Last-Event-ID": str(middle)},
        until=lambda frames: frames[-1]["seq"] >= last,
    )
    assert seqs_of(frames3) == list(range(middle + 1, last + 1))
    assert frames3 == [
        dict(e, _sse_id=str(e["seq"]), _sse_event=e["kind"]) for e in stored if e["seq"] > middle
    ]
