"""A session in a folder outside git, against the real app and real git: its Changes are
the folder's truth (a shell ``rm`` shows as a deletion), read from a private snapshot in
the data dir that nothing writes into the folder for, and that goes with the session; a
folder too big to snapshot says so and lists what the tools wrote."""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import Any

import httpx
from bs4 import BeautifulSoup

from app.main import create_app
from app.services.git import folder_snapshot
from app.services.profiles import doctor
from app.services.profiles.backends import BackendDetector
from app.settings import Settings
from tests.api.test_chat import make_profile
from tests.api.test_session_changes import changes, new_session, summary, write_with_the_tool
from tests.conftest import LiveServer
from tests.services.git.conftest import sh

TOO_BIG = (
    "This folder is too big to snapshot (1 file, over 200 MiB) — only the agent's own "
    "edits are listed."
)


def listing(folder: Path) -> dict[str, tuple[int, int]]:
    """Every path under ``folder`` (hidden ones too) with its mode and size."""
    found = {}
    for here, dirs, files in os.walk(folder):
        for name in dirs + files:
            info = os.lstat(os.path.join(here, name))
            found[os.path.relpath(os.path.join(here, name), folder)] = (info.st_mode, info.st_size)
    return found


def plain_folder(folder: Path) -> Path:
    (folder / "f.txt").write_text("one\ntwo\nthree\n")
    (folder / "gone.txt").write_text("to be removed\n")
    (folder / "sub").mkdir()
    (folder / "sub" / "keep.txt").write_text("kept\n")
    return folder


async def test_a_folder_outside_git_shows_what_shell_commands_did(
    client: httpx.AsyncClient, project_dir: Path, fake_claude: dict[str, Any], settings: Settings
) -> None:
    folder = plain_folder(project_dir)
    before = listing(folder)
    made = await new_session(
        client, await make_profile(client, folder, fake_claude), worktree=False
    )
    sid = made["id"]
    # The snapshot is the app's own: private, in the data dir, nothing in the folder.
    kept = settings.data_dir / "snapshots" / f"{sid}.git"
    assert stat.S_IMODE(kept.stat().st_mode) == 0o700
    assert listing(folder) == before

    await write_with_the_tool(client, fake_claude, sid, {folder / "own.py": "x = 1\n"})
    # What the agent's shell commands do.
    sh(folder, "rm gone.txt && sed -i 's/two/TWO/' f.txt")

    body = await changes(client, sid)
    assert body["source"] == "snapshot", body["note"]
    assert body["root"] == str(folder.resolve())
    assert summary(body) == {
        "f.txt": ("edited", None, 1, 1, True),
        "gone.txt": ("deleted", None, 0, 1, True),
        "own.py": ("created", None, 1, 0, False),
    }
    files = {f["path"]: f for f in body["files"]}
    assert "-two\n+TWO\n" in files["f.txt"]["diff"]
    assert "-to be removed\n" in files["gone.txt"]["diff"]
    assert files["own.py"]["steps"] == 1

    r = await client.get(f"/sessions/{sid}/changes")
    assert r.status_code == 200, r.text
    page = BeautifulSoup(r.text, "html.parser")
    assert page.select_one("#changes-source[data-source='snapshot']") is not None
    gone = page.select_one("section.file-change[data-path='gone.txt']")
    assert gone is not None and "to be removed" in gone.get_text()

    # Reading the changes wrote nothing into the folder either: only what the session did.
    after = listing(folder)
    assert set(after) == set(before) - {"gone.txt"} | {"own.py"}
    assert not any(Path(p).name == ".git" for p in after)

    report = await doctor.diagnose(settings, BackendDetector(path="/nonexistent"), profile=None)
    assert report.to_json()["folder_snapshots"]["count"] == 1
    r = await client.delete(f"/api/sessions/{sid}")
    assert r.status_code == 204, r.text
    assert not kept.exists()
    report = await doctor.diagnose(settings, BackendDetector(path="/nonexistent"), profile=None)
    line = next(f.value for f in report.facts() if f.key == "folder snapshots")
    assert line.startswith("0 using ")


