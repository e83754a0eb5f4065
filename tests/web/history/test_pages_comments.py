"""The review comments on the Changes tab, as HTML: the list with each comment's state,
the plain forms that send and delete, and the line attributes the script hooks on."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx
import pytest
from bs4 import BeautifulSoup

from tests.api.test_review_comments import (
    EDITED,
    approve_edit,
    comment,
    edited_session,
    make_repo,
)
from tests.helpers import count, wait_for_events


@pytest.fixture
def repo(project_dir: Path) -> Path:
    return make_repo(project_dir)


def soup(r: httpx.Response) -> BeautifulSoup:
    assert r.status_code == 200, r.text
    return BeautifulSoup(r.text, "html.parser")


def words(node: Any) -> str:
    return " ".join(node.get_text().split())


async def test_the_tab_lists_comments_and_sends_them_without_scripts(
    client: httpx.AsyncClient, repo: Path, fake_claude: dict[str, Any]
) -> None:
    sid, worktree = await edited_session(client, repo, fake_claude)
    page = soup(await client.get(f"/sessions/{sid}/changes?view=split"))
    panel = page.select_one("#review-comments")
    assert panel is not None and panel.select_one("#review-none") is not None
    assert panel.select_one("form.review-send") is None
    assert page.select_one("script[src='/static/js/comments.js']") is not None
    line = page.select_one("section[data-path='f.txt'] [data-line='2'][data-side='new']")
    assert line is not None and line["data-path"] == "f.txt" and line.get_text() == "BETA"
    gone = page.select_one("section[data-path='f.txt'] [data-line='5'][data-side='old']")
    assert gone is not None and gone.get_text() == "epsilon"

    assert (await comment(client, sid, 2, "Lower <b>case</b>, please.")).status_code == 201
    doomed = (await comment(client, sid, 6, "never mind")).json()
    panel = soup(await client.get(f"/sessions/{sid}/changes")).select_one("#review-comments")
    assert panel is not None
    items = panel.select("li.review-item")
    assert [words(i.select_one(".review-where")) for i in items] == [
        "f.txt:2 not sent yet",
        "f.txt:6 not sent yet",
    ]
    assert [i.select_one(".review-quote").get_text() for i in items] == ["BETA", "eta"]
    # The comment is text, not markup.
    assert items[0].select_one(".review-body b") is None
    assert items[0].select_one(".review-body").get_text() == "Lower <b>case</b>, please."
    send = panel.select_one("form.review-send")
    assert send is not None and send["method"] == "post"
    assert send["action"] == f"/sessions/{sid}/comments/send"
    token = send.select_one("input[name=csrf_token]")
    assert token is not None and token["value"]
    assert words(send.select_one("button")) == "Send 2 comments to the agent"

    # Deleting and sending are plain forms that come back to a page.
    r = await client.post(f"/sessions/{sid}/comments/{doomed['id']}/delete")
    assert r.status_code == 303
    assert r.headers["location"] == f"/sessions/{sid}/changes#review-comments"
    r = await client.post(f"/sessions/{sid}/comments/send")
    assert r.status_code == 303 and r.headers["location"] == f"/sessions/{sid}"
    events = await wait_for_events(client, sid, count("permission_request"))
    seq = [e for e in events if e["kind"] == "user_message"][-1]["seq"]

    fragment = soup(await client.get(f"/sessions/{sid}/comments"))
    (item,) = fragment.select("#review-comments li.review-item")
    assert words(item.select_one(".review-where")) == "f.txt:2 sent · line unchanged the message"
    link = item.select_one(".review-where a")
    assert link is not None and link["href"] == f"/sessions/{sid}#e-{seq}"
    assert fragment.select_one("form.review-send") is None
    assert item.select_one("form.review-delete") is None

    await approve_edit(client, sid, worktree, EDITED.replace("BETA", "Beta"))
    page = soup(await client.get(f"/sessions/{sid}/changes"))
    state = page.select_one("#review-comments li.review-item .review-state")
    assert state is not None and state.get_text() == "changed since"

    # Nothing open: the form answers with the reason.
    r = await client.post(f"/sessions/{sid}/comments/send")
    assert r.status_code == 409 and "No open review comments" in r.text
