"""The opencode brain's own part: the permission config it hands OpenCode, and its modes.

The real CLI's behaviour with this config is in tests/real/test_real_opencode*.py; here
only what the brain builds before anything starts.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from app.brains import BrainConfig, check_profile, get_brain_class
from app.brains.acp.agents.opencode import CONFIG_VARIABLE, OpenCodeBrain
from app.errors import BrainStartError


def brain(tmp_path: Any, **config: Any) -> OpenCodeBrain:
    return OpenCodeBrain(BrainConfig(session_id="s", cwd=str(tmp_path), **config))


def passed_config(b: OpenCodeBrain) -> dict[str, Any]:
    config: dict[str, Any] = json.loads(b.config.env[CONFIG_VARIABLE])
    return config


def test_every_tool_that_acts_asks(tmp_path: Any) -> None:
    config = passed_config(brain(tmp_path))
    permission = config["permission"]
    # Last match wins in OpenCode, so the catch-all must come first.
    assert next(iter(permission)) == "*" and permission["*"] == "ask"
    assert permission["bash"] == permission["edit"] == "ask"
    assert permission["task"] == "deny"
    assert permission["glob"] == "allow" and permission["read"]["*.env"] == "ask"
    agents = config["agent"]
    assert agents["build"]["permission"] == permission
    assert agents["plan"]["permission"]["edit"] == "deny"
    assert agents["accept-edits"]["permission"]["edit"] == "allow"
    assert agents["accept-edits"]["permission"]["bash"] == "ask"


def test_the_profiles_own_inline_config_is_kept_under_ours(tmp_path: Any) -> None:
    theirs = {"model": "fake/x", "permission": {"bash": "allow", "webfetch": "deny"}}
    b = brain(tmp_path, env={CONFIG_VARIABLE: json.dumps(theirs), "KEEP": "1"})
    config = passed_config(b)
    assert config["model"] == "fake/x" and b.config.env["KEEP"] == "1"
    assert config["permission"]["bash"] == "ask" and config["permission"]["webfetch"] == "ask"


async def test_a_broken_inline_config_is_refused_at_start(tmp_path: Any) -> None:
    b = brain(tmp_path, env={CONFIG_VARIABLE: "{not json"})
    with pytest.raises(BrainStartError, match=CONFIG_VARIABLE):
        await b.start()
    assert b.pid is None


async def test_modes_it_cannot_keep_are_refused(tmp_path: Any) -> None:
    # dontAsk is kept by the app (OpenCode runs in "build", which asks); Claude's "auto"
    # has nothing to keep it with.
    assert OpenCodeBrain.mode_map["dontAsk"] == "build"
    b = brain(tmp_path, permission_mode="auto")
    with pytest.raises(BrainStartError, match="no 'auto' mode"):
        await b.start()
    assert b.pid is None
    assert OpenCodeBrain.mode_map["acceptEdits"] == "accept-edits"


def test_registered_as_the_opencode_backend() -> None:
    cls = get_brain_class("opencode")
    assert cls is OpenCodeBrain and cls.default_argv == ("opencode", "acp")
    assert cls.catalog_env["OPENCODE_DISABLE_MODELS_FETCH"] == "1"
    everything = {"has_mcp_servers": True, "has_disallowed_tools": True, "has_allowed_tools": True}
    assert check_profile("opencode", **everything) == []


def test_mcp_tools_get_claude_codes_names(tmp_path: Any) -> None:
    servers = {"mark": {"command": "x"}, "mark_two": {"command": "y"}}
    b = brain(tmp_path, mcp_servers=servers)
    assert b.claude_name("mark_mark") == "mcp__mark__mark"
    # The longer server name wins where both would fit.
    assert b.claude_name("mark_two_list") == "mcp__mark_two__list"
    assert [b.claude_name(t) for t in ("bash", "Edit", "mark_", "marker", "glob", "list")] == [
        "bash",
        "Edit",
        "mark_",
        "marker",
        "Glob",
        "LS",
    ]


def test_read_only_tools_the_profile_disallows_ask(tmp_path: Any) -> None:
    permission = passed_config(brain(tmp_path, disallowed_tools=("Read(.env)", "Grep", "Bash")))[
        "permission"
    ]
    assert permission["read"] == permission["grep"] == "ask"
    assert permission["glob"] == permission["list"] == "allow"
    default = passed_config(brain(tmp_path))["permission"]
    assert default["read"]["*"] == "allow" and default["grep"] == "allow"
