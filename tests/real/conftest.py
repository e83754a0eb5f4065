"""Fixtures for running real agent CLIs against the scripted fake model server.

Nothing here reaches a real model: every CLI gets a fresh HOME and a base URL that points at a
fake server on 127.0.0.1. `.ci/test` additionally runs the suite in a loopback-only network
namespace.

Env:
    ANGELIA_CLAUDE_BIN         the claude executable (default: the `.ci/setup` cache location)
    ANGELIA_REQUIRE_REAL_CLI   "1": a missing CLI fails the test instead of skipping it
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.fakes.fake_model_server import FakeModelServer, start_fake_model_server

CLAUDE_CODE_VERSION = "2.1.332"


def default_claude_bin() -> Path:
    cache = Path(os.environ.get("ANGELIA_CLI_CACHE") or Path.home() / ".cache" / "angelia-clis")
    return cache / f"claude-code-{CLAUDE_CODE_VERSION}" / "node_modules" / ".bin" / "claude"


def _missing(what: str) -> None:
    if os.environ.get("ANGELIA_REQUIRE_REAL_CLI") == "1":
        pytest.fail(f"{what} (ANGELIA_REQUIRE_REAL_CLI=1; run .ci/setup)")
    pytest.skip(f"{what}; run .ci/setup or set ANGELIA_CLAUDE_BIN")


@pytest.fixture(scope="session")
def claude_bin() -> Path:
    """The real Claude Code executable."""
    configured = os.environ.get("ANGELIA_CLAUDE_BIN")
    path = Path(configured) if configured else default_claude_bin()
    if not (path.is_file() and os.access(path, os.X_OK)):
        _missing(f"claude CLI not found at {path}")
    return path


@pytest.fixture
def fake_rules() -> dict[str, Any] | None:
    """Rules for ``fake_model``; override this fixture (or parametrize it) per test or module.

    None means the built-in defaults (``run touch`` -> Bash touch made_by_fake.txt, etc.).
    """
    return None


@pytest.fixture
def fake_model(fake_rules: dict[str, Any] | None, tmp_path: Path) -> Iterator[FakeModelServer]:
    """A fake model server for this test; its request log is ``tmp_path/fake_model.jsonl``."""
    server = start_fake_model_server(fake_rules, tmp_path / "fake_model.jsonl")
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def claude_env(fake_model: FakeModelServer, tmp_path: Path) -> dict[str, str]:
    """The complete environment for a real ``claude`` talking to ``fake_model``.

    Complete on purpose (not layered on os.environ): nothing from the developer's own setup,
    such as real credentials, a parent agent session or proxy settings, leaks into the CLI.
    HOME is a fresh directory per test; sessions land in ``$HOME/.claude/projects/``.
    """
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    return {
        "PATH": os.environ.get("PATH", "/usr/local/bin:/usr/bin:/bin"),
        "HOME": str(home),
        "ANTHROPIC_BASE_URL": fake_model.url,
        "ANTHROPIC_API_KEY": "sk-fake",
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
        "DISABLE_TELEMETRY": "1",
        "DISABLE_AUTOUPDATER": "1",
        "DISABLE_ERROR_REPORTING": "1",
        # Fail fast instead of retrying with backoff when the fake answers with an error.
        "CLAUDE_CODE_MAX_RETRIES": "0",
    }


@pytest.fixture
async def claude_profile(
    client: httpx.AsyncClient,
    project_dir: Path,
    claude_bin: Path,
    claude_env: dict[str, str],
) -> dict[str, Any]:
    """An Angelia profile that runs the real ``claude`` against ``fake_model``."""
    r = await client.post(
        "/api/profiles",
        json={
            "name": "real claude",
            "backend": "claude",
            "cwd": str(project_dir),
            "command": [str(claude_bin)],
            "env": claude_env,
        },
    )
    assert r.status_code == 201, r.text
    profile: dict[str, Any] = r.json()
    return profile


@pytest.fixture
async def claude_session(client: httpx.AsyncClient, claude_profile: dict[str, Any]) -> str:
    """A fresh chat session of ``claude_profile``; its CLI starts on the first message."""
    r = await client.post("/api/sessions", json={"profile_id": claude_profile["id"]})
    assert r.status_code == 201, r.text
    session_id: str = r.json()["id"]
    return session_id
