"""The data dir is readable by its owner only, whatever the umask; 500s keep the headers."""

from __future__ import annotations

import base64
import stat
import subprocess
import sys
from pathlib import Path
from typing import Any

from fastapi import FastAPI

from app.main import create_app
from app.settings import Settings
from tests.api.test_chat import make_profile
from tests.conftest import LiveServer, write_scenario
from tests.faults._support import ServerProcess
from tests.helpers import count, wait_for_events
from tests.real.test_real_claude_images_rewind import png
from tests.security._support import REPO, make_session
from tests.services.git.conftest import commit_all, init_repo

# The same interpreter, started with the umask most systems give their users.
UMASK_022 = ["sh", "-c", 'umask 022 && exec "$0" -m app.cli "$@"', sys.executable]


def modes(root: Path) -> dict[str, int]:
    found = {str(root): stat.S_IMODE(root.stat().st_mode)}
    for path in root.rglob("*"):
        found[str(path.relative_to(root))] = stat.S_IMODE(path.lstat().st_mode)
    return found


def doctor(data_dir: Path) -> str:
    argv = [sys.executable, "-m", "app.cli", "doctor", "--data-dir", str(data_dir)]
    run = subprocess.run(argv, cwd=REPO, capture_output=True, text=True, timeout=60)
    return next(line for line in run.stdout.splitlines() if line.startswith("data dir private"))


async def test_a_new_data_dir_and_everything_in_it_is_private(
    tmp_path: Path, project_dir: Path, fake_claude: dict[str, Any]
) -> None:
    write_scenario(fake_claude["scenario"], [[{"text": "a nice picture"}]])
    server = ServerProcess(tmp_path / "data", tmp_path, command=UMASK_022, host=None).start()
    try:
        async with server.client() as client:
            sid = await make_session(client, project_dir, fake_claude)
            image = {"media_type": "image/png", "data": base64.b64encode(png()).decode()}
            r = await client.post(
                f"/api/sessions/{sid}/messages", json={"text": "look", "images": [image]}
            )
            assert r.status_code in (200, 202), r.text
            await wait_for_events(client, sid, count("turn_end"))
            found = modes(server.data_dir)
    finally:
        server.stop()
    assert any(name.endswith(".png") for name in found), found
    expected = {"angelia.db", "angelia.db-wal", "angelia.db-shm", "images", "loopback-address"}
    assert expected <= set(found), found
    for name, mode in found.items():
        is_dir = (server.data_dir / name).is_dir()
        if name.startswith("snapshots/") and not is_dir:
            # The folder's snapshot: git makes its objects read-only (0400), owner only.
            assert mode & 0o077 == 0, f"{name} is {mode:04o}"
            continue
        assert mode == (0o700 if is_dir else 0o600), f"{name} is {mode:04o}"
    assert doctor(server.data_dir).split(None, 3)[3].startswith("yes")


async def test_an_existing_open_data_dir_is_tightened_at_start_with_a_line(
    tmp_path: Path,
) -> None:
    data = tmp_path / "data"
    (data / "images" / "s1").mkdir(parents=True)
    (data / "images" / "s1" / "old.png").write_bytes(png())
    for folder in (data, data / "images", data / "images" / "s1"):
        folder.chmod(0o755)
    (data / "images" / "s1" / "old.png").chmod(0o644)
    # A session's worktree is a checkout of the user's repository: its files keep the
    # modes the user's own checkout has; only the folder holding them is closed.
    checkout = data / "worktrees" / "repo-0123456789" / "fix"
    checkout.mkdir(parents=True)
    (checkout / "run.sh").write_text("echo hi\n")
    (checkout / "run.sh").chmod(0o755)
    checkout.chmod(0o755)
    (data / "worktrees").chmod(0o755)
    before = doctor(data)
    assert "no: other users can read" in before and "(0755)" in before, before

    server = ServerProcess(data, tmp_path, command=UMASK_022).start()
    server.stop()

    assert "private to you" in server.log() and "(0755)" in server.log(), server.log()
    for name, mode in modes(data).items():
        if name.startswith("worktrees/"):
            continue
        assert mode & 0o077 == 0, f"{name} is still {mode:04o}"
    assert stat.S_IMODE((checkout / "run.sh").stat().st_mode) == 0o755
    assert stat.S_IMODE(checkout.stat().st_mode) == 0o755
    assert doctor(data).split(None, 3)[3].startswith("yes")


async def test_worktree_folders_are_private_and_doctor_says_so(
    tmp_path: Path, project_dir: Path, fake_claude: dict[str, Any]
) -> None:
    repo = init_repo(project_dir, {"run.sh": "echo hi\n"})
    (repo / "run.sh").chmod(0o755)
    commit_all(repo, "executable")
    server = ServerProcess(tmp_path / "data", tmp_path, command=UMASK_022, host=None).start()
    try:
        async with server.client() as client:
            pid = await make_profile(client, repo, fake_claude)
            body = {"profile_id": pid, "worktree": True}
            r = await client.post("/api/sessions", json=body)
            assert r.status_code == 201, r.text
            worktree = Path(r.json()["worktree"]["path"])
    finally:
        server.stop()
    root = server.data_dir / "worktrees"
    assert worktree.parent.parent == root
    for folder in (root, worktree.parent):
        assert stat.S_IMODE(folder.stat().st_mode) == 0o700, folder
    # The checkout keeps the modes git gave it under the user's umask.
    assert stat.S_IMODE(worktree.stat().st_mode) == 0o755
    assert stat.S_IMODE((worktree / "run.sh").stat().st_mode) == 0o755
    assert doctor(server.data_dir).split(None, 3)[3].startswith("yes")
    # What others cannot reach is not open, whatever its own mode: a file left 0644 in a
    # private folder is fine; the same folder opened to others is reported.
    image = server.data_dir / "images" / "stray.png"
    image.parent.mkdir(exist_ok=True)
    image.write_bytes(png())
    image.chmod(0o644)
    assert doctor(server.data_dir).split(None, 3)[3].startswith("yes")
    server.data_dir.chmod(0o711)
    (server.data_dir / "images").chmod(0o711)
    report = doctor(server.data_dir)
    assert "no: other users can read" in report and "stray.png (0644)" in report, report
    assert "worktrees (" not in report and "run.sh" not in report, report


async def test_a_500_carries_the_security_headers(settings: Settings) -> None:
    app: FastAPI = create_app(settings)

    async def broken() -> None:
        raise RuntimeError("secret-detail-42")

    app.add_api_route("/api/broken", broken)
    app.add_api_route("/broken-page", broken)
    server = LiveServer(app)
    await server.start()
    try:
        async with server.client() as client:
            for path in ("/api/broken", "/broken-page"):
                r = await client.get(path)
                assert r.status_code == 500
                assert "default-src 'self'" in r.headers["content-security-policy"]
                assert r.headers["x-content-type-options"] == "nosniff"
                assert r.headers["x-frame-options"] == "DENY"
                assert r.headers["cache-control"] == "no-store"
                assert "secret-detail-42" not in r.text and "Traceback" not in r.text
    finally:
        await server.stop()
