"""Fixtures for running real agent CLIs against the scripted fake model server.

Nothing here reaches a real model: every CLI gets a fresh HOME and a base URL that points at a
fake server on 127.0.0.1. `.ci/test` additionally runs the suite in a loopback-only network
namespace.

Env (each executable defaults to its `.ci/setup` cache location):
    ANGELIA_CLAUDE_BIN         the claude executable
    ANGELIA_GEMINI_BIN         the gemini executable (Gemini CLI, run as `gemini --acp`)
    ANGELIA_CLAUDE_ACP_BIN     the claude-agent-acp executable (Claude Code's ACP adapter)
    ANGELIA_GROK_BIN           the grok executable (Grok Build, run as `grok agent stdio`)
    ANGELIA_CODEX_BIN          the codex-acp executable (Codex's ACP adapter)
    ANGELIA_QWEN_BIN           the qwen executable (Qwen Code, run as `qwen --acp` on Node 22)
    ANGELIA_COPILOT_BIN        the copilot executable (GitHub Copilot CLI, run as `copilot --acp`)
    ANGELIA_REQUIRE_REAL_CLI   "1": a missing CLI fails the test instead of skipping it
"""

from __future__ import annotations

import json
import os
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

# The browser fixtures too, for tests that drive the page with a real CLI behind it
# (test_real_claude_browser.py); fixtures are only set up for the tests that ask.
from tests.browser.conftest import browser, browsing, shared_chromium  # noqa: F401
from tests.fakes.fake_model_server import FakeModelServer, start_fake_model_server
from tests.helpers import setup_executable
from tests.real.steps import Agent
from tests.real.steps import claude_profile_body as claude_profile_body

# Pinned in .ci/setup too; keep both in step.
CLAUDE_CODE_VERSION = "2.1.332"
GEMINI_CLI_VERSION = "0.61.0"
CLAUDE_AGENT_ACP_VERSION = "0.101.0"
GROK_CLI_VERSION = "0.2.111"
CODEX_ACP_VERSION = "2.6.0"
QWEN_CODE_VERSION = "0.24.4"
COPILOT_VERSION = "1.0.102"


def _cache() -> Path:
    return Path(os.environ.get("ANGELIA_CLI_CACHE") or Path.home() / ".cache" / "angelia-clis")


def default_claude_bin() -> Path:
    return _cache() / f"claude-code-{CLAUDE_CODE_VERSION}" / "node_modules" / ".bin" / "claude"


def default_gemini_bin() -> Path:
    return _cache() / f"gemini-cli-{GEMINI_CLI_VERSION}" / "node_modules" / ".bin" / "gemini"


def default_claude_acp_bin() -> Path:
    return (
        _cache()
        / f"claude-agent-acp-{CLAUDE_AGENT_ACP_VERSION}"
        / "node_modules"
        / ".bin"
        / "claude-agent-acp"
    )


def default_grok_bin() -> Path:
    return _cache() / f"grok-cli-bin-{GROK_CLI_VERSION}" / "grok_cli_bin" / "bin" / "grok"


def default_codex_bin() -> Path:
    return _cache() / f"codex-acp-{CODEX_ACP_VERSION}" / "node_modules" / ".bin" / "codex-acp"


@pytest.fixture(scope="session")
def claude_bin() -> Path:
    """The real Claude Code executable."""
    return setup_executable("ANGELIA_CLAUDE_BIN", default_claude_bin(), "claude CLI")


@pytest.fixture(scope="session")
def gemini_bin() -> Path:
    """The real Gemini CLI executable (an ACP agent with ``--acp``)."""
    return setup_executable("ANGELIA_GEMINI_BIN", default_gemini_bin(), "gemini CLI")


@pytest.fixture(scope="session")
def claude_acp_bin() -> Path:
    """The real claude-agent-acp executable (Claude Code behind ACP)."""
    return setup_executable("ANGELIA_CLAUDE_ACP_BIN", default_claude_acp_bin(), "claude-agent-acp")


@pytest.fixture(scope="session")
def grok_bin() -> Path:
    """The real Grok Build executable (an ACP agent with ``agent stdio``)."""
    return setup_executable("ANGELIA_GROK_BIN", default_grok_bin(), "grok CLI")


@pytest.fixture(scope="session")
def codex_bin() -> Path:
    """The real codex-acp executable (Codex's ACP adapter; it runs its own ``codex``)."""
    return setup_executable("ANGELIA_CODEX_BIN", default_codex_bin(), "codex-acp")


