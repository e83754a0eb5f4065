"""The Changes tab: the file list, unified and split diffs, and a session with none."""

from __future__ import annotations

from pathlib import Path

import httpx
from bs4 import BeautifulSoup

from app.web.history.diffview import split_rows
from tests.conftest import LiveServer
from tests.web.history.test_pages_history import new_profile, new_session


def store_edits(server: LiveServer, sid: str, project_dir: Path) -> None:
    """A created file and an edited one (``old.py``, there before the session started:
    see ``before_edits``), as the transcript stores the calls."""
    (project_dir / "new.py").write_text("print('hi')\n")
    (project_dir / "old.py").write_text("a = 2\nb = <b>1</b>\n")
    events = server.app.state.angelia.events
    calls = [
        ("t1", "Write", {"file_path": "new.py", "content": "print('hi')\n"}, "File created"),
        ("t2", "Edit", {"file_path": "old.py", "old_string": "a = 1", "new_string": "a = 2"}, ""),
    ]
    for call_id, tool, data, output in calls:
        events.append(
            sid, "tool_call", {"tool_call_id": call_id, "tool": tool, "title": tool, "input": data}
        )
        events.append(sid, "tool_result", {"tool_call_id": call_id, "output": output or "ok"})
    events.flush_sync()


def before_edits(project_dir: Path) -> None:
    (project_dir / "old.py").write_text("a = 1\nb = <b>1</b>\n")


async def test_the_tab_lists_the_files_with_unified_and_split_diffs(
    server: LiveServer, client: httpx.AsyncClient, project_dir: Path
) -> None:
    before_edits(project_dir)
    sid = await new_session(client, await new_profile(client, project_dir), "edits")
    store_edits(server, sid, project_dir)
    session_page = BeautifulSoup((await client.get(f"/sessions/{sid}")).text, "html.parser")
    tab = session_page.select_one(f".session-tabs a[href='/sessions/{sid}/changes']")
    assert tab is not None and not tab.has_attr("aria-current")

    page = BeautifulSoup((await client.get(f"/sessions/{sid}/changes")).text, "html.parser")
    summary = page.select_one("#changes-summary")
    assert summary is not None
    assert " ".join(summary.get_text().split()).startswith("2 files changed · +2 −1")
    assert [c.get_text() for c in page.select("#changes-files code")] == ["new.py", "old.py"]
    old = page.select_one("section[data-path='old.py']")
    assert old is not None
    assert [s.get_text() for s in old.select(".diff .del, .diff .add")] == ["-a = 1", "+a = 2"]
    # File text is shown as text.
    assert page.select_one(".diff b") is None and "<b>1</b>" in old.get_text()

    split = BeautifulSoup(
        (await client.get(f"/sessions/{sid}/changes?view=split")).text, "html.parser"
    )
    row = split.select_one("section[data-path='old.py'] tr.change")
    assert row is not None
    # Beside each number, a +/- mark and, for a screen reader, what it means.
    cells = [td.get_text() for td in row.select("td")]
    assert cells == ["1− removed", "a = 1", "1+ added", "a = 2"], cells
    assert split.select_one("a[href='?view=split'][aria-current=page]") is not None


async def test_a_session_without_edits_says_so(
    client: httpx.AsyncClient, project_dir: Path
) -> None:
    sid = await new_session(client, await new_profile(client, project_dir), "talk")
    page = BeautifulSoup((await client.get(f"/sessions/{sid}/changes")).text, "html.parser")
    assert page.select_one("#changes-none") is not None
    r = await client.get(f"/api/sessions/{sid}/changes")
    base = r.json()["base"]
    assert isinstance(base, str) and len(base) == 40
    assert r.json() == {
        "session_id": sid,
        "cwd": str(project_dir),
        "source": "snapshot",
        "base": base,
        "root": str(project_dir),
        "note": None,
        "files": [],
        "target": None,
        "merge_base": False,
    }
    assert (await client.get("/api/sessions/nope/changes")).status_code == 404


def test_split_rows_pair_removed_and_added_lines() -> None:
    diff = "--- a/x\n+++ b/x\n@@ -3,3 +3,2 @@\n keep\n-gone\n-old\n+new\n"
    rows = [(r.kind, r.old_no, r.old, r.new_no, r.new) for r in split_rows(diff)]
    assert rows == [
        ("hunk", None, "@@ -3,3 +3,2 @@", None, None),
        ("ctx", 3, "keep", 3, "keep"),
        ("change", 4, "gone", 4, "new"),
        ("change", 5, "old", None, None),
    ]
