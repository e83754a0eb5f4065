"""Images on messages and rewinding files, as the chat page renders them.

The thumbnails of a message's images, the "Rewind files to here" action (only where a
checkpoint exists), the rewind line with its file names escaped and shown relative to the
session's folder, and the composer's and dialog's hooks for static/js.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import httpx
import pytest
from bs4 import BeautifulSoup
from fastapi.templating import Jinja2Templates

from app.resources import templates_dir
from app.web.render import make_templates
from app.web.transcript import SSE_SWAP_EVENTS, render_event
from tests.conftest import LiveServer
from tests.web.history.test_pages_history import new_profile, new_session
from tests.web.history.test_pages_permissions import soup_of
from tests.web.test_render import assert_no_active_markup, ev

HOSTILE_NAME = "<img src=x onerror=alert(1)>.txt"
URL = "/api/sessions/s1/images/" + "a" * 64


@pytest.fixture(scope="module")
def templates() -> Jinja2Templates:
    return make_templates(templates_dir())


def soup(html: str) -> BeautifulSoup:
    return BeautifulSoup(html, "html.parser")


def image(url: str = URL) -> dict[str, str]:
    return {"id": url.rsplit("/", 1)[-1], "media_type": "image/png", "url": url}


# -- images on a message -------------------------------------------------------------


def test_a_message_shows_its_images_as_links_to_the_full_image(templates: Jinja2Templates) -> None:
    other = URL.replace("a" * 64, "b" * 64)
    html = render_event(
        templates,
        ev(1, "user_message", text="see", message_id="m1", images=[image(), image(other)]),
    )
    page = soup(html)
    bubble = page.select_one(".msg.user .bubble")
    assert bubble is not None and bubble.get_text() == "see"
    links = page.select(".msg.user ul.msg-images li a")
    assert [a["href"] for a in links] == [URL, other]
    assert all(a["target"] == "_blank" and a["rel"] == ["noopener"] for a in links)
    imgs = [a.find("img") for a in links]
    assert [(i["src"], i["alt"], i["loading"]) for i in imgs if i is not None] == [
        (URL, "Attached image 1", "lazy"),
        (other, "Attached image 2", "lazy"),
    ]


@pytest.mark.parametrize(
    "images",
    [
        None,
        [],
        "not a list",
        [{"url": "javascript:alert(1)"}],
        [{"url": "https://example.com/x.png"}],
        [{"id": "x"}],
        ["/api/sessions/s1/images/x"],
    ],
)
def test_only_the_apps_own_image_urls_are_shown(templates: Jinja2Templates, images: Any) -> None:
    html = render_event(templates, ev(1, "user_message", text="hi", images=images))
    assert "<img" not in html and "msg-images" not in html


def test_an_image_alone_leaves_the_text_bubble_empty(templates: Jinja2Templates) -> None:
    page = soup(render_event(templates, ev(1, "user_message", text="", images=[image()])))
    bubble = page.select_one(".bubble")
    # Empty (no whitespace either), so CSS hides it; the queue still finds it by text.
    assert bubble is not None and bubble.contents == []
    assert len(page.select(".msg-images img")) == 1


# -- the rewind action -----------------------------------------------------------------


@pytest.mark.parametrize(
    ("payload", "shown"),
    [
        ({"message_id": "m1"}, True),
        ({}, False),  # sent before checkpoints were kept
        ({"message_id": ""}, False),
        ({"message_id": "m1", "queued": True}, True),  # hidden by CSS until it has gone
    ],
)
def test_rewind_action_only_for_messages_with_a_checkpoint(
    templates: Jinja2Templates, payload: dict[str, Any], shown: bool
) -> None:
    page = soup(render_event(templates, ev(7, "user_message", text="go", **payload)))
    actions = page.select("button.rewind-act")
    assert len(actions) == (1 if shown else 0)
    if shown:
        assert actions[0]["data-rewind-seq"] == "7"
        assert actions[0]["type"] == "button"
        assert actions[0]["aria-label"] == "Rewind files to here (before message #7)"


def test_no_rewind_action_on_other_kinds_or_dropped_messages(templates: Jinja2Templates) -> None:
    for event in (
        ev(2, "assistant_message", text="x", message_id="m1"),
        ev(3, "text_delta", text="x", message_id="m1"),
        ev(4, "thought", text="x", message_id="m1"),
    ):
        assert "rewind-act" not in render_event(templates, event)
    dropped = ev(5, "user_message", text="x", message_id="m1", queued=True, queue_state="dropped")
    assert "rewind-act" not in render_event(templates, dropped)
    sent = ev(6, "user_message", text="x", message_id="m1", queued=True, queue_state="sent")
    assert "rewind-act" in render_event(templates, sent)


# -- the rewind line -------------------------------------------------------------------


def test_rewind_line_escapes_names_and_shows_them_relative(templates: Jinja2Templates) -> None:
    files = [f"/src/app/{HOSTILE_NAME}", "/src/app/pkg/b.py", "/elsewhere/c.txt"]
    html = render_event(
        templates,
        ev(9, "rewind", event_seq=4, files=files, insertions=1, deletions=2),
        cwd="/src/app/",
    )
    assert_no_active_markup(html)
    line = soup(html).select_one(".event.rewind")
    assert line is not None
    assert line["data-kind"] == "rewind" and line["id"] == "e-9"
    assert " ".join(line.get_text().split()) == (
        f"↶ Files rewound to before message #4: {HOSTILE_NAME}, pkg/b.py, /elsewhere/c.txt"
    )
    link = line.select_one("a")
    assert link is not None and link["href"] == "#e-4"
    assert [c.get_text() for c in line.select("code")] == [
        HOSTILE_NAME,
        "pkg/b.py",
        "/elsewhere/c.txt",
    ]


def test_many_rewound_files_fold_into_a_list(templates: Jinja2Templates) -> None:
    files = [f"/p/f{i}.py" for i in range(6)]
    page = soup(render_event(templates, ev(3, "rewind", event_seq=1, files=files), cwd="/p"))
    summary = page.select_one("details.rewind-list summary")
    assert summary is not None
    assert " ".join(summary.get_text().split()) == "↶ Files rewound to before message #1: 6 files"
    assert [li.get_text() for li in page.select("details.rewind-list li")] == [
        f"f{i}.py" for i in range(6)
    ]


@pytest.mark.parametrize("files", [[], None, "not a list", [1, 2]])
def test_rewind_line_without_file_names(templates: Jinja2Templates, files: Any) -> None:
    html = render_event(templates, ev(3, "rewind", event_seq=2, files=files))
    line = soup(html).select_one(".event.rewind")
    assert line is not None
    assert " ".join(line.get_text().split()) == (
        "↶ Files rewound to before message #2: no file had changed."
    )


def test_rewind_events_are_swapped_in_live() -> None:
    assert "rewind" in SSE_SWAP_EVENTS.split(",")


# -- over HTTP: the page, the earlier-events loader and the live stream -----------------


async def read_live(client: httpx.AsyncClient, sid: str, kind: str) -> str:
    """The HTML of the first ``kind`` message on the page's own stream."""

    async def run() -> str:
        async with client.stream("GET", f"/sessions/{sid}/live?after=0") as resp:
            event, data = "", []
            async for line in resp.aiter_lines():
                if line.startswith("event:"):
                    event = line.partition(":")[2].strip()
                elif line.startswith("data:"):
                    data.append(line.partition(":")[2].removeprefix(" "))
                elif line == "":
                    if event == kind:
                        return "\n".join(data)
                    event, data = "", []
        raise AssertionError("stream ended")

    return await asyncio.wait_for(run(), timeout=10)


