"""What a session changed, from the real Claude Code's Write and Edit calls."""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

import httpx
import pytest
from bs4 import BeautifulSoup

from tests.helpers import send
from tests.real.test_real_claude_images_rewind import allow_all, write_and_edit_rules

pytestmark = pytest.mark.real_cli


@pytest.fixture
def fake_rules(project_dir: Path) -> dict[str, Any]:
    return write_and_edit_rules(project_dir)


@pytest.fixture(autouse=True)
def too_big_to_snapshot(project_dir: Path) -> None:
    # The changes are read from the tools' own edits here, as for a folder outside git
    # too big to snapshot (a sparse file: over the limit to the walk, no disk used).
    with (project_dir / "big.bin").open("wb") as f:
        f.truncate(201 * 1024 * 1024)


async def test_the_changes_of_a_session_with_a_write_and_an_edit(
    client: httpx.AsyncClient, claude_session: str, project_dir: Path
) -> None:
    sid = claude_session
    existing = project_dir / "existing.txt"
    existing.write_text("original line\nsecond line\n")
    await send(client, sid, "write new")
    await allow_all(client, sid, 1)
    await send(client, sid, "edit existing")
    await allow_all(client, sid, 2)
    assert existing.read_text() == "changed line\nsecond line\n"

    r = await client.get(f"/api/sessions/{sid}/changes")
    assert r.status_code == 200, r.text
    files = {f["path"]: f for f in r.json()["files"]}
    assert list(files) == ["new.txt", "existing.txt"]
    assert files["new.txt"]["status"] == "created"
    assert files["new.txt"]["diff"].endswith("@@ -0,0 +1 @@\n+brand new\n")
    edited = files["existing.txt"]
    assert (edited["status"], edited["additions"], edited["deletions"]) == ("edited", 1, 1)
    assert "-original line\n+changed line\n second line" in edited["diff"]
    assert not any(f["changed_outside"] for f in files.values())

    # Someone else edits the file afterwards: marked, not mixed in.
    existing.write_text("changed line\nsecond line\nby hand\n")
    later = time.time() + 5  # as if written a little later than the test can wait
    os.utime(existing, (later, later))
    r = await client.get(f"/api/sessions/{sid}/changes")
    edited = {f["path"]: f for f in r.json()["files"]}["existing.txt"]
    assert edited["changed_outside"] and edited["diff"] == ""
    assert "+changed line" in edited["step_diffs"][0]

    page = BeautifulSoup((await client.get(f"/sessions/{sid}/changes")).text, "html.parser")
    assert page.select_one(".session-tabs a[aria-current=page]").get_text() == "Changes"
    assert "changed outside the session since" in page.get_text()
