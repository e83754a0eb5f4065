"""Ctrl-C with a tab open while the real Claude Code CLI waits for an approval.

The same stop as ``tests/faults/test_stop.py`` runs against a fake that ignores EOF and
SIGTERM; here the real CLI shows that its whole process group goes, the waiting prompt
is expired, the tool never runs, the stored events stay, and the CLI never gets to ask
the model once more (a billed request with a real one) about the request left unanswered.
"""

from __future__ import annotations

import signal
import time
from pathlib import Path

import pytest

from tests.fakes.fake_model_server import FakeModelServer
from tests.faults._support import ServerProcess
from tests.faults.test_stop import STOP_LIMIT_S, StreamReader, stored_after_stop
from tests.helpers import count, send, wait_for_events
from tests.real.steps import new_claude_session
from tests.security._support import pid_alive, processes_mentioning

pytestmark = pytest.mark.real_cli


async def test_ctrl_c_stops_the_real_cli_and_expires_its_prompt(
    tmp_path: Path,
    project_dir: Path,
    claude_bin: Path,
    claude_env: dict[str, str],
    fake_model: FakeModelServer,
) -> None:
    server = ServerProcess(tmp_path / "served", tmp_path).start()
    try:
        async with server.client() as client:
            sid = await new_claude_session(client, project_dir, claude_bin, claude_env)
            reader = StreamReader(f"{server.url}/api/sessions/{sid}/stream")
            reader.start()
            assert reader.connected.wait(10)
            await send(client, sid, "BASH: touch a")
            before = await wait_for_events(client, sid, count("permission_request"), timeout=60)
        # The CLI and anything it started: every process with this test's HOME.
        backends = processes_mentioning(claude_env["HOME"])
        assert backends, "Claude Code is not running"

        asked = len(fake_model.requests())
        signalled = time.monotonic()
        code, took = server.signal_and_wait(signal.SIGINT)
    finally:
        if server.proc is not None and server.proc.poll() is None:
            server.proc.kill()
    assert took <= STOP_LIMIT_S, f"the server took {took:.2f} s to stop: {server.log()}"
    assert code == 130, server.log()
    reader.join(5)
    assert reader.ended_at is not None and reader.ended_at - signalled <= STOP_LIMIT_S
    assert not any(pid_alive(p) for p in backends), "Claude Code survived the stop"
    assert processes_mentioning(claude_env["HOME"]) == [], "a Claude Code process survived"
    assert not (project_dir / "a").exists(), "the tool ran without an answer"
    assert "Traceback" not in server.log(), server.log()
    # Every process of the CLI is gone: no request can still be on its way.
    late = fake_model.requests()[asked:]
    assert late == [], f"the CLI asked the model after the signal: {[e['path'] for e in late]}"
    stored_after_stop(server.data_dir, sid, before)
