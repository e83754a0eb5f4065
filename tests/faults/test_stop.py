"""Ctrl-C (SIGINT) and SIGTERM while tabs are open and a backend waits for an approval,
or a terminal session's transcript is being followed.

The server must end every event stream, stop the backend's whole process group, expire
the waiting prompt with a reason, keep every stored event, and exit within 3 s. A second
Ctrl-C exits at once.
"""

from __future__ import annotations

import os
import signal
import threading
import time
from pathlib import Path
from typing import Any

import httpx
import pytest
from sqlmodel import Session, select

from app.db.engine import open_database
from app.db.models import PermissionRequest
from app.services.store import store
from app.services.store.eventlog import EventLog
from tests.api.test_chat import fake_log
from tests.conftest import TOKEN, write_scenario
from tests.faults._support import ServerProcess, fake_starts, wait_until
from tests.helpers import count, send, wait_for_events
from tests.security._support import make_session, pid_alive, processes_mentioning
from tests.web.history.test_pages_terminal import SHOP, terminal_transcript

STOP_LIMIT_S = 3.0

# A turn that waits for an approval; the fake ignores stdin EOF and SIGTERM, so only
# the bounded close's SIGKILL of its group can end it.
WAITING_TURN: list[dict[str, Any]] = [
    {"text": "let me look", "chunks": 3},
    {"tool": "Bash", "input": {"command": "ls"}, "permission": True},
    {"sleep": 60},
]


class StreamReader(threading.Thread):
    """An SSE client that reads until the server ends the stream."""

    def __init__(self, url: str) -> None:
        super().__init__(daemon=True)
        self.url = url
        self.connected = threading.Event()
        self.ended_at: float | None = None
        self.ids: list[int] = []
        self.error: BaseException | None = None

    def run(self) -> None:
        headers = {"Authorization": f"Bearer {TOKEN}"}
        try:
            with httpx.stream("GET", self.url, headers=headers, timeout=30) as resp:
                resp.raise_for_status()
                self.connected.set()
                for line in resp.iter_lines():
                    if line.startswith("id:"):
                        self.ids.append(int(line[3:].strip()))
        except httpx.HTTPError as exc:  # a reset instead of a clean end also counts as ended
            self.error = exc
        finally:
            self.ended_at = time.monotonic()
            self.connected.set()


async def _waiting_session(
    server: ServerProcess, project_dir: Path, fake: dict[str, Any]
) -> tuple[str, list[dict[str, Any]], list[StreamReader]]:
    async with server.client() as client:
        sid = await make_session(client, project_dir, fake)
        readers = [
            StreamReader(f"{server.url}/api/sessions/{sid}/stream"),
            StreamReader(f"{server.url}/sessions/{sid}/live"),
        ]
        for reader in readers:
            reader.start()
            assert reader.connected.wait(10)
        await send(client, sid, "list the files")
        before = await wait_for_events(client, sid, count("permission_request"))
    # Both tabs have seen the prompt, so they are following the live queue.
    wait_until(lambda: all(before[-1]["seq"] in r.ids for r in readers), 10, "both streams")
    return sid, before, readers


def stored_after_stop(data_dir: Path, sid: str, before: list[dict[str, Any]]) -> None:
    """What a stop must leave in the data dir, read without starting the app (so no
    recovery runs): every earlier event, gapless, then the expired prompt and a notice,
    and nothing after the notice (the backend's words once it was interrupted are not
    stored: they would read as a reply under "The server stopped…")."""
    engine = open_database(data_dir)
    try:
        events = EventLog(engine).list(sid)
        with Session(engine) as db:
            prompts = list(db.exec(select(PermissionRequest)))
        status = store.get_session(engine, sid)
        assert status.status == "interrupted" and status.backend_pid is None
    finally:
        engine.dispose()
    assert events[: len(before)] == before, "events stored before the stop changed"
    assert [e["seq"] for e in events] == list(range(1, len(events) + 1))
    [prompt] = prompts
    assert prompt.status == "expired"
    assert prompt.message is not None and prompt.message.startswith("Server stopped")
    after = [e["kind"] for e in events[len(before) :]]
    assert "permission_decision" in after and "error" in after, after
    notice = next(e for e in events if e["kind"] == "error")
    assert "server stopped" in notice["message"].lower()
    assert events[-1] == notice, [e["kind"] for e in events[events.index(notice) :]]


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
async def test_a_signal_stops_everything_within_3_s(
    sig: signal.Signals, tmp_path: Path, project_dir: Path, fake_claude: dict[str, Any]
) -> None:
    write_scenario(fake_claude["scenario"], [WAITING_TURN], ignore_eof=True, ignore_sigterm=True)
    server = ServerProcess(tmp_path / "served", tmp_path).start()
    try:
        sid, before, readers = await _waiting_session(server, project_dir, fake_claude)
        backend = fake_starts(fake_claude)[0]["pid"]
        assert pid_alive(backend)

        signalled = time.monotonic()
        code, took = server.signal_and_wait(sig)
    finally:
        if server.proc is not None and server.proc.poll() is None:
            server.proc.kill()
    assert took <= STOP_LIMIT_S, f"the server took {took:.2f} s to stop: {server.log()}"
    assert code == (130 if sig == signal.SIGINT else -signal.SIGTERM), server.log()
    for reader in readers:
        reader.join(5)
        assert reader.ended_at is not None, f"{reader.url} was still open"
        assert reader.ended_at - signalled <= STOP_LIMIT_S
    assert not pid_alive(backend), "the backend survived the stop"
    assert processes_mentioning(str(fake_claude["log"])) == [], "a backend process survived"
    assert "Traceback" not in server.log(), server.log()

    stored_after_stop(server.data_dir, sid, before)