async def test_images_and_rewind_lines_on_the_page_the_loader_and_the_stream(
    server: LiveServer, client: httpx.AsyncClient, project_dir: Path
) -> None:
    sid = await new_session(client, await new_profile(client, project_dir), "imgs")
    events = server.app.state.angelia.events
    events.append(sid, "user_message", {"text": "old", "message_id": "m1", "images": [image()]})
    events.append(sid, "rewind", {"event_seq": 1, "files": [str(project_dir / HOSTILE_NAME)]})
    await events.flush()

    page = soup_of(await client.get(f"/sessions/{sid}"))
    assert page.select_one(".msg.user .msg-images img") is not None
    earlier = soup_of(await client.get(f"/sessions/{sid}/earlier?before=3"))
    live = soup(await read_live(client, sid, "rewind"))
    for shown in (page, earlier, live):
        code = shown.select_one(".event.rewind code")
        assert code is not None and code.get_text() == HOSTILE_NAME


async def test_the_composer_can_take_images(client: httpx.AsyncClient, project_dir: Path) -> None:
    sid = await new_session(client, await new_profile(client, project_dir), "imgs")
    page = soup_of(await client.get(f"/sessions/{sid}"))
    attach = page.select_one("form#composer #attach")
    assert attach is not None and attach["data-url"] == f"/api/sessions/{sid}/messages"
    assert attach.has_attr("hidden")  # shown by static/js/attach.js
    file_input = attach.select_one("input#attach-input[type=file]")
    # Without a name the htmx form never sends it; attach.js reads it.
    assert file_input is not None and not file_input.has_attr("name")
    assert file_input["accept"] == "image/png,image/jpeg,image/gif,image/webp"
    assert file_input.has_attr("multiple")
    button = attach.select_one("button#attach-btn")
    assert button is not None and button.get_text() == "Attach image"


async def test_the_rewind_dialog_only_for_a_backend_that_can_rewind(
    client: httpx.AsyncClient, project_dir: Path
) -> None:
    sid = await new_session(client, await new_profile(client, project_dir), "claude")
    page = soup_of(await client.get(f"/sessions/{sid}"))
    dialog = page.select_one("dialog#rewind-dialog")
    assert dialog is not None
    assert dialog["data-url"] == f"/api/sessions/{sid}/rewind"
    assert dialog["data-cwd"] == str(project_dir)
    assert [b.get_text() for b in dialog.select("button")] == ["Rewind", "Cancel"]

    body = {"name": "acp", "backend": "acp", "cwd": str(project_dir), "command": ["agent"]}
    r = await client.post("/api/profiles", json=body)
    assert r.status_code == 201, r.text
    sid = await new_session(client, r.json()["id"], "acp")
    page = soup_of(await client.get(f"/sessions/{sid}"))
    assert page.select_one("#rewind-dialog") is None
