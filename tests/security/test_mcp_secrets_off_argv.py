"""No secret of a profile on any agent's command line, which every local user can read.

A profile's MCP servers (their env values and headers are tokens) and its own env reach
each backend's CLI, started through the app and the real process transport, and the
child's ``/proc/<pid>/cmdline`` holds none of those values. The servers still reach the
agent: in ``session/new`` over stdin, or in a private file it reads at start, which is
gone once the session is open.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import httpx
import pytest

from app.brains import available_backends
from tests.conftest import FAKE_CLAUDE, write_scenario
from tests.fakes.fake_acp_agent import FakeAcpFiles
from tests.helpers import count, send, wait_for_events

SECRET_ENV = "env-secret-5f1d0c"
SECRET_HEADER = "header-secret-9a2b7e"
SECRET_PROFILE = "profile-secret-3c8e41"
SECRETS = (SECRET_ENV, SECRET_HEADER, SECRET_PROFILE)
STDIO = {"command": "mark-server", "args": ["--log", "x"], "env": {"SECRET_VALUE": SECRET_ENV}}
HTTP = {
    "type": "http",
    "url": "http://127.0.0.1:9/mcp",
    "headers": {"Authorization": f"Bearer {SECRET_HEADER}"},
}
# pi takes stdio servers only (app/brains/acp/agents/pi.py).
STDIO_ONLY = {"pi"}
# gemini starts no per-session MCP server (catalog.toml), so a profile cannot have one.
NO_MCP = {"gemini"}
# Those that take the servers in a file rather than in session/new.
IN_A_FILE = {"claude", "claude-acp", "copilot", "pi"}
BACKENDS = sorted(set(available_backends()) - NO_MCP)


def profile_body(backend: str, tmp_path: Path) -> tuple[dict[str, Any], Path]:
    """The API body of a ``backend`` profile running a recording fake; the fake's log."""
    servers: dict[str, Any] = {"mark": STDIO}
    if backend not in STDIO_ONLY:
        servers["web"] = HTTP
    env = {"PROFILE_TOKEN": SECRET_PROFILE}
    if backend == "claude":
        log = tmp_path / "claude.jsonl"
        scenario = write_scenario(tmp_path / "scenario.json", [[{"text": "hi"}]])
        env |= {"FAKE_CLAUDE_LOG": str(log), "FAKE_CLAUDE_SCENARIO": str(scenario)}
        command = [sys.executable, str(FAKE_CLAUDE)]
        cwd = tmp_path
    else:
        files = FakeAcpFiles(tmp_path)
        files.scenario([{"text": "hi"}], mcp_http=True, mcp_sse=True)
        env |= files.env()
        log, cwd = files.log_path, files.cwd
        command = [str(files.grok_bin() / "grok")] if backend == "grok" else list(files.command)
    body = {"name": backend, "backend": backend, "cwd": str(cwd), "command": command}
    return body | {"env": env, "mcp_servers": servers}, log


def entries(log: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in log.read_text().splitlines()]


def files_read(log: Path) -> list[dict[str, Any]]:
    """The MCP config files the fake read (at start, or named by ``session/new``):
    content, mode, its folder's mode."""
    found = entries(log)
    given = [found[0].get("mcp_config"), *found[0].get("mcp_files", {}).values()]
    return [f for f in given + [e.get("mcp_file") for e in found] if f is not None]


def what_reached(log: Path) -> list[Any]:
    """Every MCP config the fake received: in a file it read, or in ``session/new``."""
    found = entries(log)
    news = [e["in"]["params"] for e in found if e.get("in", {}).get("method") == "session/new"]
    return [*(f["content"] for f in files_read(log)), *(n["mcpServers"] for n in news)]


@pytest.mark.parametrize("backend", BACKENDS)
async def test_no_secret_of_a_profile_reaches_an_agents_command_line(
    client: httpx.AsyncClient, tmp_path: Path, backend: str
) -> None:
    body, log = profile_body(backend, tmp_path)
    r = await client.post("/api/profiles", json=body)
    assert r.status_code == 201, r.text
    sid = (await client.post("/api/sessions", json={"profile_id": r.json()["id"]})).json()["id"]
    await send(client, sid, "hello")
    await wait_for_events(client, sid, count("turn_end"))

    # The CLI runs on between turns: what the kernel shows every user about it.
    start = entries(log)[0]
    cmdline = Path(f"/proc/{start['pid']}/cmdline").read_bytes().decode()
    args, argv = cmdline.split("\0")[:-1], start["argv"]
    assert "fake_" in cmdline and args[len(args) - len(argv) :] == argv, (cmdline, argv)
    for secret in SECRETS:
        assert secret not in cmdline, (backend, cmdline)

    # ...and yet the servers reached it, env values and headers included.
    reached = json.dumps(what_reached(log))
    assert SECRET_ENV in reached, reached
    assert (SECRET_HEADER in reached) == (backend not in STDIO_ONLY), reached
    # A file only the user can read, in a folder only the user can open.
    assert bool(files_read(log)) == (backend in IN_A_FILE), entries(log)
    modes = [(f["mode"], f["folder_mode"]) for f in files_read(log)]
    assert modes == [(0o600, 0o700)] * len(modes), modes
    # A file named on its command line was read at start, and is gone by now.
    named = [a for a in argv if a.endswith(".json")]
    assert not any(Path(a.lstrip("@")).exists() for a in named), named

    r = await client.delete(f"/api/sessions/{sid}")
    assert r.status_code == 204, r.text
    # Once the session is gone, so is every file that held its servers.
    assert [f["path"] for f in files_read(log) if Path(f["path"]).exists()] == []
