"""Backend detection with fake executables on PATH, and the first-run default profile."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path

from app.brains import get_brain_class
from app.services.profiles.backends import BackendDetector


def fake_exe(bindir: Path, name: str, body: str) -> None:
    path = bindir / name
    path.write_text("#!/bin/sh\n" + body + "\n")
    path.chmod(0o755)


async def test_found_not_found_and_hanging(bindir: Path) -> None:
    fake_exe(bindir, "claude", 'echo "2.1.332 (Claude Code)"')
    fake_exe(bindir, "grok", "sleep 30")
    detector = BackendDetector(timeout_s=0.5, path=str(bindir))
    started = time.monotonic()
    claude = await detector.describe(get_brain_class("claude"))
    assert claude["found"] and claude["version"] == "2.1.332 (Claude Code)"
    assert claude["path"] == str(bindir / "claude")
    assert claude["instructions_file"] == "CLAUDE.md"
    assert "deny_single_tool" in claude["capabilities"]
    assert set(claude["facts"]) == {"resume", "permission_prompt", "process_lifetime"}
    try:
        grok_cls = get_brain_class("grok")
    except Exception:  # noqa: BLE001  (grok is registered by the ACP module)
        grok_cls = None
    if grok_cls is not None:
        grok = await detector.describe(grok_cls)
        assert grok["found"] and grok["version"] is None
        assert "did not answer" in grok["version_error"]
    assert time.monotonic() - started < 5
    missing = BackendDetector(path=str(bindir / "empty"))
    info = await missing.describe(get_brain_class("claude"))
    assert info["found"] is False and "npm i -g @anthropic-ai/claude-code" in info["install_hint"]


async def test_versions_are_cached(bindir: Path) -> None:
    counter = bindir / "count"
    fake_exe(bindir, "claude", f'echo x >> {counter}; echo "1.0"')
    detector = BackendDetector(path=str(bindir))
    for _ in range(3):
        await detector.describe(get_brain_class("claude"))
    assert counter.read_text().count("x") == 1


@dataclass
class _Profile:
    name: str
    backend: str
    command: list[str] | None
    env: dict[str, str] = field(default_factory=dict)


async def test_a_profile_command_off_path_is_found_by_that_command(
    tmp_path: Path, bindir: Path
) -> None:
    elsewhere = tmp_path / "opt"
    elsewhere.mkdir()
    fake_exe(elsewhere, "claude-beta", 'echo "2.1.400 (Claude Code)"')
    claude_cls = get_brain_class("claude")
    detector = BackendDetector(path=str(bindir))  # nothing on PATH
    work = _Profile("work", "claude", [str(elsewhere / "claude-beta"), "--verbose"])

    own = await detector.describe(claude_cls, work)
    assert own["found"] and own["version"] == "2.1.400 (Claude Code)"
    assert own["path"] == str(elsewhere / "claude-beta") and own["source"] == "command"
    # A name in the command is looked up on the profile's own PATH.
    by_name = _Profile("named", "claude", ["claude-beta"], {"PATH": str(elsewhere)})
    assert (await detector.describe(claude_cls, by_name))["found"]

    listed = {b["name"]: b for b in await detector.describe_all([work])}
    assert listed["claude"]["found"] and listed["claude"]["via_profile"] == "work"
    assert listed["gemini"]["found"] is False and listed["gemini"]["via_profile"] is None
    gone = _Profile("old", "claude", [str(elsewhere / "gone")])
    missing = await detector.describe(claude_cls, gone)
    assert missing["found"] is False and missing["command"] == str(elsewhere / "gone")
    listed = {b["name"]: b for b in await detector.describe_all([gone])}
    assert listed["claude"]["found"] is False and listed["claude"]["source"] == "path"
