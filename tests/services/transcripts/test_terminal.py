"""Claude Code sessions started in a terminal: found by how recently they were written."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

from sqlalchemy.engine import Engine

from app.db.engine import open_database
from app.services.store.eventlog import EventLog
from app.services.transcripts.terminal import claude_folders, recent_sessions

UUID_A = "aaaaaaaa-1111-4111-8111-111111111111"
UUID_B = "bbbbbbbb-2222-4222-8222-222222222222"


def transcript(projects: Path, uuid: str, cwd: str, prompt: str, age_s: float) -> Path:
    folder = projects / cwd.replace("/", "-")
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{uuid}.jsonl"
    lines = [
        "not json at all",
        json.dumps({"type": "user", "uuid": "u1", "cwd": cwd, "message": {"content": prompt}}),
        '{"type": "assistant", "half-written',
    ]
    path.write_text("\n".join(lines))
    at = time.time() - age_s
    os.utime(path, (at, at))
    return path


def fake_proc(root: Path, argv: list[str], cwd: Path) -> Path:
    pid = root / "4242"
    pid.mkdir(parents=True)
    (pid / "cmdline").write_bytes(b"\0".join(a.encode() for a in argv) + b"\0")
    (pid / "cwd").symlink_to(cwd)
    (root / "self").mkdir()
    return root


def test_recent_transcripts_with_their_folder_title_and_process(tmp_path: Path) -> None:
    engine: Engine = open_database(tmp_path / "data")
    projects = tmp_path / "projects"
    work = tmp_path / "work"
    work.mkdir()
    transcript(projects, UUID_A, str(work), "Fix the flaky test\nplease", age_s=60)
    transcript(projects, UUID_B, "/srv/old", "Old thing", age_s=3 * 3600)
    proc = fake_proc(tmp_path / "proc", ["node", "/usr/lib/claude-code/cli.js"], work)

    found = recent_sessions(engine, EventLog(engine), projects, minutes=30, proc=proc)
    assert [s.backend_session_id for s in found] == [UUID_A]
    (live,) = found
    assert (live.cwd, live.title, live.running, live.session_id) == (
        str(work),
        "Fix the flaky test",
        True,
        None,
    )
    later = recent_sessions(engine, EventLog(engine), projects, minutes=600, proc=proc)
    assert [s.backend_session_id for s in later] == [UUID_A, UUID_B]
    assert later[1].running is False
    # No /proc to read: whether it runs is unknown, not "no".
    nowhere = recent_sessions(
        engine, EventLog(engine), projects, minutes=30, proc=tmp_path / "none"
    )
    assert nowhere[0].running is None


def test_the_apps_own_agents_do_not_count(tmp_path: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    proc = fake_proc(tmp_path / "proc", ["/opt/bin/claude", "--print"], work)
    # A process name may hold spaces and brackets: the group is counted from the last ")".
    (proc / "4242" / "stat").write_text("4242 (claude) (x) S 1 4240 4240 0 -1\n")
    assert claude_folders(proc) == {str(work)}
    assert claude_folders(proc, own_groups={4240}) == set()
    assert claude_folders(proc, own_groups={4242}) == {str(work)}


def test_only_claude_processes_count(tmp_path: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    proc = fake_proc(tmp_path / "proc", ["vim", "claude.txt"], work)
    assert claude_folders(proc) == set()
    assert claude_folders(tmp_path / "missing") is None
