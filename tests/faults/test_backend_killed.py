"""The backend process is killed from outside in the middle of a turn."""

from __future__ import annotations

import os
import signal
from pathlib import Path
from typing import Any

import httpx

from tests.conftest import LiveServer, write_scenario
from tests.faults._support import fake_starts, wait_until
from tests.helpers import count, of_kind, send, wait_for_events
from tests.security._support import make_session, pid_alive


async def test_sigkill_of_the_backend_mid_turn_is_reported_and_resumable(
    server: LiveServer, client: httpx.AsyncClient, project_dir: Path, fake_claude: dict[str, Any]
) -> None:
    write_scenario(
        fake_claude["scenario"],
        [[{"text": "first"}], [{"text": "halfway", "chunks": 3}, {"sleep": 60}, {"text": "no"}]],
    )
    sid = await make_session(client, project_dir, fake_claude)
    await send(client, sid, "one")
    await wait_for_events(client, sid, count("turn_end"))
    backend_id = (await client.get(f"/api/sessions/{sid}")).json()["backend_session_id"]
    await send(client, sid, "two")
    await wait_for_events(client, sid, count("assistant_message", 2))
    pid = fake_starts(fake_claude)[0]["pid"]

    os.kill(pid, signal.SIGKILL)

    events = await wait_for_events(client, sid, count("error"))
    error = of_kind(events, "error")[0]
    assert "SIGKILL" in error["message"] and "middle of a turn" in error["message"], error
    wait_until(lambda: not pid_alive(pid), 5, "the killed backend to be reaped")
    session = (await client.get(f"/api/sessions/{sid}")).json()
    assert session["status"] == "failed"
    assert not server.app.state.angelia.manager.is_live(sid)
    # No approval or turn is left hanging.
    assert (await client.get("/api/permissions", params={"status": "pending"})).json() == []

    write_scenario(fake_claude["scenario"], [[{"text": "resumed"}]])
    await send(client, sid, "three")
    events = await wait_for_events(client, sid, count("turn_end", 2))
    texts = [e["text"] for e in of_kind(events, "assistant_message")]
    assert texts == ["first", "halfway", "resumed"]
    starts = fake_starts(fake_claude)
    assert len(starts) == 2 and f"--resume={backend_id}" in starts[1]["argv"]
    assert [e["seq"] for e in events] == list(range(1, len(events) + 1))
