"""The real OpenCode and pi as every test module sets them up, offline against the fake model.

The other CLIs' set-up lives in ``conftest.py``; these two are fixtures here so that a
module runs them by importing the fixtures it needs by name (pytest finds them there), and
``steps.real_agent`` reaches them the same way as the others.

Env: ``ANGELIA_OPENCODE_BIN``, ``ANGELIA_PI_ACP_BIN``, ``ANGELIA_PI_BIN`` and
``ANGELIA_NODE22_BIN`` name the executables (default: where ``.ci/setup`` puts them);
``ANGELIA_REQUIRE_REAL_CLI=1`` makes a missing one fail instead of skip.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.fakes.fake_model_server import FakeModelServer
from tests.helpers import setup_executable
from tests.real.conftest import ProfileFactory

# Pinned in .ci/setup too; keep both in step.
OPENCODE_VERSION = "1.18.33"
PI_VERSION = "1.6.0"
PI_ACP_VERSION = "0.0.34"
NODE22_VERSION = "22.23.5"
# What pi's gate tells pi (and so the model) about a call it blocked.
PI_DENIED = "Not allowed: the user (or a rule of theirs) denied this tool call."
# Model inputs that let an image through (OpenCode and pi replace it with a note otherwise).
IMAGE_INPUT = ["text", "image"]


def _cache() -> Path:
    return Path(os.environ.get("ANGELIA_CLI_CACHE") or Path.home() / ".cache" / "angelia-clis")


async def new_chat(client: httpx.AsyncClient, profile: dict[str, Any]) -> str:
    """A fresh chat session of ``profile``; its CLI starts on the first message."""
    r = await client.post("/api/sessions", json={"profile_id": profile["id"]})
    assert r.status_code == 201, r.text
    return str(r.json()["id"])


# -- OpenCode (``opencode acp``) -----------------------------------------------------------------
@pytest.fixture(scope="session")
def opencode_bin() -> Path:
    """The real OpenCode executable (a native binary)."""
    package = _cache() / f"opencode-ai-{OPENCODE_VERSION}"
    default = package / "node_modules" / ".bin" / "opencode"
    return setup_executable("ANGELIA_OPENCODE_BIN", default, "opencode")


@pytest.fixture
def opencode_env(fake_model: FakeModelServer, tmp_path: Path) -> dict[str, str]:
    """The complete environment for a real ``opencode acp`` talking to ``fake_model``.

    Complete on purpose, as for the other real CLIs. Sessions land in
    ``$XDG_DATA_HOME/opencode/opencode.db``; the ``DISABLE`` flags turn off the update
    check, the online model catalogue, sharing, LSP downloads and the default plugins.
    """
    home = tmp_path / "opencode-home"
    images = {"input": IMAGE_INPUT, "output": ["text"]}
    config = {
        "provider": {
            "fake": {
                "npm": "@ai-sdk/openai-compatible",
                "options": {"baseURL": f"{fake_model.url}/v1", "apiKey": "x"},
                # Without image input in its modalities OpenCode replaces an image with
                # "ERROR: Cannot read "image" (this model does not support image input)".
                "models": {"fake-model": {"modalities": images}, "fake-model-2": {}},
            }
        },
        "model": "fake/fake-model",
        "autoupdate": False,
        "share": "disabled",
    }
    home.mkdir(exist_ok=True)
    (home / "opencode.json").write_text(json.dumps(config))
    env = {
        "PATH": os.environ.get("PATH", "/usr/local/bin:/usr/bin:/bin"),
        "HOME": str(home),
        "OPENCODE_CONFIG": str(home / "opencode.json"),
        "OPENCODE_DISABLE_AUTOUPDATE": "1",
        "OPENCODE_DISABLE_MODELS_FETCH": "1",
        "OPENCODE_DISABLE_SHARE": "1",
        "OPENCODE_DISABLE_LSP_DOWNLOAD": "1",
        "OPENCODE_DISABLE_DEFAULT_PLUGINS": "1",
    }
    for kind in ("CONFIG", "DATA", "CACHE", "STATE"):
        env[f"XDG_{kind}_HOME"] = str(home / kind.lower())
    return env


@pytest.fixture
async def opencode_profile(
    make_profile: ProfileFactory, opencode_bin: Path, opencode_env: dict[str, str]
) -> dict[str, Any]:
    return await make_profile("opencode", [str(opencode_bin), "acp"], opencode_env)


@pytest.fixture
async def opencode_session(client: httpx.AsyncClient, opencode_profile: dict[str, Any]) -> str:
    """A fresh chat session of ``opencode_profile``; OpenCode starts on the first message."""
    return await new_chat(client, opencode_profile)


# -- pi, through its ACP adapter pi-acp ----------------------------------------------------------
@pytest.fixture(scope="session")
def pi_acp_bin() -> Path:
    """The real pi-acp executable."""
    default = _cache() / f"pi-acp-{PI_ACP_VERSION}" / "node_modules" / ".bin" / "pi-acp"
    return setup_executable("ANGELIA_PI_ACP_BIN", default, "pi-acp")


@pytest.fixture(scope="session")
def pi_bin() -> Path:
    """The real pi executable (pi-acp finds it on PATH)."""
    default = _cache() / f"pi-coding-agent-{PI_VERSION}" / "node_modules" / ".bin" / "pi"
    return setup_executable("ANGELIA_PI_BIN", default, "pi")


@pytest.fixture(scope="session")
def node22_bin() -> Path:
    """Node.js 22, which pi needs (the machine's own node may be older)."""
    arch = {"x86_64": "x64", "aarch64": "arm64"}.get(os.uname().machine, os.uname().machine)
    package = f"node-linux-{arch}"
    default = _cache() / f"node-{NODE22_VERSION}" / "node_modules" / package / "bin" / "node"
    return setup_executable("ANGELIA_NODE22_BIN", default, "Node.js 22")


@pytest.fixture
def pi_env(
    fake_model: FakeModelServer, tmp_path: Path, pi_bin: Path, node22_bin: Path
) -> dict[str, str]:
    """The complete environment for pi-acp and pi talking to ``fake_model``.

    A fresh HOME whose ``~/.pi/agent`` has a ``fake`` provider with two models and no
    start-up chatter; PATH has Node 22 first, then pi, and before both a stub ``npm`` that
    fails at once, so pi-acp's ``npm view`` version lookup on every session/new does not
    wait for a registry the loopback namespace cannot reach.
    """
    home = tmp_path / "pi-home"
    agent_dir = home / ".pi" / "agent"
    agent_dir.mkdir(parents=True)
    models = {
        "providers": {
            "fake": {
                "baseUrl": f"{fake_model.url}/v1",
                "api": "openai-completions",
                "apiKey": "fake-key",
                "compat": {"supportsDeveloperRole": False, "supportsReasoningEffort": False},
                "models": [
                    {"id": "fake-model", "input": IMAGE_INPUT},
                    {"id": "fake-model-2", "input": IMAGE_INPUT},
                ],
            }
        }
    }
    settings = {
        "defaultProvider": "fake",
        "defaultModel": "fake-model",
        "enableInstallTelemetry": False,
        "quietStartup": True,
    }
    (agent_dir / "models.json").write_text(json.dumps(models))
    (agent_dir / "settings.json").write_text(json.dumps(settings))
    stubs = tmp_path / "pi-stubs"
    stubs.mkdir()
    npm = stubs / "npm"
    npm.write_text("#!/bin/sh\nexit 1\n")
    npm.chmod(0o755)
    path = [
        str(stubs),
        str(node22_bin.parent),
        str(pi_bin.parent),
        "/usr/local/bin",
        "/usr/bin",
        "/bin",
    ]
    return {
        "PATH": os.pathsep.join(path),
        "HOME": str(home),
        "PI_OFFLINE": "1",
        "PI_SKIP_VERSION_CHECK": "1",
        "PI_TELEMETRY": "0",
    }


@pytest.fixture
async def pi_profile(
    make_profile: ProfileFactory, pi_acp_bin: Path, pi_env: dict[str, str]
) -> dict[str, Any]:
    return await make_profile("pi", [str(pi_acp_bin)], pi_env)


@pytest.fixture
async def pi_session(client: httpx.AsyncClient, pi_profile: dict[str, Any]) -> str:
    """A fresh chat session running the real pi; it starts on the first message."""
    return await new_chat(client, pi_profile)
