"""One server per data dir: a second ``angelia serve`` stops before it touches anything."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import TOKEN, write_scenario
from tests.faults._support import ServerProcess, fake_starts, wait_until
from tests.helpers import count, send, wait_for_events
from tests.security._support import REPO, free_port, make_session, pid_alive

LONG_TURN: list[dict[str, Any]] = [{"text": "working", "chunks": 3}, {"sleep": 60}]


def serve_again(data_dir: Path, port: int) -> subprocess.CompletedProcess[str]:
    argv = [sys.executable, "-m", "app.cli", "serve", "--data-dir", str(data_dir)]
    argv += ["--port", str(port), "--no-browser"]
    env = {"PATH": "/usr/bin:/bin", "ANGELIA_TOKEN": TOKEN, "HOME": str(data_dir.parent)}
    return subprocess.run(argv, cwd=REPO, env=env, capture_output=True, text=True, timeout=60)


@pytest.mark.parametrize("same_port", [False, True], ids=["other-port", "same-port"])
async def test_a_second_server_leaves_the_first_ones_agents_alone(
    tmp_path: Path, project_dir: Path, fake_claude: dict[str, Any], same_port: bool
) -> None:
    write_scenario(fake_claude["scenario"], [LONG_TURN])
    # On its own per-install address, as a user would start it.
    first = ServerProcess(tmp_path / "data", tmp_path, host=None).start()
    try:
        async with first.client() as client:
            sid = await make_session(client, project_dir, fake_claude)
            await send(client, sid, "take your time")
            before = await wait_for_events(client, sid, count("assistant_message"))
            agent = fake_starts(fake_claude)[0]["pid"]

            second = serve_again(first.data_dir, first.port if same_port else free_port())

            out = second.stdout + second.stderr
            assert second.returncode == 1, out
            assert "Traceback" not in out, out
            lines = [line for line in out.splitlines() if line.strip()]
            assert len(lines) == 1, out
            assert lines[0].startswith("angelia: Another Angelia server is already running")
            assert f" at {first.url}/ (pid {first.pid})" in lines[0], "where the running one is"
            assert TOKEN not in out and "token" not in out.lower()
            assert "Open http" not in out

            # The first server's agent and session are untouched, and it still works.
            assert pid_alive(agent)
        # On a new connection: the second server can take longer to give up than the first
        # one keeps an idle connection open (5 s), and a request sent as the server closes
        # it gets no answer, whichever server it is.
        async with first.client() as client:
            session = (await client.get(f"/api/sessions/{sid}")).json()
            assert session["status"] == "working"
            after = (await client.get(f"/api/sessions/{sid}/events")).json()["events"]
            assert after[: len(before)] == before
            assert "interrupted" not in str(after)
            assert (await client.get("/api/health")).status_code == 200
    finally:
        first.stop()
    wait_until(lambda: not pid_alive(agent), 10, "the agent to stop with its server")


async def test_the_data_dir_is_free_again_once_the_server_stopped(tmp_path: Path) -> None:
    first = ServerProcess(tmp_path / "data", tmp_path).start()
    first.stop()
    again = ServerProcess(first.data_dir, tmp_path).start()
    try:
        async with again.client() as client:
            assert (await client.get("/api/profiles")).status_code == 200
    finally:
        again.stop()
    assert "already running" not in again.log()


async def test_a_killed_server_does_not_keep_the_data_dir(tmp_path: Path) -> None:
    first = ServerProcess(tmp_path / "data", tmp_path).start()
    first.kill9()
    again = ServerProcess(first.data_dir, tmp_path).start()
    again.stop()
    assert "already running" not in again.log()
