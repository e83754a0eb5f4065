"""A profile's MCP server's secrets stay off every command line of a real agent.

Each real CLI runs with a profile whose test MCP server has a secret in its env, and with
a secret in the profile's own env. While the agent waits on a question about the server's
tool (so the server is up), no process of the agent's tree shows either secret in
``/proc/<pid>/cmdline``, which every local user can read; the server itself sees its
secret; and once the session is gone no file the app or the agent wrote still holds it.
"""

# The fixtures are imported by name, which pytest needs and pyflakes calls redefinitions.
# ruff: noqa: F811

from __future__ import annotations

import json
import secrets
import tempfile
from dataclasses import replace
from pathlib import Path

import httpx
import pytest

from tests.conftest import LiveServer
from tests.fakes.fake_model_server import FakeModelServer
from tests.helpers import count, send, wait_for_events
from tests.real.common import (  # noqa: F401 (fixtures real_agent asks for by name)
    node22_bin,
    opencode_bin,
    opencode_env,
    pi_acp_bin,
    pi_bin,
    pi_env,
)
from tests.real.conftest import ProfileFactory
from tests.real.steps import (
    TIMEOUT,
    Agent,
    backend_pid,
    decide,
    mark_server,
    mcp_calls,
    new_session,
    process_tree,
    real_agent,
    the_pending_request,
)
from tests.real.test_real_scenarios import MARK_INPUT, USE_MARK, USE_MARK_BY_BACKEND

pytestmark = pytest.mark.real_cli


@pytest.fixture(params=["claude", "claude-acp", "grok", "opencode", "pi", "qwen", "copilot"])
def agent(request: pytest.FixtureRequest) -> Agent:
    return real_agent(request, request.param)


def files_holding(text: str, folders: list[Path], skip: set[Path]) -> list[Path]:
    """The files under ``folders`` (but ``skip``, and what starts with its names) that
    contain ``text``."""
    found = []
    for folder in folders:
        for path in folder.rglob("*"):
            if any(path.name.startswith(s.name) and path.parent == s.parent for s in skip):
                continue
            try:
                if (
                    path.is_file()
                    and not path.is_symlink()
                    and text in path.read_text("utf-8", "replace")
                ):
                    found.append(path)
            except OSError:
                continue
    return found


async def secret_kept(
    client: httpx.AsyncClient,
    server: LiveServer,
    sid: str,
    log: Path,
    secret: str,
    own: str,
    turn: int = 1,
) -> None:
    """While the agent waits on its question about the test server's tool (so it and the
    server are up), neither ``secret`` (the server's env) nor ``own`` (the profile's) is
    on a command line of its tree; the server has ``secret``; then the call goes through."""
    request = await the_pending_request(client, sid)
    tree = process_tree(backend_pid(server, sid))
    assert any("stdio_mcp_server.py" in line for line in tree.values()), tree
    assert [line for line in tree.values() if secret in line or own in line] == []
    seen = [json.loads(line) for line in log.read_text().splitlines()]
    assert {"env": {"SECRET_VALUE": secret}} in seen, seen
    await decide(client, request["id"], "allow_once")
    await wait_for_events(client, sid, count("turn_end", turn), timeout=TIMEOUT)
    assert mcp_calls(log) == [("mark", MARK_INPUT)] * turn


async def test_a_profile_mcp_servers_secret_is_on_no_command_line_and_left_in_no_file(
    client: httpx.AsyncClient,
    server: LiveServer,
    make_profile: ProfileFactory,
    agent: Agent,
    fake_model: FakeModelServer,
    tmp_path: Path,
) -> None:
    secret = f"mcp-secret-{secrets.token_hex(8)}"
    own = f"profile-secret-{secrets.token_hex(8)}"
    log, mark = mark_server(tmp_path)
    mark["env"] = {"SECRET_VALUE": secret}
    agent = replace(agent, env={**agent.env, "PROFILE_SECRET": own})
    sid = await new_session(client, make_profile, agent, mcp_servers={"mark": mark})
    rule = USE_MARK_BY_BACKEND.get(agent.backend, USE_MARK)
    fake_model.set_rules({"chunk_delay": 0.0, "rules": [rule]})
    await send(client, sid, "use mark")
    await secret_kept(client, server, sid, log, secret, own)

    # A profile edit restarts the CLI before the next message (a resume), with a fresh
    # file where it takes one: the new value reaches the server and no command line.
    fresh = f"mcp-secret-{secrets.token_hex(8)}"
    profile_id = (await client.get(f"/api/sessions/{sid}")).json()["profile_id"]
    edited = {"mark": {**mark, "env": {"SECRET_VALUE": fresh}}}
    r = await client.patch(f"/api/profiles/{profile_id}", json={"mcp_servers": edited})
    assert r.status_code == 200, r.text
    await send(client, sid, "use mark")
    await secret_kept(client, server, sid, log, fresh, own, turn=2)

    r = await client.delete(f"/api/sessions/{sid}")
    assert r.status_code == 204, r.text
    # The database keeps the profile, secret included, and the test server's log its env.
    data = tmp_path / "data"
    skip = {data / "angelia.db", log}
    temp = [p for p in Path(tempfile.gettempdir()).glob("angelia-*") if p.is_dir()]
    for value in (secret, fresh):
        assert files_holding(value, [tmp_path, *temp], skip) == []
