"""The codex brain on the scripted ACP agent: what it adds to the generic ACP brain.

The real codex-acp is driven in ``tests/real/test_real_codex.py``; these cover what the real
one does too rarely to catch on demand (a tool call with no final update).
"""

from __future__ import annotations

import json
import tomllib
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from app.brains import get_brain_class
from app.brains.acp.brain import AcpBrain
from app.brains.events import ToolCall, ToolResult, TurnEnded
from app.errors import BrainStartError
from tests.brains.conftest import EventRecorder
from tests.fakes.fake_acp_agent import FakeAcpFiles
from tests.helpers import count, send, wait_for_events

# codex-acp 2.6.0's modes; it starts in "agent", which asks a second model, not the user.
MODES = {"current": "agent", "available": ["read-only", "workspace-write", "agent"]}
OPEN_TOOL = {"id": "t1", "title": "ls", "kind": "execute", "status": "in_progress"}


@pytest.fixture
async def started(tmp_path: Path) -> AsyncIterator[list[tuple[AcpBrain, EventRecorder]]]:
    brains: list[tuple[AcpBrain, EventRecorder]] = []
    yield brains
    for brain, recorder in brains:
        await brain.stop()
        await recorder.cancel()


async def start(
    backend: str,
    files: FakeAcpFiles,
    started: list[tuple[AcpBrain, EventRecorder]],
    **overrides: Any,
) -> tuple[AcpBrain, EventRecorder]:
    brain_cls = get_brain_class(backend)
    assert issubclass(brain_cls, AcpBrain)
    brain = brain_cls(files.config(**overrides))
    recorder = EventRecorder(brain)
    started.append((brain, recorder))
    await brain.start()
    return brain, recorder


@pytest.mark.parametrize(("backend", "closed"), [("codex", True), ("acp", False)])
async def test_a_tool_call_left_open_is_closed_when_the_turn_ends(
    tmp_path: Path,
    started: list[tuple[AcpBrain, EventRecorder]],
    backend: str,
    closed: bool,
) -> None:
    files = FakeAcpFiles(tmp_path)
    files.scenario([{"update": {"tool": OPEN_TOOL}}, {"text": "listed"}], modes=MODES)
    brain, rec = await start(backend, files, started)
    await brain.send("go")
    await rec.wait_for(TurnEnded)
    assert [c.tool_call_id for c in rec.of(ToolCall)] == ["t1"]
    results = rec.of(ToolResult)
    if closed:
        assert [(r.tool_call_id, r.is_error) for r in results] == [("t1", True)]
        assert "did not report how this tool call ended" in results[0].output
        events = rec.events
        assert events.index(results[0]) < events.index(rec.of(TurnEnded)[0])
    else:
        assert results == []


async def test_codex_home_gets_the_profiles_config_and_the_sandbox_mode(
    tmp_path: Path, started: list[tuple[AcpBrain, EventRecorder]]
) -> None:
    files = FakeAcpFiles(tmp_path)
    files.scenario(modes=MODES)
    home = tmp_path / "data" / "codex" / "chat-1"
    env = {"ANGELIA_CODEX_BASE_URL": "http://127.0.0.1:9/v1"}
    await start("codex", files, started, state_dir=str(home), env=env, model="gpt-5.5[high]")
    config = (home / "config.toml").read_text()
    assert 'model = "gpt-5.5"' in config and 'model_provider = "angelia"' in config
    assert 'base_url = "http://127.0.0.1:9/v1"' in config and "env_key" not in config
    assert home.stat().st_mode & 0o777 == 0o700
    # codex-acp's own "agent" mode is left for the sandbox mode of Angelia's default.
    assert files.requests("session/set_mode")[-1]["modeId"] == "workspace-write"


async def test_without_a_folder_of_the_apps_codex_keeps_its_own_home(
    tmp_path: Path, started: list[tuple[AcpBrain, EventRecorder]]
) -> None:
    files = FakeAcpFiles(tmp_path)
    files.scenario(modes=MODES)
    await start("codex", files, started)
    assert not list(tmp_path.glob("**/config.toml"))


async def test_a_deleted_session_takes_its_codex_home_with_it(
    client: httpx.AsyncClient, tmp_path: Path
) -> None:
    """The session's own CODEX_HOME (Codex's transcripts, a copied login) is removed with
    the session, through the API, and another session's stays."""
    files = FakeAcpFiles(tmp_path)
    files.scenario([{"text": "ok"}], modes=MODES)
    body = {
        "name": "codex",
        "backend": "codex",
        "cwd": str(files.cwd),
        "command": list(files.command),
        "env": files.env(),
    }
    r = await client.post("/api/profiles", json=body)
    assert r.status_code == 201, r.text
    homes = []
    for _ in range(2):
        sid = (await client.post("/api/sessions", json={"profile_id": r.json()["id"]})).json()["id"]
        await send(client, sid, "go")
        await wait_for_events(client, sid, count("turn_end"))
        homes.append((sid, tmp_path / "data" / "codex" / sid))
    assert all((home / "config.toml").is_file() for _, home in homes)
    gone, kept = homes
    assert (await client.delete(f"/api/sessions/{gone[0]}")).status_code == 204
    assert not gone[1].exists()
    assert (kept[1] / "config.toml").is_file()


