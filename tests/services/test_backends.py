"""Backend detection with fake executables on PATH, and the first-run default profile."""

from __future__ import annotations

import os
import time
from pathlib import Path

from app.brains import get_brain_class
from app.db.engine import open_database
from app.services import store
from app.services.backends import BackendDetector
from app.services.firstrun import ensure_default_profile


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


async def test_default_profile_only_with_exactly_one_backend(bindir: Path, tmp_path: Path) -> None:
    engine = open_database(tmp_path / "data")
    project = tmp_path / "myproj"
    project.mkdir()
    none = BackendDetector(path=str(bindir))
    assert await ensure_default_profile(engine, none, project) is None
    fake_exe(bindir, "claude", 'echo "2.1.332"')
    one = BackendDetector(path=str(bindir))
    profile = await ensure_default_profile(engine, one, project)
    assert profile is not None and profile.backend == "claude"
    assert profile.cwd == str(project.resolve()) and profile.name == "myproj"
    # Never a second one.
    assert await ensure_default_profile(engine, one, project) is None
    assert len(store.list_profiles(engine)) == 1
    assert os.environ.get("PATH")  # the detector never changed the real PATH
