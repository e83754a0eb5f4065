"""Where ``angelia serve`` listens: an address of this install's own in 127/8, so a
browser keeps its cookie apart from every other server on 127.0.0.1."""

from __future__ import annotations

import ipaddress
import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from tests.conftest import TOKEN
from tests.faults._support import ServerProcess
from tests.security._support import REPO, free_port

SHARED_WARNING = "WARNING: serving on 127.0.0.1"


def own_address(url: str) -> str:
    host = urlsplit(url).hostname
    assert host is not None
    address = ipaddress.IPv4Address(host)
    assert address in ipaddress.IPv4Network("127.0.0.0/8"), url
    assert all(0 < octet < 255 for octet in address.packed[1:]), url
    assert host != "127.0.0.1"
    return host


async def test_serve_listens_on_its_own_loopback_address_and_keeps_it(tmp_path: Path) -> None:
    data = tmp_path / "data"
    first = ServerProcess(data, tmp_path, host=None).start()
    try:
        host = own_address(first.url)
        assert first.signin_url == f"{first.url}/?token={TOKEN}"
        assert "WARNING" not in first.log()
        assert (data / "loopback-address").read_text().strip() == host
        async with first.client() as c:
            # The Host allowlist follows the address; a foreign name is still refused.
            assert (await c.get("/api/sessions")).status_code == 200
            r = await c.get("/api/sessions", headers={"Host": f"evil.example:{first.port}"})
            assert r.status_code == 403
    finally:
        first.stop()
    again = ServerProcess(data, tmp_path, host=None).start()
    try:
        assert urlsplit(again.url).hostname == host
    finally:
        again.stop()


@pytest.mark.parametrize("how", ["--host", "ANGELIA_HOST"])
async def test_an_explicit_shared_loopback_host_wins_with_a_warning(
    tmp_path: Path, how: str
) -> None:
    env = {**os.environ, "ANGELIA_HOST": "127.0.0.1"} if how == "ANGELIA_HOST" else None
    server = ServerProcess(
        tmp_path / "data", tmp_path, host="127.0.0.1" if how == "--host" else None, env=env
    ).start()
    try:
        assert server.url == f"http://127.0.0.1:{server.port}"
        assert SHARED_WARNING in server.log()
        assert "sign-in cookie" in server.log()
        async with server.client() as c:
            assert (await c.get("/api/sessions")).status_code == 200
    finally:
        server.stop()


def _only_127_0_0_1_routed() -> bool:
    """True if a network namespace can be made where only 127.0.0.1 is local (as on macOS)."""
    if shutil.which("unshare") is None or shutil.which("ip") is None:
        return False
    probe = subprocess.run(["unshare", "-rn", "true"], capture_output=True, timeout=10)
    return probe.returncode == 0


def test_serve_falls_back_to_127_0_0_1_with_a_warning(tmp_path: Path) -> None:
    if not _only_127_0_0_1_routed():
        pytest.skip("cannot make a network namespace here (unshare -rn, ip)")
    port = free_port()
    serve = [sys.executable, "-m", "app.cli", "serve", "--port", str(port), "--no-browser"]
    serve += ["--data-dir", str(tmp_path / "data")]
    # Loopback with 127.0.0.1/32 only: the other 127/8 addresses cannot be bound.
    script = (
        "ip link set lo up && ip addr del 127.0.0.1/8 dev lo && "
        "ip addr add 127.0.0.1/32 dev lo && exec " + shlex.join(serve)
    )
    env = {**os.environ, "ANGELIA_TOKEN": TOKEN, "PYTHONUNBUFFERED": "1"}
    env.pop("ANGELIA_DATA_DIR", None)
    env.pop("ANGELIA_HOST", None)
    proc = subprocess.Popen(
        ["unshare", "-rn", "sh", "-ec", script],
        cwd=REPO,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        opened = ""
        while not opened.startswith("Open "):
            opened = proc.stdout.readline()
            assert opened, "serve ended before printing its URL"
    finally:
        proc.kill()
        _, err = proc.communicate(timeout=10)
    warning = err.splitlines()[0] if err else ""
    kept = (tmp_path / "data" / "loopback-address").read_text().strip()
    assert warning.startswith(f"{SHARED_WARNING} because this system does not route {kept}")
    assert "sign-in cookie" in warning
    link = rf"Open http://127\.0\.0\.1:{port}/signin\?code=[\w-]{{43}}"
    assert re.fullmatch(link, opened.strip())
    assert TOKEN not in opened
    assert re.fullmatch(r"127\.\d+\.\d+\.\d+", kept)
