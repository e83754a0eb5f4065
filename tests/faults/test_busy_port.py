"""``angelia serve`` on a port something else listens on: one clear line, no URL."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

from tests.conftest import TOKEN
from tests.faults._support import ServerProcess
from tests.security._support import REPO, free_port


def serve(data_dir: Path, port: int, *extra: str) -> subprocess.CompletedProcess[str]:
    argv = [sys.executable, "-m", "app.cli", "serve", "--data-dir", str(data_dir)]
    argv += ["--port", str(port), "--no-browser", *extra]
    env = {**os.environ, "ANGELIA_TOKEN": TOKEN, "HOME": str(data_dir.parent)}
    env.pop("ANGELIA_DATA_DIR", None)
    return subprocess.run(argv, cwd=REPO, env=env, capture_output=True, text=True, timeout=60)


def assert_refused(result: subprocess.CompletedProcess[str], host: str, port: int) -> str:
    out = result.stdout + result.stderr
    assert result.returncode == 1, out
    assert "Traceback" not in out and "Errno" not in out, out
    assert "Open http" not in out and TOKEN not in out, "no URL the server could not answer"
    line = out.strip().splitlines()[-1]
    assert line.startswith(f"angelia: port {port} on {host} is already in use"), out
    assert "--port" in line
    return out


def test_a_busy_port_on_the_own_address_is_named_before_any_url(tmp_path: Path) -> None:
    data = tmp_path / "data"
    data.mkdir(mode=0o700)
    # The address this install serves on, chosen once and kept in the data dir.
    address = data / "loopback-address"
    address.write_text("127.31.41.59\n")
    address.chmod(0o600)
    port = free_port()
    with socket.socket() as other:
        other.bind(("127.31.41.59", port))
        other.listen()
        out = assert_refused(serve(data, port), "127.31.41.59", port)
    assert len(out.strip().splitlines()) == 1, out


def test_an_angelia_with_another_data_dir_keeps_its_port(tmp_path: Path) -> None:
    first = ServerProcess(tmp_path / "first", tmp_path).start()
    try:
        assert_refused(
            serve(tmp_path / "second", first.port, "--host", "127.0.0.1"), "127.0.0.1", first.port
        )
    finally:
        first.stop()
    assert "already in use" not in first.log()
