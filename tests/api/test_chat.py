"""Chat through the API with the fake Claude executable running through the real transport."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import httpx

from app.main import create_app
from app.settings import Settings
from tests.conftest import LiveServer, write_scenario
from tests.helpers import count, kinds, read_sse, send, seqs_of, wait_for_events


async def make_profile(
    client: httpx.AsyncClient, project_dir: Path, fake: dict[str, Any], **profile: Any
) -> str:
    """A profile that runs ``fake`` in ``project_dir``; returns its id."""
    body = {
        "name": "fake",
        "backend": "claude",
        "cwd": str(project_dir),
        "command": fake["command"],
        "env": fake["env"],
        **profile,
    }
    r = await client.post("/api/profiles", json=body)
    assert r.status_code == 201, r.text
    pid: str = r.json()["id"]
    return pid


async def make_session(
    client: httpx.AsyncClient, project_dir: Path, fake: dict[str, Any], **profile: Any
) -> str:
    pid = await make_profile(client, project_dir, fake, **profile)
    r = await client.post("/api/sessions", json={"profile_id": pid})
    assert r.status_code == 201
    sid: str = r.json()["id"]
    return sid


def fake_log(fake: dict[str, Any]) -> list[dict[str, Any]]:
    path: Path = fake["log"]
    return [json.loads(x) for x in path.read_text().splitlines()] if path.exists() else []


async def test_text_turn_streams_and_is_stored(
    client: httpx.AsyncClient, project_dir: Path, fake_claude: dict[str, Any]
) -> None:
    # Pieces far enough apart that a busy machine still reads them one by one (the app
    # merges pieces that are ready at the same moment).
    steps = [{"text": "hello from the fake", "chunks": 4, "delay": 0.25}]
    write_scenario(fake_claude["scenario"], [steps])
    sid = await make_session(client, project_dir, fake_claude, model="sonnet")
    await send(client, sid, "say hi")
    frames = await read_sse(
        client, f"/api/sessions/{sid}/stream", until=lambda f: f[-1]["kind"] == "turn_end"
    )
    ks = [f["kind"] for f in frames]
    assert ks[0] == "user_message" and frames[0]["text"] == "say hi"
    assert ks.count("text_delta") == 4
    assert "".join(f["text"] for f in frames if f["kind"] == "text_delta") == "hello from the fake"
    assert ks.index("assistant_message") > ks.index("text_delta")
    assert seqs_of(frames) == list(range(1, len(seqs_of(frames)) + 1))
    assert all(f["_sse_id"] == str(f["seq"]) and f["_sse_event"] == f["kind"] for f in frames)
    end = frames[-1]
    assert end["is_error"] is False and end["duration_ms"] is not None
    session = (await client.get(f"/api/sessions/{sid}")).json()
    assert session["backend_session_id"]
    assert session["title"] == "say hi"
    argv = fake_log(fake_claude)[0]["argv"]
    for flag in ("--output-format", "--include-partial-messages", "--permission-prompt-tool"):
        assert flag in argv
    assert f"--session-id={session['backend_session_id']}" in argv
    assert "sonnet" in argv


async def test_two_turns_share_one_process(
    server: LiveServer, client: httpx.AsyncClient, project_dir: Path, fake_claude: dict[str, Any]
) -> None:
    write_scenario(fake_claude["scenario"], [[{"text": "one"}], [{"text": "two"}]])
    sid = await make_session(client, project_dir, fake_claude)
    await send(client, sid, "first")
    await wait_for_events(client, sid, count("turn_end"))
    await send(client, sid, "second")
    events = await wait_for_events(client, sid, count("turn_end", 2))
    texts = [e["text"] for e in events if e["kind"] == "assistant_message"]
    assert texts == ["one", "two"]
    assert len([e for e in fake_log(fake_claude) if "argv" in e]) == 1


async def test_permission_allow_then_second_answer_conflicts(
    client: httpx.AsyncClient, project_dir: Path, fake_claude: dict[str, Any]
) -> None:
    tool = {"tool": "Bash", "input": {"command": "touch x"}, "permission": True}
    write_scenario(fake_claude["scenario"], [[tool, {"text": "done"}]])
    sid = await make_session(client, project_dir, fake_claude)
    await send(client, sid, "run touch")
    await wait_for_events(client, sid, count("permission_request"))
    pending = (await client.get("/api/permissions", params={"status": "pending"})).json()
    assert len(pending) == 1 and pending[0]["tool"] == "Bash"
    assert pending[0]["input"] == {"command": "touch x"}
    pid = pending[0]["id"]
    r = await client.post(f"/api/permissions/{pid}/decision", json={"decision": "allow_once"})
    assert r.status_code == 200 and r.json()["decision"] == "allow_once"
    r = await client.post(f"/api/permissions/{pid}/decision", json={"decision": "deny"})
    assert r.status_code == 409
    assert "allowed once" in r.json()["detail"]
    events = await wait_for_events(client, sid, count("turn_end"))
    result = next(e for e in events if e["kind"] == "tool_result")
    assert result["output"] == "ran" and result["is_error"] is False
    decision = next(e for e in events if e["kind"] == "permission_decision")
    assert decision["decision"] == "allow_once" and decision["source"] == "user"
    responses = [
        e["stdin"]
        for e in fake_log(fake_claude)
        if e.get("stdin", {}).get("type") == "control_response"
    ]
    body = responses[0]["response"]["response"]
    assert body == {"behavior": "allow", "updatedInput": {"command": "touch x"}}


async def test_permission_deny_sends_the_message(
    client: httpx.AsyncClient, project_dir: Path, fake_claude: dict[str, Any]
) -> None:
    tool = {"tool": "Bash", "input": {"command": "rm -rf x"}, "permission": True}
    write_scenario(fake_claude["scenario"], [[tool, {"text": "ok"}]])
    sid = await make_session(client, project_dir, fake_claude)
    await send(client, sid, "go")
    events = await wait_for_events(client, sid, count("permission_request"))
    pid = next(e for e in events if e["kind"] == "permission_request")["permission_id"]
    r = await client.post(
        f"/api/permissions/{pid}/decision", json={"decision": "deny", "message": "not that"}
    )
    assert r.status_code == 200
    events = await wait_for_events(client, sid, count("turn_end"))
    result = next(e for e in events if e["kind"] == "tool_result")
    assert result["is_error"] is True and "not that" in result["output"]


async def test_interrupt_cancels_pending_permission(
    client: httpx.AsyncClient, project_dir: Path, fake_claude: dict[str, Any]
) -> None:
    tool = {"tool": "Bash", "input": {"command": "sleep 100"}, "permission": True}
    write_scenario(fake_claude["scenario"], [[tool, {"text": "never"}], [{"text": "back"}]])
    sid = await make_session(client, project_dir, fake_claude)
    await send(client, sid, "go")
    await wait_for_events(client, sid, count("permission_request"))
    r = await client.post(f"/api/sessions/{sid}/interrupt")
    assert r.status_code == 202
    events = await wait_for_events(client, sid, count("turn_end"))
    decision = next(e for e in events if e["kind"] == "permission_decision")
    assert decision["decision"] == "cancelled" and decision["source"] == "cancel"
    assert (await client.get("/api/permissions", params={"status": "pending"})).json() == []
    await send(client, sid, "again")
    events = await wait_for_events(client, sid, count("turn_end", 2))
    assert events[-1]["kind"] in ("turn_end", "status")


async def test_crash_mid_turn_shows_stderr_and_next_message_resumes(
    client: httpx.AsyncClient, project_dir: Path, fake_claude: dict[str, Any]
) -> None:
    write_scenario(
        fake_claude["scenario"],
        [[{"text": "first"}], [{"text": "partial"}, {"crash": 3, "stderr": "boom: model died"}]],
    )
    sid = await make_session(client, project_dir, fake_claude)
    await send(client, sid, "one")
    await wait_for_events(client, sid, count("turn_end"))
    backend_id = (await client.get(f"/api/sessions/{sid}")).json()["backend_session_id"]
    await send(client, sid, "two")
    events = await wait_for_events(client, sid, count("error"))
    error = next(e for e in events if e["kind"] == "error")
    assert "boom: model died" in error["detail"]
    # The session stays usable: the next message starts a new process with --resume.
    write_scenario(fake_claude["scenario"], [[{"text": "resumed"}]])
    await send(client, sid, "three")
    events = await wait_for_events(client, sid, count("turn_end", 2))
    assert [e["text"] for e in events if e["kind"] == "assistant_message"][-1] == "resumed"
    starts = [e["argv"] for e in fake_log(fake_claude) if "argv" in e]
    assert len(starts) == 2
    assert f"--resume={backend_id}" in starts[1]


async def test_restart_resumes_the_same_backend_session(
    settings: Settings, project_dir: Path, fake_claude: dict[str, Any]
) -> None:
    write_scenario(fake_claude["scenario"], [[{"text": "before"}]])
    first = LiveServer(create_app(settings))
    await first.start()
    async with first.client() as client:
        sid = await make_session(client, project_dir, fake_claude)
        await send(client, sid, "hello")
        await wait_for_events(client, sid, count("turn_end"))
        backend_id = (await client.get(f"/api/sessions/{sid}")).json()["backend_session_id"]
    pid = [e for e in fake_log(fake_claude) if "argv" in e][0]["pid"]
    await first.stop()
    # Stopping the server leaves no backend process behind.
    assert not _alive(pid)
    write_scenario(fake_claude["scenario"], [[{"text": "after"}]])
    second = LiveServer(create_app(settings))
    await second.start()
    try:
        async with second.client() as client:
            before = await client.get(f"/api/sessions/{sid}/events")
            assert [
                e["text"] for e in before.json()["events"] if e["kind"] == "assistant_message"
            ] == ["before"]
            await send(client, sid, "again")
            events = await wait_for_events(client, sid, count("turn_end", 2))
            assert events[-1]["kind"] in ("turn_end", "status")
            session = (await client.get(f"/api/sessions/{sid}")).json()
            assert session["backend_session_id"] == backend_id
    finally:
        await second.stop()
    starts = [e["argv"] for e in fake_log(fake_claude) if "argv" in e]
    assert f"--resume={backend_id}" in starts[1]


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # A zombie still answers kill(0); it is gone in every way that matters.
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split()[2] != "Z"
    except FileNotFoundError:
        return False


async def test_missing_binary_says_what_to_install(
    client: httpx.AsyncClient, project_dir: Path, fake_claude: dict[str, Any]
) -> None:
    fake = {**fake_claude, "command": ["/nonexistent/claude-binary"]}
    sid = await make_session(client, project_dir, fake)
    r = await client.post(f"/api/sessions/{sid}/messages", json={"text": "hi"})
    assert r.status_code >= 400
    assert "npm i -g @anthropic-ai/claude-code" in r.json()["detail"]
    events = (await client.get(f"/api/sessions/{sid}/events")).json()["events"]
    assert kinds(events)[0] == "user_message"
    error = next(e for e in events if e["kind"] == "error")
    assert "npm i -g @anthropic-ai/claude-code" in error["message"]
    assert (await client.get(f"/api/sessions/{sid}")).json()["status"] == "failed"


async def test_reconnect_with_last_event_id_is_lossless(
    client: httpx.AsyncClient, project_dir: Path, fake_claude: dict[str, Any]
) -> None:
    write_scenario(fake_claude["scenario"], [[{"text": "a b c d e f g h", "chunks": 8}]])
    sid = await make_session(client, project_dir, fake_claude)
    await send(client, sid, "go")
    events = await wait_for_events(client, sid, count("turn_end"))
    total = events[-1]["seq"]
    for n in (0, 1, 3, total - 2):
        frames = await read_sse(
            client,
            f"/api/sessions/{sid}/stream",
            headers={"Last-Event-ID": str(n)},
            until=lambda f, total=total: f[-1]["seq"] >= total,
        )
        assert seqs_of(frames) == list(range(n + 1, total + 1))
    frames = await read_sse(
        client, f"/api/sessions/{sid}/stream?after=2", until=lambda f: f[-1]["seq"] >= total
    )
    assert frames[0]["seq"] == 3


async def test_reconnect_mid_turn_misses_nothing(
    client: httpx.AsyncClient, project_dir: Path, fake_claude: dict[str, Any]
) -> None:
    steps = [{"text": "x " * 30, "chunks": 30, "delay": 0.02}]
    write_scenario(fake_claude["scenario"], [steps])
    sid = await make_session(client, project_dir, fake_claude)
    await send(client, sid, "go")
    first = await read_sse(client, f"/api/sessions/{sid}/stream", until=lambda f: len(f) >= 6)
    last = first[-1]["seq"]
    rest = await read_sse(
        client,
        f"/api/sessions/{sid}/stream",
        headers={"Last-Event-ID": str(last)},
        until=lambda f: f[-1]["kind"] == "turn_end",
    )
    seqs = seqs_of(first) + seqs_of(rest)
    assert seqs == list(range(1, len(seqs) + 1))
    deltas = [f["text"] for f in first + rest if f["kind"] == "text_delta"]
    assert "".join(deltas) == "x " * 30


async def test_idle_brain_is_stopped_and_resumes(
    server: LiveServer, client: httpx.AsyncClient, project_dir: Path, fake_claude: dict[str, Any]
) -> None:
    write_scenario(fake_claude["scenario"], [[{"text": "one"}]])
    sid = await make_session(client, project_dir, fake_claude)
    await send(client, sid, "first")
    await wait_for_events(client, sid, count("turn_end"))
    manager = server.app.state.angelia.manager
    manager.settings.idle_timeout_s = 0
    assert await manager.reap_idle() == [sid]
    assert not manager.is_live(sid)
    write_scenario(fake_claude["scenario"], [[{"text": "two"}]])
    await send(client, sid, "second")
    events = await wait_for_events(client, sid, count("turn_end", 2))
    assert [e["text"] for e in events if e["kind"] == "assistant_message"] == ["one", "two"]
    starts = [e["argv"] for e in fake_log(fake_claude) if "argv" in e]
    backend_id = (await client.get(f"/api/sessions/{sid}")).json()["backend_session_id"]
    assert len(starts) == 2 and f"--resume={backend_id}" in starts[1]


async def test_a_burst_of_deltas_is_stored_coalesced_without_losing_text(
    client: httpx.AsyncClient, project_dir: Path, fake_claude: dict[str, Any]
) -> None:
    text = " ".join(f"w{i}" for i in range(400))
    write_scenario(fake_claude["scenario"], [[{"text": text, "chunks": 400}]])
    sid = await make_session(client, project_dir, fake_claude)
    await send(client, sid, "go")
    events = await wait_for_events(client, sid, count("turn_end"))
    deltas = [e for e in events if e["kind"] == "text_delta"]
    assert "".join(d["text"] for d in deltas) == text
    assert 1 <= len(deltas) < 400
