"""``angelia serve`` on a fresh machine: it makes nothing the user did not choose."""

from __future__ import annotations

import os
from pathlib import Path

from tests.faults._support import ServerProcess
from tests.helpers import fake_cli
from tests.security._support import REPO


async def test_the_quick_start_makes_no_profile_for_the_checkout(tmp_path: Path) -> None:
    # The README's quick start: run from Angelia's own checkout with only claude installed.
    bindir = tmp_path / "bin"
    bindir.mkdir()
    fake_cli(bindir, "claude", 'print("2.1.332 (Claude Code)")')
    env = {**os.environ, "PATH": str(bindir), "HOME": str(tmp_path)}
    server = ServerProcess(tmp_path / "data", tmp_path, cwd=REPO, env=env).start()
    try:
        async with server.client() as client:
            assert (await client.get("/api/profiles")).json() == []
            first = await client.get("/", follow_redirects=False)
            assert first.status_code == 303 and first.headers["location"] == "/welcome"
    finally:
        server.stop()
    assert "Created a profile" not in server.log()
    assert "profile" not in server.log().lower()