async def test_a_folder_too_big_to_snapshot_says_so_and_lists_the_tools_edits(
    client: httpx.AsyncClient, project_dir: Path, fake_claude: dict[str, Any], settings: Settings
) -> None:
    # A sparse file: over the limit to the walk, no disk used.
    sh(project_dir, "truncate -s 201M big.bin")
    made = await new_session(
        client, await make_profile(client, project_dir, fake_claude), worktree=False
    )
    sid = made["id"]
    assert not (settings.data_dir / "snapshots" / f"{sid}.git").exists()
    await write_with_the_tool(client, fake_claude, sid, {project_dir / "a.py": "a = 1\n"})
    sh(project_dir, "echo shell > b.txt")

    body = await changes(client, sid)
    assert (body["source"], body["base"], body["note"]) == ("tools", None, TOO_BIG)
    assert [(f["path"], f["status"], f["steps"]) for f in body["files"]] == [("a.py", "edited", 1)]

    r = await client.get(f"/sessions/{sid}/changes")
    page = BeautifulSoup(r.text, "html.parser")
    note = page.select_one("#changes-source[data-source='tools'] #changes-note")
    assert note is not None and note.get_text() == TOO_BIG
    assert page.select_one("section.file-change[data-path='a.py']") is not None


async def test_a_folder_that_grows_too_big_is_no_longer_hashed(
    client: httpx.AsyncClient, project_dir: Path, fake_claude: dict[str, Any], settings: Settings
) -> None:
    made = await new_session(
        client, await make_profile(client, plain_folder(project_dir), fake_claude), worktree=False
    )
    sh(project_dir, "rm gone.txt && truncate -s 201M grown.bin")

    body = await changes(client, made["id"])
    assert (body["source"], body["files"]) == ("tools", [])
    assert body["note"] == (
        "This folder has grown too big to compare with its snapshot (3 files, over 200 MiB) "
        "— only the agent's own edits are listed."
    )


async def test_the_data_dir_inside_the_folder_is_left_out_and_a_restart_keeps_it(
    tmp_path: Path, fake_claude: dict[str, Any], settings: Settings
) -> None:
    # The folder holds the app's data dir (tmp_path/data): its database changes all the
    # time, and is never part of the session's changes.
    folder = tmp_path
    (folder / "notes.txt").write_text("a\n")
    first = LiveServer(create_app(settings))
    await first.start()
    try:
        async with first.client() as client:
            pid = await make_profile(client, folder, fake_claude)
            sid = (await new_session(client, pid, worktree=False))["id"]
            await write_with_the_tool(client, fake_claude, sid, {folder / "own.py": "x = 1\n"})
    finally:
        await first.stop()
    sh(folder, "rm notes.txt")

    second = LiveServer(create_app(settings))
    await second.start()
    try:
        async with second.client() as client:
            body = await changes(client, sid)
    finally:
        await second.stop()
    assert body["source"] == "snapshot", body["note"]
    paths = {f["path"]: f["status"] for f in body["files"]}
    assert paths["notes.txt"] == "deleted" and paths["own.py"] == "created"
    assert not any(p.startswith("data/") for p in paths), paths


async def test_a_start_removes_the_snapshots_of_sessions_that_are_gone(
    project_dir: Path, fake_claude: dict[str, Any], settings: Settings
) -> None:
    folder = plain_folder(project_dir)
    first = LiveServer(create_app(settings))
    await first.start()
    try:
        async with first.client() as client:
            kept = await new_session(
                client, await make_profile(client, folder, fake_claude), worktree=False
            )
    finally:
        await first.stop()
    snapshots = settings.data_dir / "snapshots"
    # A session deleted while the app could not remove its snapshot (it stopped in between):
    # a snapshot of this module's making with no session, and a folder that is not one.
    folder_snapshot.take(folder, settings.data_dir, "gone-session")
    (snapshots / "not-ours.git").mkdir()
    assert {p.name for p in snapshots.iterdir()} == {
        f"{kept['id']}.git",
        "gone-session.git",
        "not-ours.git",
    }

    second = LiveServer(create_app(settings))
    await second.start()
    await second.stop()
    assert {p.name for p in snapshots.iterdir()} == {f"{kept['id']}.git", "not-ours.git"}
