"""``angelia --help`` and ``angelia doctor`` start without the web stack and without the
ACP SDK (their imports are most of the start-up time; bench/startup.py has the figures)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.security._support import REPO

WEB_STACK = ("fastapi", "starlette", "uvicorn", "sqlalchemy", "sqlmodel", "alembic")
# The SDK's generated pydantic models: listing the backends needs only their class facts.
ACP_SDK = ("acp", "acp.schema", "acp.client.connection")


def imported(args: list[str], tmp_path: Path) -> set[str]:
    env = {**os.environ, "ANGELIA_DATA_DIR": str(tmp_path / "data"), "PATH": str(tmp_path)}
    argv = [sys.executable, "-X", "importtime", "-m", "app.cli", *args]
    done = subprocess.run(argv, cwd=REPO, env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode in (0, 1), done.stderr[-2000:]
    assert "Traceback" not in done.stderr
    return {line.rsplit("|", 1)[-1].strip() for line in done.stderr.splitlines() if "|" in line}


@pytest.mark.parametrize("args", [["--help"], ["doctor"], ["doctor", "--json"]])
def test_the_command_starts_without_the_web_stack(args: list[str], tmp_path: Path) -> None:
    modules = imported(args, tmp_path)
    assert "app" in modules
    assert [m for m in WEB_STACK if m in modules] == []


@pytest.mark.parametrize("args", [["doctor"], ["doctor", "--json"]])
def test_doctor_lists_the_acp_backends_without_the_acp_sdk(args: list[str], tmp_path: Path) -> None:
    modules = imported(args, tmp_path)
    # The ACP backends are still listed (their brain modules load), the SDK is not.
    assert {
        "app.brains.acp.brain",
        "app.brains.acp.agents.opencode",
        "app.brains.acp.agents.pi",
    } <= modules
    assert [m for m in ACP_SDK if m in modules] == []
