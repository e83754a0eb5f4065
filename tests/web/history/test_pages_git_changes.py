"""The Changes tab over real repositories: the sentence saying where the view comes from,
renamed, binary and cut-short files, and the line attributes comments anchor to."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx
import pytest
from bs4 import BeautifulSoup, Tag

from tests.api.test_chat import make_profile
from tests.api.test_session_changes import make_repo, new_session
from tests.services.git.conftest import git, sh


@pytest.fixture
def repo(project_dir: Path) -> Path:
    return make_repo(project_dir)


async def page_of(client: httpx.AsyncClient, sid: str, view: str = "unified") -> BeautifulSoup:
    r = await client.get(f"/sessions/{sid}/changes?view={view}")
    assert r.status_code == 200, r.text
    return BeautifulSoup(r.text, "html.parser")


def sentence(page: BeautifulSoup) -> str:
    found = page.select_one("#changes-source")
    assert found is not None
    return " ".join(found.get_text().split())


def section(page: BeautifulSoup, path: str) -> Tag:
    found = page.select_one(f"section.file-change[data-path='{path}']")
    assert found is not None
    return found


async def test_a_worktree_session_shows_renames_binaries_and_line_anchors(
    client: httpx.AsyncClient, repo: Path, fake_claude: dict[str, Any]
) -> None:
    made = await new_session(client, await make_profile(client, repo, fake_claude), worktree=True)
    sid, wt = made["id"], Path(made["worktree"]["path"])
    sh(wt, "sed -i 's/two/TWO/' f.txt && git mv old.txt moved.txt")
    (wt / "logo.png").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00binary")
    (wt / "big.txt").write_text("".join(f"row {i} of a generated file\n" for i in range(20_000)))

    page = await page_of(client, sid)
    branch, base = made["worktree"]["branch"], made["worktree"]["base_commit"]
    assert sentence(page) == (
        f"Compared with main at {base[:7]} (merge base): what merging this worktree's "
        f"branch {branch} would bring into main, and its uncommitted and new files."
    )
    assert page.select_one("#changes-source[data-source='git']") is not None
    items = [" ".join(li.get_text().split()) for li in page.select("#changes-files li")]
    assert "old.txt → moved.txt renamed +0 −0" in items
    moved = section(page, "moved.txt")
    assert moved["data-old-path"] == "old.txt"
    assert " ".join(moved.h2.get_text().split()) == "old.txt → moved.txt renamed"  # type: ignore[union-attr]

    logo = section(page, "logo.png")
    assert logo.select_one(".file-binary") is not None and logo.select_one(".diff") is None
    assert "binary" in [t.get_text() for t in page.select("#changes-files .tag-binary")]
    big = section(page, "big.txt")
    assert big.select_one(".file-truncated") is not None
    assert section(page, "f.txt").select_one(".file-truncated") is None

    # Every line of the file carries its path, side and number; headers and hunks do not.
    lines = section(page, "f.txt").select(".diff span")
    assert [
        (s.get_text(), s.get("data-path"), s.get("data-side"), s.get("data-line")) for s in lines
    ] == [
        ("@@ -1,3 +1,3 @@", None, None, None),
        (" one", "f.txt", "new", "1"),
        ("-two", "f.txt", "old", "2"),
        ("+TWO", "f.txt", "new", "2"),
        (" three", "f.txt", "new", "3"),
    ]
    assert all(s.get("data-path") == "big.txt" for s in big.select(".diff span.add"))

    split = await page_of(client, sid, "split")
    rows = section(split, "f.txt").select("tbody tr")
    # Each side's cell carries its own line: a change row holds both, a removed line
    # beside the one added in its place keeps its own number.
    cells = [
        [
            (td.get("data-side"), td.get("data-line"), td.get_text())
            for td in r.select("td[data-side]")
        ]
        for r in rows
    ]
    assert cells == [
        [],
        [("new", "1", "one")],
        [("old", "2", "two"), ("new", "2", "TWO")],
        [("new", "3", "three")],
    ]
    assert all(td["data-path"] == "f.txt" for td in section(split, "f.txt").select("td[data-side]"))


async def test_split_rows_of_removed_lines_stand_for_the_old_side(
    client: httpx.AsyncClient, repo: Path, fake_claude: dict[str, Any]
) -> None:
    made = await new_session(client, await make_profile(client, repo, fake_claude), worktree=True)
    sh(Path(made["worktree"]["path"]), "sed -i '/two/d' f.txt")
    split = await page_of(client, made["id"], "split")
    row = section(split, "f.txt").select_one("tr.change")
    assert row is not None
    sides = [(td["data-side"], td["data-line"]) for td in row.select("td[data-side]")]
    assert sides == [("old", "2")]


async def test_a_plain_git_folder_says_it_reads_a_snapshot(
    client: httpx.AsyncClient, repo: Path, fake_claude: dict[str, Any]
) -> None:
    made = await new_session(client, await make_profile(client, repo, fake_claude), worktree=False)
    sh(repo, "echo later >> f.txt")
    page = await page_of(client, made["id"])
    assert sentence(page).startswith(
        f"Everything that changed in {repo} since this session started, against a snapshot"
    )
    assert "one of its shell commands may have changed it, or something else did" in sentence(page)
    tags = [t.get_text() for t in page.select("#changes-files .tag-outside")]
    assert tags == ["possibly changed outside the session"]


async def test_nothing_changed_in_a_worktree_says_so(
    client: httpx.AsyncClient, repo: Path, fake_claude: dict[str, Any]
) -> None:
    made = await new_session(client, await make_profile(client, repo, fake_claude), worktree=True)
    page = await page_of(client, made["id"])
    none = page.select_one("#changes-none")
    assert none is not None
    assert (
        " ".join(none.get_text().split())
        == "Nothing here that main does not have already: no commits to merge and no "
        "uncommitted changes."
    )


async def test_outside_git_the_tab_says_it_compares_with_a_snapshot(
    client: httpx.AsyncClient, project_dir: Path, fake_claude: dict[str, Any]
) -> None:
    made = await new_session(
        client, await make_profile(client, project_dir, fake_claude), worktree=False
    )
    page = await page_of(client, made["id"])
    assert page.select_one("#changes-source[data-source='snapshot']") is not None
    assert sentence(page).startswith(
        f"Everything that changed in {project_dir} since this session started, against a "
        "snapshot of the folder taken then, shell commands' changes included."
    )


async def test_a_worktree_removed_behind_the_apps_back_falls_back_to_the_tools(
    client: httpx.AsyncClient, repo: Path, fake_claude: dict[str, Any]
) -> None:
    made = await new_session(client, await make_profile(client, repo, fake_claude), worktree=True)
    git(repo, "worktree", "remove", "--force", made["worktree"]["path"])

    body = (await client.get(f"/api/sessions/{made['id']}/changes")).json()
    assert (body["source"], body["base"], body["files"]) == ("tools", None, [])
    assert body["note"].startswith("The session's worktree could not be read with git (")
    page = await page_of(client, made["id"])
    assert body["note"] in sentence(page)
    assert page.select_one("#changes-source[data-source='tools']") is not None
