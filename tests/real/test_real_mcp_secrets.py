"""A profile's MCP server's secrets stay off every command line of a real agent.

Each real CLI runs with a profile whose test MCP server has a secret in its env. While the
agent waits on a question about the server's tool (so the server is up), no process of
the agent's tree shows the secret in ``/proc/<pid>/cmdline``, which every local user can
read; the server itself sees it; and once the session is gone no file the app or the
agent wrote still holds it.
"""

# The fixtures are imported by name, which pytest needs and pyflakes calls redefinitions.
# ruff: noqa: F811

from __future__ import annotations

import json
import secrets
import tempfile
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
    real_agent,
    the_pending_request,
)
from tests.real.test_real_scenarios import MARK_INPUT, USE_MARK, USE_MARK_BY_BACKEND

pytestmark = pytest.mark.real_cli


@pytest.fixture(params=["claude", "claude-acp", "grok", "opencode", "pi", "qwen", "copilot"])
def agent(request: pytest.FixtureRequest) -> Agent:
    return real_agent(request, request.param)


def process_tree(root: int) -> dict[int, str]:
    """``root`` and every process below it: pid → its command line as ``ps`` shows it."""
    parents: dict[int, int] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue  # gone meanwhile
        parents[int(stat.parent.name)] = int(fields[1])
    tree, grown = {root}, True
    while grown:
        below = {pid for pid, parent in parents.items() if parent in tree}
        grown = not below <= tree
        tree |= below
    lines = {}
    for pid in tree:
        try:
            lines[pid] = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
        except OSError:
            continue
    return lines


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


async def test_a_profile_mcp_servers_secret_is_on_no_command_line_and_left_in_no_file(
    client: httpx.AsyncClient,
    server: LiveServer,
    make_profile: ProfileFactory,
    agent: Agent,
    fake_model: FakeModelServer,
    tmp_path: Path,
) -> None:
    secret = f"mcp-secret-{secrets.token_hex(8)}"
    log, mark = mark_server(tmp_path)
    mark["env"] = {"SECRET_VALUE": secret}
    sid = await new_session(client, make_profile, agent, mcp_servers={"mark": mark})
    rule = USE_MARK_BY_BACKEND.get(agent.backend, USE_MARK)
    fake_model.set_rules({"chunk_delay": 0.0, "rules": [rule]})
    await send(client, sid, "use mark")
    request = await the_pending_request(client, sid)

    # The agent waits on the question: it and its MCP server are up.
    tree = process_tree(backend_pid(server, sid))
    assert any("stdio_mcp_server.py" in line for line in tree.values()), tree
    assert [line for line in tree.values() if secret in line] == []
    # ...and the server got its env all the same.
    first = json.loads(log.read_text().splitlines()[0])
    assert first == {"env": {"SECRET_VALUE": secret}}, first

    await decide(client, request["id"], "allow_once")
    await wait_for_events(client, sid, count("turn_end"), timeout=TIMEOUT)
    assert mcp_calls(log) == [("mark", MARK_INPUT)]

    r = await client.delete(f"/api/sessions/{sid}")
    assert r.status_code == 204, r.text
    # The database keeps the profile, secret included, and the test server's log its env.
    data = tmp_path / "data"
    skip = {data / "angelia.db", log}
    temp = [p for p in Path(tempfile.gettempdir()).glob("angelia-*") if p.is_dir()]
    assert files_holding(secret, [tmp_path, *temp], skip) == []