async def test_deny_rules_dropped_from_the_profile_leave_codexs_own_rules_alone(
    tmp_path: Path, started: list[tuple[AcpBrain, EventRecorder]]
) -> None:
    """The profile's block in the rules file is rewritten at each start, down to nothing
    when the profile has no rule Codex can keep; Codex's own lines stay as they were."""
    files = FakeAcpFiles(tmp_path)
    files.scenario(modes=MODES)
    home = tmp_path / "data" / "codex" / "chat-1"
    rules = home / "rules" / "default.rules"
    own = '# saved by Codex\nprefix_rule(pattern=["touch", "f.txt"], decision="allow")\n'
    rules.parent.mkdir(parents=True)
    rules.write_text(own)
    deny = ("Bash(git push:*)", "mcp__mark")
    brain, _ = await start("codex", files, started, state_dir=str(home), disallowed_tools=deny)
    text = rules.read_text()
    assert text.endswith(own) and text.count("prefix_rule(") == 2, text
    assert 'pattern=["git", "push"], decision="forbidden"' in text, text
    await brain.stop()
    await start("codex", files, started, state_dir=str(home))
    assert rules.read_text() == own


async def test_deny_rules_with_no_folder_of_the_apps_stop_the_start(
    tmp_path: Path, started: list[tuple[AcpBrain, EventRecorder]]
) -> None:
    files = FakeAcpFiles(tmp_path)
    files.scenario(modes=MODES)
    with pytest.raises(BrainStartError, match="folder of its own to keep deny rules"):
        await start("codex", files, started, disallowed_tools=("Bash(rm:*)",))


async def test_a_profiles_mcp_deny_rules_go_into_codexs_config_not_to_codex_acp(
    tmp_path: Path, started: list[tuple[AcpBrain, EventRecorder]]
) -> None:
    """A server denied whole reaches Codex nowhere; one with denied tools reaches it only
    through config.toml, carrying them as ``disabled_tools`` (codex-acp's entries cannot);
    the rest go to codex-acp as before."""
    files = FakeAcpFiles(tmp_path)
    files.scenario(modes=MODES)
    home = tmp_path / "data" / "codex" / "chat-1"
    tool = {"command": "/usr/bin/mark-mcp", "args": ["--log", "x"], "env": {"TOKEN": "t"}}
    servers = {
        "mark": tool,
        "web": {"type": "http", "url": "http://127.0.0.1:9/mcp", "headers": {"X-Key": "k"}},
        "gone": tool,
        "kept": tool,
    }
    deny = ("mcp__mark__mark", "mcp__mark__stamp", "mcp__web__fetch", "mcp__gone", "mcp__other")
    await start(
        "codex", files, started, state_dir=str(home), mcp_servers=servers, disallowed_tools=deny
    )
    # The servers' env and headers may hold tokens: the file is the user's alone.
    assert (home / "config.toml").stat().st_mode & 0o777 == 0o600
    config = tomllib.loads((home / "config.toml").read_text())
    assert config["mcp_servers"] == {
        "mark": {**tool, "disabled_tools": ["mark", "stamp"]},
        "web": {"url": "http://127.0.0.1:9/mcp", "http_headers": {"X-Key": "k"}}
        | {"disabled_tools": ["fetch"]},
    }
    (new,) = files.requests("session/new")
    assert [s["name"] for s in new["mcpServers"]] == ["kept"], new


