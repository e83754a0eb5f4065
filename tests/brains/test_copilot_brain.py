"""The Copilot brain's own pieces: the MCP config it hands ``copilot`` and its tool names.

Everything else is measured against the real CLI in ``tests/real/test_real_copilot.py``
and the shared real-CLI scenarios.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from app.brains.acp.agents.copilot import CopilotBrain, copilot_mcp_config, repo_hooks
from app.brains.base import BrainConfig
from app.errors import BrainStartError


def test_profile_servers_take_copilots_own_config_shape() -> None:
    servers = {
        "mark": {"command": "/bin/echo", "args": ["hi", 1], "env": {"KEY": "v"}},
        "web": {"type": "http", "url": "http://127.0.0.1:9/mcp", "headers": {"X-A": "b"}},
        "events": {"type": "sse", "url": "http://127.0.0.1:9/sse"},
    }
    # The shapes `copilot mcp add --json` prints (1.0.102).
    assert copilot_mcp_config(servers, "GitHub Copilot CLI") == {
        "mcpServers": {
            "mark": {
                "type": "local",
                "command": "/bin/echo",
                "args": ["hi", "1"],
                "env": {"KEY": "v"},
                "tools": ["*"],
            },
            "web": {
                "type": "http",
                "url": "http://127.0.0.1:9/mcp",
                "headers": {"X-A": "b"},
                "tools": ["*"],
            },
            "events": {
                "type": "sse",
                "url": "http://127.0.0.1:9/sse",
                "headers": {},
                "tools": ["*"],
            },
        }
    }


def test_a_malformed_server_is_said_before_copilot_starts() -> None:
    with pytest.raises(BrainStartError, match="'mark' in the profile has no command"):
        copilot_mcp_config({"mark": {"args": []}}, "GitHub Copilot CLI")


def test_mcp_tools_get_the_names_rules_use() -> None:
    servers = {"mark": {"command": "m"}, "mark-two": {"command": "m2"}}
    brain = CopilotBrain(BrainConfig(session_id="s", cwd="/tmp", mcp_servers=servers))
    assert brain.claude_name("mark-mark") == "mcp__mark__mark"
    # The longer server name wins where both would match.
    assert brain.claude_name("mark-two-echo") == "mcp__mark-two__echo"
    assert brain.claude_name("mark-") == "mark-"
    assert brain.claude_name("create a file") == "create a file"
    # session/new gets none: copilot refuses stdio servers there.
    assert brain.config.mcp_servers == {}
    assert "--additional-mcp-config" not in brain.build_argv()


def test_hook_files_are_found_in_the_folder_and_at_its_checkouts_root(tmp_path: Path) -> None:
    sub = tmp_path / "repo" / "src"
    sub.mkdir(parents=True)
    assert repo_hooks(sub) == []
    (tmp_path / "repo" / ".git").mkdir()
    for folder in (sub, tmp_path / "repo"):
        (folder / ".github" / "hooks").mkdir(parents=True)
    (sub / ".github" / "hooks" / "a.json").write_text("{}")
    (tmp_path / "repo" / ".github" / "hooks" / "b.json").write_text("{}")
    (tmp_path / "repo" / ".github" / "hooks" / "notes.md").write_text("")
    assert [p.name for p in repo_hooks(sub)] == ["b.json", "a.json"]
