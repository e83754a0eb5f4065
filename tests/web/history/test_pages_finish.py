"""The Changes tab's finish panel over real HTTP, read with BeautifulSoup: what it shows of
the branch, and its forms (commit, merge, ask the agent to resolve, discard) coming back
with the outcome; and the session delete form's discard option."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx
import pytest
from bs4 import BeautifulSoup

from tests.api.test_chat import fake_log, make_profile
from tests.api.test_finish import commit_edit, make_repo, new_session
from tests.conftest import write_scenario
from tests.helpers import count, wait_for_events
from tests.services.git.conftest import git


@pytest.fixture
def repo(project_dir: Path) -> Path:
    return make_repo(project_dir)


async def page(client: httpx.AsyncClient, url: str) -> BeautifulSoup:
    r = await client.get(url)
    assert r.status_code == 200, r.text
    return BeautifulSoup(r.text, "html.parser")


async def post_form(
    client: httpx.AsyncClient, url: str, data: dict[str, str] | None = None
) -> BeautifulSoup:
    """Post like the browser does, follow the redirect back, and read the page."""
    r = await client.post(url, data=data or {})
    assert r.status_code == 303, r.text
    return await page(client, r.headers["location"])


def text_of(soup: BeautifulSoup, selector: str) -> str:
    found = soup.select_one(selector)
    assert found is not None, selector
    return " ".join(found.get_text(" ").split())


async def test_the_panel_shows_the_branch_and_commits_and_merges(
    client: httpx.AsyncClient,
    repo: Path,
    fake_claude: dict[str, Any],
) -> None:
    pid = await make_profile(client, repo, fake_claude)
    plain = (await client.post("/api/sessions", json={"profile_id": pid})).json()["id"]
    assert (await page(client, f"/sessions/{plain}/changes")).select_one("#finish") is None

    session = await new_session(client, pid, "Tidy <the> docs")
    sid = session["id"]
    (Path(session["worktree"]["path"]) / "f.txt").write_text("tidied\n")
    soup = await page(client, f"/sessions/{sid}/changes")
    panel = soup.select_one("#finish")
    assert panel is not None and panel.find_previous("nav", class_="session-tabs") is not None
    assert text_of(soup, "#finish-branch") == session["worktree"]["branch"]
    assert (text_of(soup, "#finish-ahead"), text_of(soup, "#finish-behind")) == ("0", "0")
    assert text_of(soup, "#finish-dirty") == "1 uncommitted file"
    assert soup.select_one("#finish-merged") is None
    assert "nothing is committed on this branch yet" in text_of(soup, "#finish-nothing")
    message = soup.select_one("#finish-message")
    assert message is not None and message.get_text() == "Tidy <the> docs"
    forms = {f["action"]: f for f in panel.find_all("form")}
    for action in ("commit", "merge", "discard"):
        form = forms[f"/sessions/{sid}/finish/{action}"]
        assert form["method"] == "post"
        token = form.find("input", attrs={"name": "csrf_token"})
        assert token is not None and token["value"]
    # Nothing committed yet: no way of merging is offered.
    assert forms[f"/sessions/{sid}/finish/merge"].find_all("button") == []
    # Work would be lost: discarding asks for a tick first.
    assert soup.select_one("#finish-confirm") is not None

    soup = await post_form(client, f"/sessions/{sid}/finish/commit", {"message": "Tidy docs"})
    assert "Committed" in text_of(soup, "#finish-done")
    assert text_of(soup, "#finish-ahead") == "1" and soup.select_one("#finish-dirty") is None
    strategies = [b["value"] for b in soup.select(".finish-strategies button")]
    assert strategies == ["ff", "merge", "squash"]
    assert soup.select_one("#finish-not-possible") is None
    soup = await post_form(client, f"/sessions/{sid}/finish/merge", {"strategy": "ff"})
    assert "into main" in text_of(soup, "#finish-done")
    assert soup.select_one("#finish-merged") is not None
    assert "main has every change" in text_of(soup, "#finish-nothing")
    assert soup.select(".finish-strategies button") == []
    assert (repo / "f.txt").read_text() == "tidied\n"
    # Merged: discarding loses nothing, so no tick is asked for.
    assert soup.select_one("#finish-confirm") is None


async def test_a_refused_merge_lists_the_files_and_offers_to_ask_the_agent(
    client: httpx.AsyncClient,
    repo: Path,
    fake_claude: dict[str, Any],
) -> None:
    write_scenario(fake_claude["scenario"], [[{"text": "resolving"}]])
    pid = await make_profile(client, repo, fake_claude)
    first, second = [await new_session(client, pid, t) for t in ("One", "Two")]
    await commit_edit(client, first, "f.txt", "one's\n")
    await commit_edit(client, second, "f.txt", "two's\n")
    assert (
        await client.post(f"/api/sessions/{first['id']}/merge", json={"strategy": "ff"})
    ).is_success
    before = git(repo, "for-each-ref")

    soup = await post_form(client, f"/sessions/{second['id']}/finish/merge", {"strategy": "merge"})
    assert "conflicts" in text_of(soup, "#finish-error")
    assert [li.get_text() for li in soup.select("#finish-files li")] == ["f.txt"]
    assert git(repo, "for-each-ref") == before
    button = soup.select_one("#finish-resolve")
    assert button is not None and button.find_parent("form")["action"].endswith("/resolve")

    r = await client.post(f"/sessions/{second['id']}/finish/resolve")
    assert r.status_code == 303 and r.headers["location"].startswith(f"/sessions/{second['id']}")
    await wait_for_events(client, second["id"], count("turn_end"))
    said = [json.dumps(e["stdin"]) for e in fake_log(fake_claude) if "stdin" in e]
    assert any("f.txt" in s and "git merge main" in s for s in said)

    # A merge the base cannot fast-forward to says so, without a file list.
    soup = await post_form(client, f"/sessions/{second['id']}/finish/merge", {"strategy": "ff"})
    assert "cannot be fast-forwarded" in text_of(soup, "#finish-error")
    assert soup.select_one("#finish-files") is None and soup.select_one("#finish-resolve") is None
    soup = await post_form(client, f"/sessions/{second['id']}/finish/merge", {"strategy": "x"})
    assert "ff, merge or squash" in text_of(soup, "#finish-error")


async def test_discard_from_the_panel_and_from_the_delete_form(
    client: httpx.AsyncClient,
    repo: Path,
    fake_claude: dict[str, Any],
) -> None:
    pid = await make_profile(client, repo, fake_claude)
    kept, gone = [await new_session(client, pid, t) for t in ("Kept", "Gone")]
    await commit_edit(client, kept, "f.txt", "unmerged\n")
    path = Path(kept["worktree"]["path"])

    soup = await post_form(client, f"/sessions/{kept['id']}/finish/discard")
    assert "confirm to discard" in text_of(soup, "#finish-error")
    assert path.is_dir()
    r = await client.post(f"/sessions/{kept['id']}/finish/discard", data={"confirm": "yes"})
    assert r.status_code == 303
    assert not path.exists()
    assert git(repo, "branch", "--list", kept["worktree"]["branch"]) == ""
    # The session stays, readable, without the panel.
    assert (await page(client, f"/sessions/{kept['id']}/changes")).select_one("#finish") is None
    assert (await client.get(f"/sessions/{kept['id']}")).status_code == 200

    soup = await page(client, f"/sessions/{gone['id']}")
    box = soup.select_one("#delete-discard")
    assert box is not None and box.find_parent("form")["action"] == f"/sessions/{gone['id']}/delete"
    r = await client.post(f"/sessions/{gone['id']}/delete", data={"discard": "yes"})
    assert r.status_code == 303
    assert not Path(gone["worktree"]["path"]).exists()
    assert git(repo, "branch", "--list", gone["worktree"]["branch"]) == ""


async def test_the_panel_keeps_the_split_view_it_was_sent_from(
    client: httpx.AsyncClient, repo: Path, fake_claude: dict[str, Any]
) -> None:
    pid = await make_profile(client, repo, fake_claude)
    session = await new_session(client, pid, "Split")
    sid = session["id"]
    (Path(session["worktree"]["path"]) / "f.txt").write_text("split\n")
    soup = await page(client, f"/sessions/{sid}/changes?view=split")
    form = soup.select_one("form.finish-commit")
    assert form is not None
    hidden = {str(i["name"]): str(i["value"]) for i in form.select("input[type=hidden]")}
    assert hidden.get("view") == "split"
    r = await client.post(
        f"/sessions/{sid}/finish/commit", data={"message": "split", "view": "split"}
    )
    assert r.status_code == 303 and "view=split" in r.headers["location"], r.headers
    back = await page(client, r.headers["location"])
    assert back.select_one("a[aria-current='page'][href='?view=split']") is not None
    # From the unified view (the default) the page comes back unified, as before.
    plain = await page(client, f"/sessions/{sid}/changes")
    merge = plain.select_one("form.finish-merge")
    assert merge is not None and merge.select_one("input[name=view]") is None
