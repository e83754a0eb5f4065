"""The board in a real browser: two worktree sessions shown live (one appears and one
changes without a reload), and an approval answered from the board."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import httpx
import pytest
from playwright.async_api import expect

from tests.api.test_board import bash, profile_with, worktree_session
from tests.api.test_worktree_sessions import repo
from tests.browser.conftest import Browsing
from tests.helpers import count, send, wait_for_events
from tests.services.git.conftest import commit_all

pytestmark = pytest.mark.browser
# The project folder as a repository on ``main`` with one commit.
__all__ = ["repo"]


async def test_the_board_follows_two_sessions_and_answers_an_approval(
    browsing: Browsing, client: httpx.AsyncClient, repo: Path, fake_claude: dict[str, Any]
) -> None:
    done = await profile_with(
        client, repo, fake_claude, "done", [[{"text": "Added g.\nReady to merge."}]]
    )
    asking = await profile_with(
        client, repo, fake_claude, "asking", [[bash("make test"), {"text": "Tests pass."}]]
    )
    b = await worktree_session(client, done, "Add g")
    await send(client, b["id"], "add g")
    await wait_for_events(client, b["id"], count("turn_end"))
    wt = Path(b["worktree"]["path"])
    (wt / "g.txt").write_text("g\n")
    commit_all(wt, "add g")

    page = browsing.page
    await browsing.sign_in("/board")
    second = page.locator(f"#board-{b['id']}")
    await expect(second.locator("[data-field=last-line]")).to_have_text(
        "Last answer: Ready to merge."
    )
    await expect(second.locator("[data-field=ahead]")).to_have_text("1 ahead")
    await expect(second.locator("[data-field=files]")).to_have_text("1 file changed")

    # Without a reload: a new session appears, waiting for an approval, and the other
    # one's new work shows.
    a = await worktree_session(client, asking, "Run the tests")
    await send(client, a["id"], "run them")
    (wt / "h.txt").write_text("h\n")
    commit_all(wt, "add h")
    first = page.locator(f"#board-{a['id']}")
    await expect(first.locator("[data-field=status]")).to_have_text("waiting for you")
    await expect(first.locator(".board-asks code")).to_have_text("make test")
    await expect(second.locator("[data-field=files]")).to_have_text("2 files changed")
    await expect(second.locator("[data-field=ahead]")).to_have_text("2 ahead")
    await expect(page.locator(".board-card")).to_have_count(2)

    await first.get_by_role("button", name="Allow once").click()
    await wait_for_events(client, a["id"], count("turn_end"))
    # Nothing to merge in its worktree: once its turn is over it leaves the board.
    await expect(first).to_have_count(0)
    await expect(page.locator(".board-card")).to_have_count(1)
    events = (await client.get(f"/api/sessions/{a['id']}/events")).json()["events"]
    decided = [e for e in events if e["kind"] == "permission_decision"]
    assert [e.get("decision") for e in decided] == ["allow_once"]
    assert browsing.log.page_errors == [] and browsing.log.console_errors == []
    assert await browsing.csp_violations() == []
    await expect(page).to_have_title(re.compile("Board"))
