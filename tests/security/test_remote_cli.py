"""``angelia remote enable|disable|status`` against a fake ``tailscale`` on PATH: what
it runs, what it records (0600), what it undoes. Never the network."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import FAKES
from tests.security._support import REPO

RUNNING: dict[str, Any] = {
    "BackendState": "Running",
    "Self": {"DNSName": "angelia-box.tailnet-test.ts.net.", "UserID": 42},
    "User": {"42": {"LoginName": "owner@example.com"}},
}


@pytest.fixture
def fake(tmp_path: Path) -> dict[str, Any]:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    exe = bin_dir / "tailscale"
    exe.write_text(f"#!{sys.executable}\n" + (FAKES / "fake_tailscale.py").read_text())
    exe.chmod(0o755)
    status = tmp_path / "status.json"
    status.write_text(json.dumps(RUNNING))
    log = tmp_path / "tailscale.jsonl"
    env = {
        **os.environ,
        "PATH": f"{bin_dir}:/usr/bin:/bin",
        "FAKE_TAILSCALE_LOG": str(log),
        "FAKE_TAILSCALE_STATUS": str(status),
    }
    return {"env": env, "log": log, "status": status, "data": tmp_path / "data"}


def angelia(fake: dict[str, Any], *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "app.cli", "remote", *args, "--data-dir", str(fake["data"])],
        cwd=REPO,
        env={**fake["env"], **env},
        capture_output=True,
        text=True,
        timeout=60,
    )


def calls(fake: dict[str, Any]) -> list[list[str]]:
    log: Path = fake["log"]
    return [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []


def test_enable_serves_the_loopback_address_and_records_what_it_set(fake: dict[str, Any]) -> None:
    done = angelia(fake, "enable", "--port", "9123")
    assert done.returncode == 0, done.stderr
    address = (fake["data"] / "loopback-address").read_text().strip()
    target = f"http://{address}:9123"
    assert calls(fake) == [["status", "--json"], ["serve", "--bg", "--https=443", target]]
    record_path = fake["data"] / "remote.json"
    assert stat.S_IMODE(record_path.stat().st_mode) == 0o600
    record = json.loads(record_path.read_text())
    assert record == {
        "origin": "https://angelia-box.tailnet-test.ts.net",
        "owner": "owner@example.com",
        "serve": ["serve", "--bg", "--https=443", target],
    }
    assert "https://angelia-box.tailnet-test.ts.net" in done.stdout

    shown = angelia(fake, "status")
    assert shown.returncode == 0
    assert "on: https://angelia-box.tailnet-test.ts.net" in shown.stdout
    assert "owner@example.com" in shown.stdout

    off = angelia(fake, "disable")
    assert off.returncode == 0, off.stderr
    assert calls(fake)[-1] == ["serve", "--https=443", "off"]
    assert not record_path.exists()
    assert "Remote access is off." in angelia(fake, "status").stdout


def test_print_shows_the_command_and_runs_nothing(fake: dict[str, Any]) -> None:
    done = angelia(fake, "enable", "--print", "--port", "9123")
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("tailscale serve --bg --https=443 http://127.")
    assert calls(fake) == [["status", "--json"]]
    assert not (fake["data"] / "remote.json").exists()


def test_no_tailscale_on_path_is_said_plainly(fake: dict[str, Any], tmp_path: Path) -> None:
    done = angelia(fake, "enable", PATH=str(tmp_path / "nothing-here"))
    assert done.returncode == 1
    assert "'tailscale' command is not on PATH" in done.stderr and "Traceback" not in done.stderr


@pytest.mark.parametrize(
    ("status", "said"),
    [
        ({**RUNNING, "BackendState": "Stopped"}, "state is Stopped"),
        ({**RUNNING, "Self": {"DNSName": "", "UserID": 42}}, "MagicDNS"),
    ],
)
def test_enable_refuses_a_tailscale_that_cannot_serve(
    fake: dict[str, Any], status: dict[str, Any], said: str
) -> None:
    fake["status"].write_text(json.dumps(status))
    done = angelia(fake, "enable")
    assert done.returncode == 1 and said in done.stderr
    assert calls(fake) == [["status", "--json"]]
    assert not (fake["data"] / "remote.json").exists()


def test_a_failed_serve_records_nothing(fake: dict[str, Any]) -> None:
    done = angelia(fake, "enable", FAKE_TAILSCALE_FAIL="--bg")
    assert done.returncode == 1 and "--bg refused" in done.stderr
    assert not (fake["data"] / "remote.json").exists()


def test_disable_keeps_the_record_when_tailscale_refuses(fake: dict[str, Any]) -> None:
    assert angelia(fake, "enable").returncode == 0
    done = angelia(fake, "disable", FAKE_TAILSCALE_FAIL="off")
    assert done.returncode == 1 and "off refused" in done.stderr
    assert (fake["data"] / "remote.json").exists()


def test_serve_takes_the_recorded_origin(fake: dict[str, Any]) -> None:
    """The record's origin is what ``angelia serve`` checks (a bad one is refused, exit 2)."""
    assert angelia(fake, "enable").returncode == 0
    record = fake["data"] / "remote.json"
    data = json.loads(record.read_text())
    record.unlink()
    record.write_text(json.dumps({**data, "origin": "https://x/with-a-path"}))
    done = subprocess.run(
        [sys.executable, "-m", "app.cli", "serve", "--no-browser", "--data-dir", str(fake["data"])],
        cwd=REPO,
        env=fake["env"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2 and "no path" in done.stderr