async def test_what_the_backend_says_once_interrupted_is_not_stored(
    tmp_path: Path, project_dir: Path, fake_claude: dict[str, Any]
) -> None:
    # A backend that speaks up when signalled, as Claude Code answers a dropped prompt.
    write_scenario(
        fake_claude["scenario"], [WAITING_TURN], ignore_eof=True, say_on_sigterm="a stray reply"
    )
    server = ServerProcess(tmp_path / "served", tmp_path).start()
    try:
        sid, before, _readers = await _waiting_session(server, project_dir, fake_claude)
        code, _took = server.signal_and_wait(signal.SIGINT)
    finally:
        if server.proc is not None and server.proc.poll() is None:
            server.proc.kill()
    assert code == 130, server.log()
    assert {"said": "a stray reply"} in fake_log(fake_claude), "the backend did not speak"
    stored_after_stop(server.data_dir, sid, before)


async def test_a_second_ctrl_c_exits_at_once(
    tmp_path: Path, project_dir: Path, fake_claude: dict[str, Any]
) -> None:
    write_scenario(fake_claude["scenario"], [WAITING_TURN], ignore_eof=True, ignore_sigterm=True)
    server = ServerProcess(tmp_path / "served", tmp_path).start()
    try:
        _sid, _before, _readers = await _waiting_session(server, project_dir, fake_claude)
        backend = fake_starts(fake_claude)[0]["pid"]
        os.kill(server.pid, signal.SIGINT)
        # The backend ignores EOF and SIGTERM, so the graceful stop needs its whole grace.
        time.sleep(0.2)
        assert server.proc is not None and server.proc.poll() is None
        code, took = server.signal_and_wait(signal.SIGINT)
    finally:
        if server.proc is not None and server.proc.poll() is None:
            server.proc.kill()
    assert took < 0.5, f"the second Ctrl-C took {took:.2f} s"
    assert code == 130
    wait_until(lambda: not pid_alive(backend), 2, "the backend to be killed")
    assert processes_mentioning(str(fake_claude["log"])) == []


async def test_a_signal_stops_the_watchers_of_followed_terminal_sessions(
    tmp_path: Path,
) -> None:
    # A terminal session written just now: opening it here follows its file.
    terminal_transcript()
    server = ServerProcess(tmp_path / "served", tmp_path).start()
    try:
        async with server.client() as client:
            r = await client.post(f"/sessions/import/claude/{SHOP}", follow_redirects=False)
            assert r.status_code == 303, r.text
            page = await client.get(r.headers["location"])
            assert 'id="follow-banner"' in page.text
        sid = r.headers["location"].rsplit("/", 1)[1]
        reader = StreamReader(f"{server.url}/sessions/{sid}/live")
        reader.start()
        assert reader.connected.wait(10)
        code, took = server.signal_and_wait(signal.SIGINT)
    finally:
        if server.proc is not None and server.proc.poll() is None:
            server.proc.kill()
    assert took <= STOP_LIMIT_S, f"the server took {took:.2f} s to stop: {server.log()}"
    assert code == 130, server.log()
    reader.join(5)
    assert reader.ended_at is not None
    assert "Traceback" not in server.log(), server.log()
