"""The doctor's checks with fake executables on a PATH of the test's own: backends found
or not, a ``--version`` that hangs, data dirs that can or cannot be written, FTS5, and
which backend counts as the default."""

from __future__ import annotations

import os
import sqlite3
import time
from pathlib import Path

import pytest

from app.brains.claude.brain import ClaudeBrain
from app.db.engine import open_database
from app.db.models import Profile
from app.schemas import ProfileCreate
from app.services.profiles import doctor
from app.services.profiles.backends import BackendDetector
from app.services.store import store
from app.settings import Settings
from tests.helpers import fake_cli


def facts_of(report: doctor.Report) -> dict[str, doctor.Fact]:
    return {f.key: f for f in report.facts()}


async def check(
    tmp_path: Path, bindir: Path, profile: Profile | None = None, timeout_s: float = 3.0
) -> doctor.Report:
    settings = Settings(data_dir=tmp_path / "data")
    detector = BackendDetector(timeout_s=timeout_s, path=str(bindir))
    return await doctor.diagnose(settings, detector, profile=profile)


async def test_a_found_backend_has_its_path_and_version(tmp_path: Path, bindir: Path) -> None:
    exe = fake_cli(bindir, "claude", 'print("2.1.332 (Claude Code)")')
    report = await check(tmp_path, bindir)
    [claude] = [b for b in report.backends if b.name == "claude"]
    assert claude.found and claude.runs
    assert claude.path == str(exe) and claude.version == "2.1.332 (Claude Code)"
    facts = facts_of(report)
    assert facts["backend claude"].value == f"{exe} · 2.1.332 (Claude Code)"
    assert report.default.name == "claude" and report.default.runs and report.ok
    assert "the only agent found" in facts["default backend"].value
    assert facts["default can run"].value == f"yes: {exe} · 2.1.332 (Claude Code)"
    assert not any(f.problem for f in report.facts())


async def test_a_missing_default_backend_says_how_to_install_it(
    tmp_path: Path, bindir: Path
) -> None:
    report = await check(tmp_path, bindir)
    facts = facts_of(report)
    assert facts["backend claude"].value.startswith("not found (claude is not on PATH)")
    assert ClaudeBrain.install_hint in facts["backend claude"].value
    assert not report.ok and report.default.name == "claude"
    assert "no agent was found" in facts["default backend"].value
    can_run = facts["default can run"]
    assert can_run.problem and ClaudeBrain.install_hint in can_run.value
    assert report.to_json()["default_backend"]["runs"] is False
    # Every backend of the registry is listed, the generic ACP one with no binary of its own.
    assert "backend grok" in facts and "backend gemini" in facts
    assert "profile's command" in facts["backend acp"].value


async def test_a_hanging_version_is_bounded_and_still_counts_as_runnable(
    tmp_path: Path, bindir: Path
) -> None:
    exe = fake_cli(bindir, "claude", "time.sleep(60)")
    started = time.monotonic()
    report = await check(tmp_path, bindir, timeout_s=0.5)
    assert time.monotonic() - started < 10
    [claude] = [b for b in report.backends if b.name == "claude"]
    assert claude.found and claude.version is None
    assert claude.version_error is not None and "did not answer" in claude.version_error
    assert report.ok
    assert facts_of(report)["backend claude"].value.startswith(f"{exe} · version unknown")


async def test_an_executable_the_os_refuses_to_start_cannot_run(
    tmp_path: Path, bindir: Path
) -> None:
    exe = bindir / "claude"
    exe.write_text("#!/no/such/interpreter\n")
    exe.chmod(0o755)
    report = await check(tmp_path, bindir)
    assert not report.ok
    problem = report.default.problem
    assert problem is not None and str(exe) in problem and "cannot run it" in problem


async def test_control_characters_from_a_cli_are_not_passed_on(
    tmp_path: Path, bindir: Path
) -> None:
    fake_cli(bindir, "claude", r'print("\x1b[2J1.0\x07")')
    report = await check(tmp_path, bindir)
    value = facts_of(report)["backend claude"].value
    assert value.endswith("?[2J1.0?") and "\x1b" not in value


async def test_several_agents_without_claude_default_to_the_wizards_first(
    tmp_path: Path, bindir: Path
) -> None:
    fake_cli(bindir, "opencode", 'print("1.2.3")')
    fake_cli(bindir, "gemini", 'print("0.61.0")')
    report = await check(tmp_path, bindir)
    # The wizard orders agents by label: "Gemini CLI" before "OpenCode".
    assert report.default.name == "gemini" and report.ok
    assert "among the 2 agents found" in report.default.why


# -- the default profile ---------------------------------------------------------------------


async def test_the_oldest_profile_decides_with_its_own_command(
    tmp_path: Path, bindir: Path, project_dir: Path
) -> None:
    fake_cli(bindir, "claude", 'print("2.1.332")')
    own = fake_cli(tmp_path, "my-gemini", 'print("0.99.0 (mine)")')
    engine = open_database(tmp_path / "data")
    for name, backend in (("first", "gemini"), ("second", "claude")):
        data = ProfileCreate(name=name, backend=backend, cwd=str(project_dir), command=[str(own)])
        store.create_profile(engine, data=data)
    engine.dispose()
    profile, error = doctor.oldest_profile(tmp_path / "data" / "angelia.db")
    assert error is None and profile is not None and profile.name == "first"
    report = await check(tmp_path, bindir, profile)
    assert report.default.name == "gemini" and report.ok
    assert 'profile "first"' in report.default.why
    assert report.default.binary is not None and report.default.binary.path == str(own)
    assert facts_of(report)["default can run"].value == f"yes: {own} · 0.99.0 (mine)"