@pytest.fixture
def fake_rules() -> dict[str, Any] | None:
    """Rules for ``fake_model``; override this fixture (or parametrize it) per test or module.

    The built-in defaults (``run touch`` -> Bash touch made_by_fake.txt, etc.) apply; text
    is streamed with a small pause between pieces so that the app's coalescing of deltas
    that arrive together still leaves several to observe.
    """
    return {"chunk_delay": 0.02}


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
        "/api/profiles", json=claude_profile_body(project_dir, claude_bin, claude_env)
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


@pytest.fixture
def gemini_env(fake_model: FakeModelServer, tmp_path: Path) -> dict[str, str]:
    """The complete environment for a real ``gemini --acp`` talking to ``fake_model``.

    ``GOOGLE_GEMINI_BASE_URL`` selects the "gateway" auth type, so no login is needed; the
    fresh HOME holds a ``~/.gemini/settings.json`` that turns off telemetry, update checks and
    the IDE integration. Chats land in ``$HOME/.gemini/tmp/<project>/chats/``.
    ``GEMINI_CLI_NO_RELAUNCH`` keeps gemini from re-executing itself with a larger heap,
    which saves a second node start-up (1-2 s on a busy 2-core machine) per process.
    """
    home = tmp_path / "gemini-home"
    (home / ".gemini").mkdir(parents=True, exist_ok=True)
    settings = {
        "privacy": {"usageStatisticsEnabled": False},
        "telemetry": {"enabled": False},
        "general": {"disableAutoUpdate": True, "disableUpdateNag": True},
        "ide": {"enabled": False},
    }
    (home / ".gemini" / "settings.json").write_text(json.dumps(settings))
    return {
        "PATH": os.environ.get("PATH", "/usr/local/bin:/usr/bin:/bin"),
        "HOME": str(home),
        "GEMINI_API_KEY": "fake-key",
        "GOOGLE_GEMINI_BASE_URL": fake_model.url,
        "GEMINI_CLI_NO_RELAUNCH": "true",
    }


@pytest.fixture
def claude_acp_env(claude_env: dict[str, str], tmp_path: Path) -> dict[str, str]:
    """``claude_env`` for claude-agent-acp, whose own log goes to ``tmp_path/claude-acp-logs``.

    As root (which a user-namespace root such as ``.ci/in-netns`` is too), the adapter's
    default "auto" mode makes its Claude CLI refuse to start ("--dangerously-skip-permissions
    cannot be used with root/sudo privileges") unless ``IS_SANDBOX=1`` says this is a sandbox.
    """
    env = dict(claude_env, CLAUDE_AGENT_LOGS=str(tmp_path / "claude-acp-logs"))
    if os.geteuid() == 0:
        env["IS_SANDBOX"] = "1"
    return env


@pytest.fixture
def grok_env(fake_model: FakeModelServer, tmp_path: Path) -> dict[str, str]:
    """The complete environment for a real ``grok agent stdio`` talking to ``fake_model``.

    ``GROK_MODELS_BASE_URL`` points every model call (the model list, chat completions, the
    title request) at the fake; any API key is accepted. Sessions land in
    ``$HOME/.grok/sessions/``. Update checks and telemetry are off, and folders are not
    trusted, so a project's own settings cannot change what a test sees.
    """
    home = tmp_path / "grok-home"
    home.mkdir(exist_ok=True)
    return {
        "PATH": os.environ.get("PATH", "/usr/local/bin:/usr/bin:/bin"),
        "HOME": str(home),
        "XAI_API_KEY": "xai-fake",
        "GROK_MODELS_BASE_URL": f"{fake_model.url}/v1",
        "GROK_FOLDER_TRUST": "0",
        "GROK_DISABLE_AUTOUPDATER": "1",
        "GROK_TELEMETRY_ENABLED": "0",
    }


ProfileFactory = Callable[..., Awaitable[dict[str, Any]]]


@pytest.fixture
def make_profile(client: httpx.AsyncClient, project_dir: Path) -> ProfileFactory:
    """Create an Angelia profile through the API: ``await make_profile(backend, command, env)``."""

    async def make(
        backend: str, command: list[str], env: dict[str, str], **fields: Any
    ) -> dict[str, Any]:
        body = {
            "name": f"real {backend}",
            "backend": backend,
            "cwd": str(project_dir),
            "command": command,
            "env": env,
            **fields,
        }
        r = await client.post("/api/profiles", json=body)
        assert r.status_code == 201, r.text
        profile: dict[str, Any] = r.json()
        return profile

    return make


