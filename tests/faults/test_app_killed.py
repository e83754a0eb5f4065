"""The app is killed with SIGKILL in the middle of a turn, then started again."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

from app.db.engine import open_database
from app.main import create_app
from app.schemas import ProfileCreate
from app.services.store import store
from app.settings import Settings
from tests.conftest import write_scenario
from tests.faults._support import ServerProcess, fake_starts, wait_until
from tests.helpers import count, send, wait_for_events
from tests.security._support import make_session, pid_alive, processes_mentioning

LONG_TURN: list[dict[str, Any]] = [
    {"text": "before the kill", "chunks": 5},
    {"sleep": 60},
    {"text": "never"},
]


async def _kill_mid_turn(
    tmp_path: Path, project_dir: Path, fake: dict[str, Any], *, completed_turns: int
) -> tuple[str, list[dict[str, Any]], ServerProcess]:
    """Run ``completed_turns`` whole turns, start a long one, SIGKILL the app during it.

    Returns the session id, the events stored before the kill, and the dead server.
    """
    # ignore_eof/ignore_sigterm: the fake outlives its stdin closing, so only the
    # parent-death signal (or the restart's reaping) can end it.
    turns: list[list[dict[str, Any]]] = [
        [{"text": f"turn {n} done"}] for n in range(completed_turns)
    ]
    turns.append(LONG_TURN)
    write_scenario(fake["scenario"], turns, ignore_eof=True, ignore_sigterm=True)
    server = ServerProcess(tmp_path / "served", tmp_path).start()
    try:
        async with server.client() as client:
            sid = await make_session(client, project_dir, fake)
            for n in range(completed_turns):
                await send(client, sid, f"message {n}")
                await wait_for_events(client, sid, count("turn_end", n + 1))
            await send(client, sid, "start a long turn")
            before = await wait_for_events(
                client, sid, count("assistant_message", completed_turns + 1)
            )
            session = (await client.get(f"/api/sessions/{sid}")).json()
            assert session["status"] == "working"
        fake_pid = fake_starts(fake)[0]["pid"]
        assert pid_alive(fake_pid)
        server.kill9()
    finally:
        if server.proc is not None and server.proc.poll() is None:
            server.proc.kill()
    # PR_SET_PDEATHSIG takes the backend down with the app.
    wait_until(lambda: not pid_alive(fake_pid), 5, f"backend pid {fake_pid} to die")
    return sid, before, server


async def test_kill_9_mid_turn_keeps_events_and_resumes(
    tmp_path: Path, project_dir: Path, fake_claude: dict[str, Any]
) -> None:
    marker = str(fake_claude["log"])
    sid, before, first = await _kill_mid_turn(tmp_path, project_dir, fake_claude, completed_turns=1)
    write_scenario(fake_claude["scenario"], [[{"text": "resumed after the crash"}]])
    second = ServerProcess(first.data_dir, tmp_path).start()
    try:
        async with second.client() as client:
            after = (await client.get(f"/api/sessions/{sid}/events")).json()["events"]
            assert after[: len(before)] == before, "events stored before the kill changed"
            assert [e["seq"] for e in after] == list(range(1, len(after) + 1))
            notice = after[len(before) :]
            assert [e["kind"] for e in notice] == ["error"], notice
            assert "interrupted" in notice[0]["message"]
            session = (await client.get(f"/api/sessions/{sid}")).json()
            assert session["status"] == "interrupted"
            backend_id = session["backend_session_id"]
            assert backend_id
            assert processes_mentioning(marker) == [], "a backend process survived"

            await send(client, sid, "carry on")
            events = await wait_for_events(client, sid, count("turn_end", 2))
            texts = [e["text"] for e in events if e["kind"] == "assistant_message"]
            assert texts == ["turn 0 done", "before the kill", "resumed after the crash"]
        starts = fake_starts(fake_claude)
        assert len(starts) == 2
        assert f"--resume={backend_id}" in starts[1]["argv"]
    finally:
        second.stop()
    logs = first.log() + second.log()
    assert "Traceback" not in logs, logs
    wait_until(lambda: processes_mentioning(marker) == [], 5, "no backend left after stop")


async def test_kill_9_during_the_first_turn_still_resumes(
    tmp_path: Path, project_dir: Path, fake_claude: dict[str, Any]
) -> None:
    sid, _before, first = await _kill_mid_turn(
        tmp_path, project_dir, fake_claude, completed_turns=0
    )
    started_as = next(
        a for a in fake_starts(fake_claude)[0]["argv"] if a.startswith("--session-id=")
    ).split("=", 1)[1]
    write_scenario(fake_claude["scenario"], [[{"text": "resumed"}]])
    second = ServerProcess(first.data_dir, tmp_path).start()
    try:
        async with second.client() as client:
            await send(client, sid, "carry on")
            await wait_for_events(client, sid, count("turn_end"))
    finally:
        second.stop()
    assert f"--resume={started_as}" in fake_starts(fake_claude)[1]["argv"]


def test_restart_reaps_a_backend_group_left_by_a_previous_run(
    settings: Settings, project_dir: Path
) -> None:
    """When the parent-death signal could not help (it is Linux-only, and a backend's own
    children are in its group), the next start kills the recorded process group."""
    engine = open_database(settings.data_dir)
    profile = store.create_profile(
        engine, data=ProfileCreate(name="p", backend="claude", cwd=str(project_dir))
    )
    chat = store.create_session(engine, profile_id=profile.id, title="orphaned")
    # A stand-in for a backend that outlived the app: a group leader with a child.
    orphan = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import subprocess, sys, time; "
            "subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(120)']); "
            "time.sleep(120)",
        ],
        start_new_session=True,
    )
    try:
        wait_until(lambda: len(_group(orphan.pid)) == 2, 10, "the orphan's child")
        members = _group(orphan.pid)
        store.update_session(engine, chat.id, status="working", backend_pid=orphan.pid)
        engine.dispose()

        create_app(settings).state.angelia.engine.dispose()  # start-up runs the recovery

        orphan.wait(timeout=5)
        wait_until(lambda: not any(pid_alive(p) for p in members), 5, "the whole group to die")
        engine = open_database(settings.data_dir)
        row = store.get_session(engine, chat.id)
        assert row.status == "interrupted" and row.backend_pid is None
        engine.dispose()
    finally:
        if orphan.poll() is None:
            orphan.kill()
            orphan.wait()


def test_restart_leaves_a_reused_pid_alone(settings: Settings, project_dir: Path) -> None:
    """A recorded pid that now belongs to an unrelated process (not a group leader) is not
    killed."""
    engine = open_database(settings.data_dir)
    profile = store.create_profile(
        engine, data=ProfileCreate(name="p", backend="claude", cwd=str(project_dir))
    )
    chat = store.create_session(engine, profile_id=profile.id, title="stale pid")
    bystander = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        store.update_session(engine, chat.id, status="live", backend_pid=bystander.pid)
        engine.dispose()
        create_app(settings).state.angelia.engine.dispose()
        assert bystander.poll() is None, "an unrelated process was killed"
    finally:
        bystander.kill()
        bystander.wait()


def _group(pgid: int) -> list[int]:
    out = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            fields = stat.rsplit(")", 1)[1].split()
            if int(fields[2]) == pgid and fields[0] != "Z":
                out.append(int(entry.name))
    return out
