"""``angelia doctor`` as a user runs it: a subprocess whose PATH, HOME and data dir are
the test's own, so no CLI installed on the machine can leak into what it reports."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

from app.brains.claude.brain import ClaudeBrain
from app.db.engine import open_database
from app.schemas import ProfileCreate
from app.services.store import store
from tests.helpers import fake_cli

ROOT = Path(__file__).resolve().parents[3]


def doctor(
    tmp_path: Path, bindir: Path, *args: str, data_dir: Path | None = None
) -> subprocess.CompletedProcess[str]:
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    env = {
        "PATH": str(bindir),
        "HOME": str(home),
        "ANGELIA_DATA_DIR": str(data_dir or tmp_path / "data"),
    }
    return subprocess.run(
        [sys.executable, "-m", "app.cli", "doctor", *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )


def lines_of(out: str) -> dict[str, str]:
    """Each line's key (up to the two spaces that start the value column) → value."""
    pairs = (line.split("  ", 1) for line in out.splitlines())
    return {key: value.strip() for key, value in pairs}


def test_present_default_backend_exits_zero(tmp_path: Path, bindir: Path) -> None:
    exe = fake_cli(bindir, "claude", 'print("2.1.332 (Claude Code)")')
    result = doctor(tmp_path, bindir)
    assert result.returncode == 0, result.stderr
    facts = lines_of(result.stdout)
    assert facts["backend claude"] == f"{exe} · 2.1.332 (Claude Code)"
    assert facts["default backend"].startswith("claude (the only agent found")
    assert facts["default can run"].startswith("yes: ")
    assert facts["data dir"] == str(tmp_path / "data")
    assert facts["data dir writable"].startswith("yes (it does not exist yet")
    assert facts["fts5"] == "available"
    # Looking is not setting up: no data dir, no database.
    assert not (tmp_path / "data").exists()


def test_missing_default_backend_exits_non_zero_with_the_install_command(
    tmp_path: Path, bindir: Path
) -> None:
    fake_cli(bindir, "gemini", 'print("0.61.0")')
    fake_cli(bindir, "opencode", 'print("1.0.0")')
    # Two agents and no Claude Code: first run suggests Gemini, which is there.
    assert doctor(tmp_path, bindir).returncode == 0
    (bindir / "gemini").unlink()
    (bindir / "opencode").unlink()
    result = doctor(tmp_path, bindir)
    assert result.returncode == 1
    facts = lines_of(result.stdout)
    assert facts["backend claude"].startswith("not found")
    assert ClaudeBrain.install_hint in facts["backend claude"]
    assert facts["default can run"].startswith("no: claude is not on PATH")


def test_a_hanging_version_does_not_hang_the_command(tmp_path: Path, bindir: Path) -> None:
    fake_cli(bindir, "claude", "time.sleep(120)")
    started = time.monotonic()
    result = doctor(tmp_path, bindir)
    assert time.monotonic() - started < 30
    assert result.returncode == 0, result.stdout
    assert "did not answer" in lines_of(result.stdout)["backend claude"]


def test_json_and_data_dir_flag_win_over_the_environment(tmp_path: Path, bindir: Path) -> None:
    fake_cli(bindir, "claude", 'print("2.1.332")')
    flag_dir = tmp_path / "from-flag"
    result = doctor(tmp_path, bindir, "--json", "--data-dir", str(flag_dir))
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["ok"] is True
    assert report["data_dir"]["path"] == str(flag_dir) and report["data_dir"]["writable"]
    assert report["default_backend"]["name"] == "claude"
    assert report["default_backend"]["binary"]["path"] == str(bindir / "claude")
    assert report["sqlite"]["fts5"] is True
    assert {b["name"] for b in report["backends"]} >= {"claude", "grok", "gemini", "acp"}


def test_unwritable_data_dir_is_reported(tmp_path: Path, bindir: Path) -> None:
    fake_cli(bindir, "claude", 'print("2.1.332")')
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    result = doctor(tmp_path, bindir, data_dir=blocker / "data")
    facts = lines_of(result.stdout)
    assert facts["data dir writable"].startswith("no: it does not exist and cannot be created")
    # The backend is fine, but serve could not start: that fails the check too.
    assert result.returncode == 1


def test_an_existing_profile_names_the_default_backend(
    tmp_path: Path, bindir: Path, project_dir: Path
) -> None:
    fake_cli(bindir, "claude", 'print("2.1.332")')
    engine = open_database(tmp_path / "data")
    data = ProfileCreate(name="mine", backend="gemini", cwd=str(project_dir))
    store.create_profile(engine, data=data)
    engine.dispose()
    db = tmp_path / "data" / "angelia.db"
    before = db.read_bytes()
    result = doctor(tmp_path, bindir)
    assert result.returncode == 1
    facts = lines_of(result.stdout)
    assert facts["default backend"].startswith('gemini (the backend of the profile "mine"')
    assert facts["default can run"].startswith("no: gemini is not on PATH")
    assert facts["database"] == str(db)
    assert db.read_bytes() == before
    fake_cli(bindir, "gemini", 'print("0.61.0")')
    assert doctor(tmp_path, bindir).returncode == 0
