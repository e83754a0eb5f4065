"""Claude Code's ACP adapter gets the profile's MCP servers in a private file it keeps
while it runs (app/brains/acp/agents/claude_acp.py), played by the fake ACP agent."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest

from app.brains.acp.agents.claude_acp import ClaudeAcpBrain
from app.errors import BrainStartError
from tests.fakes.fake_acp_agent import FakeAcpFiles

SERVERS = {"mark": {"command": "mark-server", "env": {"SECRET_VALUE": "s3cret"}}}


async def test_the_file_is_private_while_the_agent_runs_and_gone_when_it_stops(
    tmp_path: Path,
) -> None:
    files = FakeAcpFiles(tmp_path)
    state = tmp_path / "data" / "claude-acp" / "chat-1"
    brain = ClaudeAcpBrain(files.config(mcp_servers=SERVERS, state_dir=str(state)))
    await brain.start()
    try:
        (new,) = files.requests("session/new")
        assert new["mcpServers"] == []
        path = Path(new["_meta"]["claudeCode"]["options"]["extraArgs"]["mcp-config"])
        assert path.parent == state
        # Kept while the adapter runs: it starts claude again when it rebuilds its query.
        assert path.exists()
        assert stat.S_IMODE(path.stat().st_mode) == 0o600
        assert stat.S_IMODE(state.stat().st_mode) == 0o700
        assert "s3cret" not in str(files.starts()[0]["argv"])
    finally:
        await brain.stop()
    assert not path.exists()


async def test_a_malformed_server_is_refused_before_anything_starts(tmp_path: Path) -> None:
    files = FakeAcpFiles(tmp_path)
    state = tmp_path / "state"
    brain = ClaudeAcpBrain(files.config(mcp_servers={"mark": {"args": []}}, state_dir=str(state)))
    with pytest.raises(BrainStartError, match="'mark'.*no command"):
        await brain.start()
    assert files.starts() == []
    assert not state.exists()