@pytest.fixture(autouse=True)
def users_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The home of the user running the app, with no Codex setup unless a test writes one."""
    home = tmp_path / "users-home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("CODEX_HOME", raising=False)
    return home


def tree(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*"))}


async def test_the_users_own_config_and_login_are_laid_under_the_profiles_settings(
    tmp_path: Path, started: list[tuple[AcpBrain, EventRecorder]], users_home: Path
) -> None:
    own = users_home / ".codex"
    own.mkdir()
    (own / "config.toml").write_text(
        'model = "o3"\nprofile = "work"\ncli_auth_credentials_store = "keyring"\n'
        '[profiles.work]\nmodel_provider = "corp"\n'
        '[model_providers.corp]\nname = "Corp"\nbase_url = "http://127.0.0.1:9/v1"\n'
        '[mcp_servers.docs]\ncommand = "docs-mcp"\ndisabled_tools = ["a"]\n'
        '[mcp_servers.shell]\ncommand = "shell-mcp"\n'
    )
    (own / "auth.json").write_text('{"OPENAI_API_KEY": "sk-own"}')
    before = tree(own)
    files = FakeAcpFiles(tmp_path)
    files.scenario(modes=MODES)
    home = tmp_path / "data" / "codex" / "chat-1"
    deny = ("mcp__shell", "mcp__docs__b")
    await start(
        "codex", files, started, state_dir=str(home), model="gpt-5.5", disallowed_tools=deny
    )
    config = tomllib.loads((home / "config.toml").read_text())
    assert config["model"] == "gpt-5.5"  # the profile's, over the user's
    assert (config["profile"], config["profiles"]) == ("work", {"work": {"model_provider": "corp"}})
    assert config["model_providers"]["corp"]["base_url"] == "http://127.0.0.1:9/v1"
    # The profile's deny rules hold for the user's own servers too.
    assert config["mcp_servers"] == {"docs": {"command": "docs-mcp", "disabled_tools": ["a", "b"]}}
    assert config["cli_auth_credentials_store"] == "file"
    assert (home / "auth.json").is_symlink()
    assert (home / "auth.json").readlink() == own / "auth.json"
    assert tree(own) == before


async def test_login_none_keeps_the_users_login_out_and_bad_toml_stops_the_start(
    tmp_path: Path, started: list[tuple[AcpBrain, EventRecorder]], users_home: Path
) -> None:
    own = users_home / ".codex"
    own.mkdir()
    (own / "auth.json").write_text('{"OPENAI_API_KEY": "sk-own"}')
    files = FakeAcpFiles(tmp_path)
    files.scenario(modes=MODES)
    home = tmp_path / "data" / "codex" / "chat-1"
    home.mkdir(parents=True)
    (home / "auth.json").write_text("an old copy")
    env = {"ANGELIA_CODEX_LOGIN": "none"}
    await start("codex", files, started, state_dir=str(home), env=env)
    assert not (home / "auth.json").exists() and not (home / "auth.json").is_symlink()

    (own / "config.toml").write_text("model = \n")
    brain_cls = get_brain_class("codex")
    assert issubclass(brain_cls, AcpBrain)
    brain = brain_cls(files.config(state_dir=str(tmp_path / "other")))
    with pytest.raises(BrainStartError, match="is not valid TOML"):
        brain.launch_env()


@pytest.mark.parametrize(
    ("auth", "env", "said"),
    [
        (
            {"OPENAI_API_KEY": "sk-secret"},
            {},
            "Uses your Codex login (API key in ~/.codex/auth.json).",
        ),
        (
            {"OPENAI_API_KEY": None, "tokens": {"refresh_token": "rt-secret"}},
            {},
            "Uses your Codex login (ChatGPT login in ~/.codex/auth.json;",
        ),
        (None, {}, "No Codex login found (~/.codex/auth.json): run `codex login`"),
        (
            {"OPENAI_API_KEY": "sk-secret"},
            {"CODEX_API_KEY": "k"},
            "API key in this profile's environment (CODEX_API_KEY)",
        ),
        (
            {"OPENAI_API_KEY": "sk-secret"},
            {"ANGELIA_CODEX_LOGIN": "none"},
            "Does not use your Codex login",
        ),
        (
            None,
            {"ANGELIA_CODEX_BASE_URL": "http://127.0.0.1:9/v1"},
            "model provider this profile sets",
        ),
    ],
)
def test_the_login_note_says_which_login_without_secrets(
    users_home: Path, auth: dict[str, Any] | None, env: dict[str, str], said: str
) -> None:
    own = users_home / ".codex"
    own.mkdir()
    if auth is not None:
        (own / "auth.json").write_text(json.dumps(auth))
    note = get_brain_class("codex").login_note(env)
    assert note.startswith(said) or said in note, note
    assert "secret" not in note


def test_a_login_kept_in_the_keyring_is_named_with_what_to_do(users_home: Path) -> None:
    own = users_home / ".codex"
    own.mkdir()
    (own / "config.toml").write_text('cli_auth_credentials_store = "keyring"\n')
    note = get_brain_class("codex").login_note({})
    assert "system keyring" in note and 'cli_auth_credentials_store = "file"' in note
    (own / "config.toml").write_text(
        'model_provider = "mine"\n[model_providers.mine]\nname = "M"\nbase_url = "http://x/v1"\n'
    )
    assert get_brain_class("codex").login_note({}) == (
        "Uses the model provider “mine” from your ~/.codex/config.toml."
    )
