"""The Changes tab's diffs laid out in Chromium: in the split view each row's Before and
After sit side by side at every width, a short unchanged line stays on one line, and a
changed line says it was added or removed by more than its colour; the unified view
draws unchanged lines like the changed ones."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from playwright.async_api import expect

from tests.browser.conftest import Browsing, settled
from tests.conftest import LiveServer
from tests.web.history.test_pages_history import new_profile, new_session

pytestmark = pytest.mark.browser

LONG = "config = " + ", ".join(f"option_{n}=value_{n}" for n in range(12))
# Three unchanged lines either side of the edit: all of them are the diff's context.
BEFORE = ["name=demo", LONG, "x = 1", "old = True", "y = 2", LONG.replace("config", "other"), "end"]
AFTER = [line.replace("old = True", "new = False") for line in BEFORE]
SCREENS = [(1366, 900), (1024, 700), (390, 844)]

# Each split row's four cells, and each content cell's height against its line height.
ROWS = """table => [...table.tBodies[0].rows].filter(r => !r.classList.contains("hunk")).map(r => {
  const cells = [...r.cells];
  const box = c => c.getBoundingClientRect();
  return {
    kind: r.className,
    tops: cells.map(c => box(c).top),
    texts: [cells[1].textContent, cells[3].textContent],
    heights: [box(cells[1]).height, box(cells[3]).height],
    line: parseFloat(getComputedStyle(cells[3]).lineHeight),
    display: cells.map(c => getComputedStyle(c).display),
  };
})"""


def store_edit(server: LiveServer, sid: str, project_dir: Path) -> None:
    """One edit in the middle of a file, so the diff has unchanged lines, long ones too,
    on both sides of it."""
    (project_dir / "settings.py").write_text("\n".join(AFTER) + "\n")
    events = server.app.state.angelia.events
    edit = {"file_path": "settings.py", "old_string": "old = True", "new_string": "new = False"}
    events.append(
        sid, "tool_call", {"tool_call_id": "t1", "tool": "Edit", "title": "Edit", "input": edit}
    )
    events.append(sid, "tool_result", {"tool_call_id": "t1", "output": "ok"})
    events.flush_sync()


async def open_changes(browsing: Browsing, project_dir: Path, view: str) -> str:
    # The file as it was when the session started (its snapshot), then the edit.
    (project_dir / "settings.py").write_text("\n".join(BEFORE) + "\n")
    async with browsing.server.client() as client:
        sid = await new_session(client, await new_profile(client, project_dir), "edits")
    store_edit(browsing.server, sid, project_dir)
    await browsing.sign_in(f"/sessions/{sid}/changes?view={view}")
    return sid


async def test_split_rows_line_up_at_every_width(browsing: Browsing, project_dir: Path) -> None:
    await open_changes(browsing, project_dir, "split")
    page = browsing.page
    table = page.locator("section[data-path='settings.py'] table.split-diff")
    await expect(table.locator("tr.change")).to_have_count(1)
    for width, height in SCREENS:
        await page.set_viewport_size({"width": width, "height": height})
        await settled(page)
        rows: list[dict[str, Any]] = await table.evaluate(ROWS)
        assert [r["texts"][1] for r in rows] == AFTER, rows
        assert sum(r["kind"] == "ctx" for r in rows) == len(AFTER) - 1
        for r in rows:
            assert max(r["tops"]) - min(r["tops"]) <= 1, (width, r)
            # Both sides of a row are one box's height: neither is squeezed narrower.
            assert abs(r["heights"][0] - r["heights"][1]) <= 1, (width, r)
            assert r["display"] == ["table-cell"] * 4, (width, r)
            if width == 1366 and len(r["texts"][1]) < 20:
                assert all(abs(h - r["line"]) <= 1 for h in r["heights"]), (width, r)
    # The long lines wrap inside their column on a phone, the page itself does not scroll sideways.
    assert await page.evaluate("document.documentElement.scrollWidth") <= 390
    assert browsing.log.page_errors == [] and browsing.log.console_errors == []


async def test_unified_context_lines_look_like_the_changed_ones(
    browsing: Browsing, project_dir: Path
) -> None:
    await open_changes(browsing, project_dir, "unified")
    page = browsing.page
    diff = page.locator("section[data-path='settings.py'] pre.diff")
    await expect(diff.locator(".add")).to_have_text("+new = False")
    await page.set_viewport_size({"width": 1366, "height": 900})
    looks: list[dict[str, str]] = await diff.evaluate(
        """pre => [...pre.querySelectorAll(".ctx, .add, .del")].map(s => {
             const css = getComputedStyle(s);
             return {kind: s.className, display: css.display, font: css.fontSize,
                     position: css.position, height: String(s.getBoundingClientRect().height)};
           })"""
    )
    assert sum(s["kind"] == "ctx" for s in looks) == len(AFTER) - 1, looks
    add = next(s for s in looks if s["kind"] == "add")
    for s in looks:
        assert (s["display"], s["font"], s["position"], s["height"]) == (
            add["display"],
            add["font"],
            add["position"],
            add["height"],
        ), (s, add)


async def test_split_rows_say_added_and_removed_beside_the_numbers(
    browsing: Browsing, project_dir: Path
) -> None:
    await open_changes(browsing, project_dir, "split")
    table = browsing.page.locator("section[data-path='settings.py'] table.split-diff")
    row = table.locator("tr.change")
    await expect(row).to_have_count(1)
    # Visible +/− in the number cells, the code cells hold the code alone.
    marks = row.locator("td.no .mark")
    await expect(marks).to_have_text(["−", "+"])
    for mark in (marks.first, marks.last):
        await expect(mark).to_be_visible()
    await expect(row.locator("td.del")).to_have_text("old = True")
    # A screen reader hears the words; the marks themselves are not read.
    snapshot = await row.aria_snapshot()
    assert '- cell "4 removed"' in snapshot and '- cell "4 added"' in snapshot, snapshot
    # Unchanged rows have no word and an empty mark, so the numbers stay in one column.
    ctx = table.locator("tr.ctx").first
    assert "added" not in await ctx.aria_snapshot()
    right_edges = await table.locator("td.no .mark").evaluate_all(
        "marks => marks.map(m => Math.round(m.getBoundingClientRect().right))"
    )
    assert len(set(right_edges)) == 2, right_edges  # one edge per side
    # Copying the table's text takes the code, never the gutter's marks.
    copied = await table.evaluate(
        "t => { getSelection().selectAllChildren(t); return getSelection().toString(); }"
    )
    assert "old = True\tnew = False" in copied, copied
    assert "−" not in copied and "added" not in copied, copied
