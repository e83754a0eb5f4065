"""GET /api/sessions/{id}/files: the files ``@`` mentions offer, through a live server.

In a repository it is git's view (tracked plus untracked, ignored ones left out), else a
walk that skips heavy folders and never leaves the folder; the filter is a subsequence
match with file-name matches first; bad input is a clear 4xx.
"""

from __future__ import annotations

import asyncio
import shutil
from pathlib import Path
from typing import Any

import httpx

from tests.api.test_chat import make_session
from tests.services.git.conftest import init_repo


def write(root: Path, *paths: str) -> None:
    for rel in paths:
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f"{rel}\n")


async def whole(client: httpx.AsyncClient, sid: str, q: str = "", **params: Any) -> Any:
    """The answer once the folder's first listing is whole (not ``partial``)."""
    for _ in range(300):
        r = await client.get(f"/api/sessions/{sid}/files", params={"q": q, **params})
        assert r.status_code == 200, r.text
        if not r.json()["partial"]:
            return r.json()
        await asyncio.sleep(0.05)
    raise AssertionError("the folder's listing never became whole")


async def listed(client: httpx.AsyncClient, sid: str, q: str = "", **params: Any) -> list[str]:
    found: list[str] = (await whole(client, sid, q, **params))["files"]
    return found


async def test_a_repository_lists_tracked_and_untracked_files_but_not_ignored_ones(
    client: httpx.AsyncClient, project_dir: Path, fake_claude: dict[str, Any]
) -> None:
    init_repo(project_dir, {".gitignore": "secrets/\n*.log\n", "README.md": "hi\n"})
    write(project_dir, "app/services/files.py", "notes.txt", "secrets/key.txt", "run.log")
    sid = await make_session(client, project_dir, fake_claude)

    body = await whole(client, sid)
    assert body["source"] == "git"
    assert body["truncated"] is False
    # Shallow files first; nothing ignored, nothing of .git, every path relative.
    assert body["files"] == [".gitignore", "README.md", "notes.txt", "app/services/files.py"]
    assert body["total"] == 4


async def test_the_filter_finds_characters_in_order_and_puts_file_names_first(
    client: httpx.AsyncClient, project_dir: Path, fake_claude: dict[str, Any]
) -> None:
    write(
        project_dir,
        "app/services/files.py",
        "app/web/chat/files.py",
        "docs/profiles.md",
        "src/main.py",
        "tests/test_main.py",
        "main.c",
    )
    sid = await make_session(client, project_dir, fake_claude)

    assert await listed(client, sid, "srvfl") == ["app/services/files.py"]
    # A file name starting with the query beats one that only holds it, then depth.
    assert await listed(client, sid, "main") == ["main.c", "src/main.py", "tests/test_main.py"]
    assert await listed(client, sid, "FILES") == [
        "app/services/files.py",
        "app/web/chat/files.py",
        "docs/profiles.md",
    ]
    assert await listed(client, sid, "files", limit=1) == ["app/services/files.py"]
    assert await listed(client, sid, "zzz") == []
    # Typed key by key, each answer narrows the one before; the end is the same.
    for n in range(1, 6):
        await listed(client, sid, "webfi"[:n])
    assert await listed(client, sid, "webfi") == ["app/web/chat/files.py"]
    # Characters that mean something to a regular expression are plain characters.
    assert await listed(client, sid, ".*[(") == []


async def test_outside_git_the_walk_skips_heavy_folders_and_never_leaves_the_folder(
    client: httpx.AsyncClient, project_dir: Path, tmp_path: Path, fake_claude: dict[str, Any]
) -> None:
    write(project_dir, "src/app.py", "node_modules/left/index.js", ".venv/lib/site.py")
    outside = tmp_path / "outside"
    write(outside, "private.txt")
    (project_dir / "linked").symlink_to(outside, target_is_directory=True)
    sid = await make_session(client, project_dir, fake_claude)

    body = await whole(client, sid)
    assert body["source"] == "walk"
    assert body["files"] == ["src/app.py"]
    assert await listed(client, sid, "private") == []


async def test_a_new_file_shows_once_the_kept_list_is_refreshed(
    client: httpx.AsyncClient, project_dir: Path, fake_claude: dict[str, Any]
) -> None:
    init_repo(project_dir, {"one.txt": "1\n"})
    sid = await make_session(client, project_dir, fake_claude)
    assert await listed(client, sid) == ["one.txt"]

    write(project_dir, "two.txt")
    # The list is kept between queries and refreshed in the background once it is a
    # few seconds old; a later query sees the new file.
    for _ in range(300):
        if "two.txt" in await listed(client, sid):
            break
        await asyncio.sleep(0.1)
    assert await listed(client, sid) == ["one.txt", "two.txt"]


async def test_the_folder_is_listed_when_the_session_starts_before_any_query(
    client: httpx.AsyncClient, project_dir: Path, fake_claude: dict[str, Any]
) -> None:
    init_repo(project_dir, {"one.txt": "1\n"})
    sid = await make_session(client, project_dir, fake_claude)
    # Time for the listing that started with the session (a few git runs on one file).
    await asyncio.sleep(2)

    write(project_dir, "late.txt")
    r = await client.get(f"/api/sessions/{sid}/files")
    assert r.status_code == 200, r.text
    # The first query is answered from the list made before it: a file written after
    # the session started is not in it yet (a listing made for this query would hold it).
    assert r.json()["files"] == ["one.txt"]
    assert r.json()["partial"] is False


async def test_bad_requests_get_a_clear_4xx(
    client: httpx.AsyncClient, project_dir: Path, fake_claude: dict[str, Any]
) -> None:
    (project_dir / "gone").mkdir()
    sid = await make_session(client, project_dir / "gone", fake_claude)

    r = await client.get(f"/api/sessions/{sid}/files", params={"q": "x" * 201})
    assert r.status_code == 422
    assert "200" in r.text
    r = await client.get(f"/api/sessions/{sid}/files", params={"limit": 0})
    assert r.status_code == 422
    r = await client.get("/api/sessions/no-such-session/files")
    assert r.status_code == 404

    shutil.rmtree(project_dir / "gone")
    r = await client.get(f"/api/sessions/{sid}/files")
    assert r.status_code == 409
    assert "does not exist" in r.json()["detail"]
