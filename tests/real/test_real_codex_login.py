"""The real Codex (codex-acp 2.6.0) uses the user's own Codex login and settings, and never
writes into their Codex home.

The profile's env names nothing of Angelia's: only a HOME whose ``~/.codex`` holds what a
user who ran ``codex login --with-api-key`` and picked a provider has: an ``auth.json``
with an API key, and a ``config.toml`` whose provider is the fake model server (on
127.0.0.1) and wants OpenAI's auth, so the login's key is what Codex sends.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any

import httpx
import pytest
from bs4 import BeautifulSoup

from app.settings import Settings
from tests.fakes.fake_model_server import FakeModelServer, credential_digest
from tests.helpers import count, of_kind, send, wait_for_events
from tests.real.common import new_chat
from tests.real.conftest import ProfileFactory
from tests.real.steps import TIMEOUT

pytestmark = pytest.mark.real_cli

KEY = "sk-users-own-login-key"


def snapshot(root: Path) -> dict[str, tuple[str, int, int]]:
    """Every entry under ``root``: (kind and content digest, mode, mtime in ns)."""
    seen: dict[str, tuple[str, int, int]] = {}
    for path in sorted(root.rglob("*")):
        st = path.lstat()
        if path.is_symlink():
            what = "link:" + os.readlink(path)
        elif path.is_dir():
            what = "dir"
        else:
            what = "file:" + hashlib.sha256(path.read_bytes()).hexdigest()
        seen[str(path.relative_to(root))] = (what, st.st_mode, st.st_mtime_ns)
    return seen


@pytest.fixture
def users_home(tmp_path: Path, fake_model: FakeModelServer, project_dir: Path) -> Path:
    """A HOME whose ``~/.codex`` has an API-key login and a provider of the user's own."""
    home = tmp_path / "users-home"
    own = home / ".codex"
    own.mkdir(parents=True)
    (own / "config.toml").write_text(
        "# my own codex settings\n"
        'model = "gpt-5.5"\n'
        'model_provider = "mine"\n'
        "\n"
        "[model_providers.mine]\n"
        'name = "My provider"\n'
        f'base_url = "{fake_model.url}/v1"\n'
        'wire_api = "responses"\n'
        "requires_openai_auth = true\n"
        "\n"
        f"[projects.{json.dumps(str(project_dir))}]\n"
        'trust_level = "trusted"\n'
    )
    auth = own / "auth.json"
    auth.write_text(json.dumps({"OPENAI_API_KEY": KEY}, indent=2))
    auth.chmod(0o600)
    return home


async def test_a_session_uses_the_users_login_and_settings_and_leaves_their_codex_home_alone(
    settings: Settings,
    client: httpx.AsyncClient,
    make_profile: ProfileFactory,
    codex_bin: Path,
    fake_model: FakeModelServer,
    users_home: Path,
) -> None:
    own = users_home / ".codex"
    before = snapshot(own)
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(users_home)}
    profile: dict[str, Any] = await make_profile("codex", [str(codex_bin)], env)

    # The profile page says which login it uses, without the key.
    page = await client.get(f"/profiles/{profile['id']}")
    assert page.status_code == 200
    login = BeautifulSoup(page.text, "html.parser").select_one("#backend-login")
    assert login is not None, page.text
    assert login.get_text() == "Uses your Codex login (API key in ~/.codex/auth.json)."
    assert KEY not in page.text

    sid = await new_chat(client, profile)
    await send(client, sid, "say hi")
    events = await wait_for_events(client, sid, count("turn_end"), timeout=TIMEOUT)
    assert of_kind(events, "turn_end")[0]["is_error"] is False, of_kind(events, "error")
    text = "".join(e["text"] for e in of_kind(events, "text_delta"))
    assert "hello from fake" in text, events

    # The user's provider and model, with the user's key.
    asked = [e for e in fake_model.requests("/responses") if (e.get("body") or {}).get("tools")]
    assert asked, fake_model.requests()
    assert {e["body"]["model"] for e in asked} == {"gpt-5.5"}
    assert {e.get("auth_digest") for e in asked} == {credential_digest(f"Bearer {KEY}")}

    # A second turn in the same process: still nothing written.
    await send(client, sid, "say hi again")
    await wait_for_events(client, sid, count("turn_end", 2), timeout=TIMEOUT)
    assert snapshot(own) == before

    # The session's own home: the login linked, not copied; the settings laid under its own.
    session_home = settings.data_dir / "codex" / sid
    assert os.readlink(session_home / "auth.json") == str(own / "auth.json")
    config = (session_home / "config.toml").read_text()
    assert 'model_provider = "mine"' in config and 'cli_auth_credentials_store = "file"' in config