@pytest.fixture
async def agent_session(
    client: httpx.AsyncClient, make_profile: ProfileFactory, agent: Agent
) -> str:
    """A fresh chat session of a profile running ``agent``; it starts on the first message."""
    profile = await make_profile(agent.backend, agent.command, agent.env)
    r = await client.post("/api/sessions", json={"profile_id": profile["id"]})
    assert r.status_code == 201, r.text
    session_id: str = r.json()["id"]
    return session_id


@pytest.fixture(scope="session")
def qwen_bin() -> Path:
    """The real Qwen Code executable (``cli-entry.js``, which needs Node.js 22)."""
    default = _cache() / f"qwen-code-{QWEN_CODE_VERSION}" / "node_modules" / ".bin" / "qwen"
    return setup_executable("ANGELIA_QWEN_BIN", default, "qwen CLI")


@pytest.fixture
def qwen_env(
    fake_model: FakeModelServer, tmp_path: Path, qwen_bin: Path, node22_bin: Path
) -> dict[str, str]:
    """The complete environment for a real ``qwen --acp`` talking to ``fake_model``.

    ``node22_bin`` comes from ``common``, which the asking module imports. The fresh HOME's
    ``~/.qwen/settings.json`` picks the OpenAI-compatible auth type (so no login is asked
    for) and lists two models at the fake, whose key qwen reads from ``FAKE_MODEL_KEY``;
    update checks, usage statistics and telemetry are off. Sessions land in
    ``$HOME/.qwen/projects/<cwd with / as ->/chats/``.
    """
    home = tmp_path / "qwen-home"
    (home / ".qwen").mkdir(parents=True, exist_ok=True)
    models = [
        {
            "id": name,
            "name": name,
            "baseUrl": f"{fake_model.url}/v1",
            "envKey": "FAKE_MODEL_KEY",
            # Unknown to qwen, a model counts as text-only, and an image would reach it
            # only as the text "[image: image/png]".
            "generationConfig": {"modalities": {"image": True}},
        }
        for name in ("fake-model", "fake-model-2")
    ]
    settings = {
        "security": {"auth": {"selectedType": "openai"}},
        "modelProviders": {"openai": models},
        "model": {"name": "fake-model"},
        "general": {"enableAutoUpdate": False},
        "privacy": {"usageStatisticsEnabled": False},
        "telemetry": {"enabled": False},
    }
    (home / ".qwen" / "settings.json").write_text(json.dumps(settings))
    path = [str(node22_bin.parent), os.environ.get("PATH", "/usr/local/bin:/usr/bin:/bin")]
    return {"PATH": os.pathsep.join(path), "HOME": str(home), "FAKE_MODEL_KEY": "fake-key"}


def default_copilot_bin() -> Path:
    return _cache() / f"copilot-{COPILOT_VERSION}" / "node_modules" / ".bin" / "copilot"


@pytest.fixture(scope="session")
def copilot_bin() -> Path:
    """The real GitHub Copilot CLI executable (an ACP agent with ``--acp``)."""
    return setup_executable("ANGELIA_COPILOT_BIN", default_copilot_bin(), "copilot CLI")


@pytest.fixture
def copilot_env(fake_model: FakeModelServer, tmp_path: Path) -> dict[str, str]:
    """The complete environment for a real ``copilot --acp`` talking to ``fake_model``.

    ``COPILOT_PROVIDER_BASE_URL`` is its "bring your own key" provider (OpenAI chat
    completions here), which needs no GitHub login; ``COPILOT_OFFLINE`` turns off
    everything else it would reach (GitHub sign-in, telemetry, its GitHub MCP server, web
    tools, updates). Sessions land in ``$HOME/.copilot/session-state/<id>/``. The native
    binary unpacks its package (235 MB) on first start into ``COPILOT_PKG_CACHE_HOME``,
    which is shared, not the test's fresh HOME, so that happens once per machine.
    """
    home = tmp_path / "copilot-home"
    home.mkdir(exist_ok=True)
    return {
        "PATH": os.environ.get("PATH", "/usr/local/bin:/usr/bin:/bin"),
        "HOME": str(home),
        "COPILOT_OFFLINE": "true",
        "COPILOT_PROVIDER_BASE_URL": f"{fake_model.url}/v1",
        "COPILOT_PROVIDER_TYPE": "openai",
        "COPILOT_PROVIDER_API_KEY": "sk-fake",
        "COPILOT_MODEL": "fake-model",
        "COPILOT_AUTO_UPDATE": "false",
        "COPILOT_PKG_CACHE_HOME": str(_cache() / f"copilot-{COPILOT_VERSION}" / "pkg-cache"),
    }
