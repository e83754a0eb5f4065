"""Backend detection with fake executables on PATH, and the first-run default profile."""

from __future__ import annotations

import time
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