async def test_the_profiles_path_finds_its_binary(tmp_path: Path, bindir: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    exe = fake_cli(elsewhere, "gemini", 'print("0.61.0")')
    profile = Profile(name="p", backend="gemini", cwd=str(tmp_path), env={"PATH": str(elsewhere)})
    report = await check(tmp_path, bindir, profile)
    assert report.ok and report.default.binary is not None
    assert report.default.binary.path == str(exe)
    without = Profile(name="p", backend="gemini", cwd=str(tmp_path))
    assert not (await check(tmp_path, bindir, without)).ok


async def test_a_default_profile_that_cannot_start(tmp_path: Path, bindir: Path) -> None:
    fake_cli(bindir, "claude", 'print("2.1.332")')
    gone = Profile(name="gone", backend="claude", cwd=str(tmp_path / "no-such-folder"))
    report = await check(tmp_path, bindir, gone)
    assert not report.ok and "no-such-folder" in (report.default.problem or "")
    unknown = Profile(name="u", backend="no-such-agent", cwd=str(tmp_path))
    report = await check(tmp_path, bindir, unknown)
    assert not report.ok and "no backend is called 'no-such-agent'" in (
        report.default.problem or ""
    )
    acp = Profile(name="a", backend="acp", cwd=str(tmp_path))
    report = await check(tmp_path, bindir, acp)
    assert not report.ok and "set the profile's command" in (report.default.problem or "")


def test_an_unreadable_database_is_reported(tmp_path: Path) -> None:
    db = tmp_path / "angelia.db"
    db.write_bytes(b"this is not a database" * 100)
    profile, error = doctor.oldest_profile(db)
    assert profile is None and error is not None and str(db) in error
    assert doctor.oldest_profile(tmp_path / "missing.db") == (None, None)


# -- data dir and SQLite ---------------------------------------------------------------------


def test_a_missing_data_dir_that_could_be_made_is_writable_and_left_missing(
    tmp_path: Path,
) -> None:
    data = tmp_path / "a" / "b" / "data"
    result = doctor.check_data_dir(data)
    assert result.writable and not result.exists
    assert "does not exist yet" in result.detail
    assert not (tmp_path / "a").exists()
    assert not result.database_exists


def test_an_existing_data_dir_is_probed_and_keeps_no_probe(tmp_path: Path) -> None:
    data = tmp_path / "data"
    data.mkdir()
    (data / "angelia.db").write_bytes(b"")
    result = doctor.check_data_dir(data)
    assert result.writable and result.exists and result.detail == "yes"
    assert result.database_exists and result.database == str(data / "angelia.db")
    assert sorted(p.name for p in data.iterdir()) == ["angelia.db"]


def test_a_data_dir_under_a_file_cannot_be_made(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("x")
    result = doctor.check_data_dir(blocker / "data")
    assert not result.writable and "cannot be created" in result.detail
    assert blocker.read_text() == "x"
    as_dir = doctor.check_data_dir(blocker)
    assert not as_dir.writable and "not a directory" in as_dir.detail


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes through permission bits")
def test_a_read_only_data_dir_is_not_writable(tmp_path: Path) -> None:
    data = tmp_path / "data"
    data.mkdir()
    data.chmod(0o500)
    try:
        result = doctor.check_data_dir(data)
    finally:
        data.chmod(0o700)
    assert not result.writable and result.detail.startswith("no: ")


def test_sqlite_can_build_the_search_index() -> None:
    result = doctor.check_sqlite()
    assert result.version == sqlite3.sqlite_version
    assert result.fts5 and result.error is None


async def test_the_text_is_one_aligned_fact_a_line(tmp_path: Path, bindir: Path) -> None:
    fake_cli(bindir, "claude", 'print("2.1.332")')
    report = await check(tmp_path, bindir)
    lines = doctor.render_text(report).splitlines()
    assert len(lines) == len(report.facts())
    column = {line.rindex(f.value) for line, f in zip(lines, report.facts(), strict=True)}
    assert len(column) == 1
    assert lines[-1].endswith(f"yes: {bindir / 'claude'} · 2.1.332")


async def test_each_backend_says_what_the_conformance_table_shows(
    tmp_path: Path, bindir: Path
) -> None:
    report = await check(tmp_path, bindir)
    facts = report.facts()
    after = {
        facts[i].key: facts[i + 1]
        for i in range(len(facts) - 1)
        if facts[i].key.startswith("backend ")
    }
    assert after["backend grok"].key == "  features"
    grok = after["backend grok"].value
    assert (
        grok.startswith("tested with grok-cli-bin ")
        and "refused by the app: images, plan mode" in grok
    )
    assert "lacks allow always" in after["backend pi"].value
    assert "not run in Angelia's test suite" in after["backend acp"].value
    [pi] = [b for b in report.to_json()["backends"] if b["name"] == "pi"]
    assert pi["features"] == after["backend pi"].value
