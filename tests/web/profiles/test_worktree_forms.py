"""The pages' side of worktree sessions: the profile form's default and copy list, and the
index page's "Start a session" choosing where the agent works (real git, real HTTP)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx

from tests.api.test_chat import make_profile
from tests.api.test_worktree_sessions import repo as repo  # the fixture
from tests.services.git.conftest import git
from tests.web.profiles.test_pages_profiles import _form_of, soup_of, text_of, valid_form


async def test_the_profile_form_keeps_the_worktree_settings(
    client: httpx.AsyncClient, repo: Path
) -> None:
    form = valid_form(repo, worktree_default="1", worktree_copy=".env\n\n config/local.toml \n")
    r = await client.post("/profiles/new", data=form)
    assert r.status_code == 303, r.text
    pid = r.headers["location"].rsplit("/", 1)[1]
    stored = (await client.get(f"/api/profiles/{pid}")).json()
    assert stored["worktree_default"] is True
    assert stored["worktree_copy"] == [".env", "config/local.toml"]
    shown = text_of(soup_of(await client.get(f"/profiles/{pid}")).select_one("dl.fields"))
    assert "Sessions work each in a git worktree of its own, with .env" in shown
    assert "config/local.toml copied in" in shown

    # Unticked on the edit form, it is off again; the copy list stays.
    page = soup_of(await client.get(f"/profiles/{pid}/edit"))
    assert page.select_one("#f-worktree_default").has_attr("checked")  # type: ignore[union-attr]
    edited = _form_of(page)
    del edited["worktree_default"]
    r = await client.post(f"/profiles/{pid}/edit", data=edited)
    assert r.status_code == 303, r.text
    stored = (await client.get(f"/api/profiles/{pid}")).json()
    assert stored["worktree_default"] is False
    assert stored["worktree_copy"] == [".env", "config/local.toml"]


async def test_a_bad_copy_list_is_shown_at_its_field(
    client: httpx.AsyncClient, project_dir: Path
) -> None:
    r = await client.post("/profiles/new", data=valid_form(project_dir, worktree_copy="../secret"))
    assert r.status_code == 422
    error = text_of(soup_of(r).select_one("#err-worktree_copy"))
    assert "relative to the repository" in error
    assert (await client.get("/api/profiles")).json() == []


async def test_starting_a_session_in_a_worktree_from_the_index(
    client: httpx.AsyncClient, repo: Path, fake_claude: dict[str, Any]
) -> None:
    pid = await make_profile(client, repo, fake_claude)
    page = soup_of(await client.get("/"))
    choices = [o["value"] for o in page.select("select[name=worktree] option")]
    assert choices == ["", "yes", "no"]
    r = await client.post(
        "/sessions", data={"profile_id": pid, "title": "try it", "worktree": "yes"}
    )
    assert r.status_code == 303, r.text
    sid = r.headers["location"].rsplit("/", 1)[1]
    worktree = (await client.get(f"/api/sessions/{sid}")).json()["worktree"]
    assert worktree["branch"].startswith("angelia/try-it-") and worktree["base"] == "main"
    # The session page names the worktree's folder, not the user's checkout.
    menu = text_of(soup_of(await client.get(f"/sessions/{sid}")).select_one("#session-menu"))
    assert worktree["branch"] in menu and Path(worktree["path"]).name in menu

    r = await client.post("/sessions", data={"profile_id": pid, "worktree": "no"})
    sid = r.headers["location"].rsplit("/", 1)[1]
    assert (await client.get(f"/api/sessions/{sid}")).json()["worktree"] is None


async def test_a_worktree_of_a_plain_folder_is_refused_on_the_page(
    client: httpx.AsyncClient, project_dir: Path, fake_claude: dict[str, Any]
) -> None:
    pid = await make_profile(client, project_dir, fake_claude)
    r = await client.post("/sessions", data={"profile_id": pid, "worktree": "yes"})
    assert r.status_code == 422
    said = text_of(soup_of(r).select_one("[role=alert]"))
    assert "only get a worktree of a git repository" in said and str(project_dir) in said
    assert (await client.get("/api/sessions")).json() == []
    assert git(project_dir, "rev-parse", "--is-inside-work-tree", check=False) == ""
