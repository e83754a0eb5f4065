"""Messages waiting in the app: their labels, Edit and Drop, and what became of them,
settled by the seq of the message each queue event names."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx
from bs4 import BeautifulSoup

from app.resources import templates_dir
from app.web.render import make_templates
from app.web.transcript import fold_events, render_event
from tests.api.test_chat import make_session
from tests.conftest import write_scenario
from tests.helpers import count, send, wait_for_events
from tests.web.chat.test_pages_prompts import words
from tests.web.test_render import HOSTILE, assert_no_active_markup, ev


def queued(seq: int, text: str, reason: str = "turn") -> dict[str, Any]:
    return ev(seq, "user_message", text=text, queued=True, queue_reason=reason)


def test_queue_events_settle_their_message_by_seq() -> None:
    events = [
        queued(1, "same"),
        queued(2, "same"),
        queued(3, "draft", "approval"),
        ev(4, "queued_dropped", queued_seq=2, text="same"),
        ev(5, "queued_edited", queued_seq=3, text="final"),
        ev(6, "queued_sent", queued_seq=3, text="final"),
        ev(7, "queued_sent", queued_seq=99, text="elsewhere"),
    ]
    folded = {e["seq"]: e for e in fold_events(events)}
    assert "queue_state" not in folded[1]  # same text, but not the one named
    assert folded[2]["queue_state"] == "dropped"
    assert folded[3]["queue_state"] == "sent"
    assert (folded[3]["text"], folded[3]["edited"]) == ("final", True)
    assert [s for s in (4, 5, 6, 7) if folded[s].get("settled")] == [4, 5, 6]
    assert events[2]["text"] == "draft" and "queue_state" not in events[1]


def test_queue_events_without_a_seq_name_the_oldest_by_text() -> None:
    events = [queued(1, "a"), queued(2, "a"), ev(3, "queued_sent", text="a")]
    folded = {e["seq"]: e.get("queue_state") for e in fold_events(events)}
    assert (folded[1], folded[2]) == ("sent", None)


def test_a_waiting_message_offers_edit_and_drop_and_says_why_it_waits() -> None:
    templates = make_templates(templates_dir())
    soup = BeautifulSoup(render_event(templates, queued(4, HOSTILE)), "html.parser")
    message = soup.select_one(".msg.user.queued")
    assert message is not None and message["data-queue"] == "waiting"
    assert message["data-queue-url"] == "/api/sessions/s1/queue/4"
    assert words(message.select_one(".queue-label")) == "waits for the current turn to end"
    assert [words(b) for b in message.select(".queue-tools button")] == ["Edit", "Drop"]
    editor = message.select_one("form.queue-editor[hidden]")
    assert editor is not None
    box = editor.select_one("textarea#queue-text-4")
    assert box is not None and box.get_text() == HOSTILE
    assert editor.select_one("label[for=queue-text-4]") is not None
    assert_no_active_markup(str(soup))

    html = render_event(templates, queued(5, "x", "approval"))
    label = BeautifulSoup(html, "html.parser").select_one(".queue-label")
    assert words(label) == "waits for your approval"
    # A message the app no longer holds (a page render says which it holds) has no tools.
    held = templates.get_template("_event.html").render(e=queued(5, "x"), queue_held=[4])
    assert "queue-tools" not in held and "data-queue-url" not in held


def test_settled_messages_render_without_tools() -> None:
    templates = make_templates(templates_dir())
    events = [queued(1, "a"), queued(2, "b"), ev(3, "queued_dropped", queued_seq=2, text="b")]
    events += [ev(4, "queued_sent", queued_seq=1, text="a2")]
    html = "".join(render_event(templates, e) for e in fold_events(events))
    soup = BeautifulSoup(html, "html.parser")
    # Each shows where it went or was dropped, in that order; one that went is no longer
    # marked as queued.
    dropped, sent = soup.select(".msg.user")
    assert sent["data-queue"] == "sent" and sent.select_one(".queue-label") is None
    assert "queued" not in sent["class"] and "queued" in dropped["class"]
    assert words(sent.select_one(".bubble")) == "a2" and sent.select_one(".queue-edited")
    assert words(dropped.select_one(".queue-label")) == "dropped: not sent"
    assert soup.select(".queue-tools") == [] and soup.select("[data-queue-url]") == []
    events_markup = soup.select("[data-queue-event]")
    assert [e["data-queued-seq"] for e in events_markup] == ["2", "1"]
    assert all(e.has_attr("data-settled") for e in events_markup)


async def test_edit_and_drop_then_reload(
    client: httpx.AsyncClient, project_dir: Path, fake_claude: dict[str, Any]
) -> None:
    # The first turn runs until the test has edited the queue, however slow the machine.
    release = project_dir.parent / "release"
    write_scenario(fake_claude["scenario"], [[{"until_file": str(release)}, {"text": "first"}]])
    sid = await make_session(client, project_dir, fake_claude)
    await send(client, sid, "take your time")
    await wait_for_events(client, sid, count("status"))
    seqs = []
    for text in ("second, draft", "third"):
        r = await client.post(f"/api/sessions/{sid}/messages", json={"text": text})
        assert r.json()["queued"] is True
    seqs = [q["seq"] for q in (await client.get(f"/api/sessions/{sid}/queue")).json()]

    page = BeautifulSoup((await client.get(f"/sessions/{sid}")).text, "html.parser")
    waiting = page.select(".msg.user[data-queue=waiting]")
    assert [m["data-seq"] for m in waiting] == [str(s) for s in seqs]
    assert all(m.select_one(".queue-tools .queue-drop") for m in waiting)

    r = await client.patch(f"/api/sessions/{sid}/queue/{seqs[0]}", json={"text": "second"})
    assert r.status_code == 200
    r = await client.delete(f"/api/sessions/{sid}/queue/{seqs[1]}")
    assert r.status_code == 204
    page = BeautifulSoup((await client.get(f"/sessions/{sid}")).text, "html.parser")
    # The dropped one shows in the transcript where it was dropped; the one still waiting
    # below it, apart from the transcript.
    second, first = page.select(".msg.user.queued")
    assert first["data-queue"] == "waiting" and words(first.select_one(".bubble")) == "second"
    assert first.find_parent(id="queue-waiting") is not None
    assert second["data-queue"] == "dropped" and second.select_one(".queue-tools") is None
    assert second.find_parent(id="transcript") is not None

    release.touch()
    await wait_for_events(client, sid, count("turn_end", 2))
    page = BeautifulSoup((await client.get(f"/sessions/{sid}")).text, "html.parser")
    second, first = page.select(".msg.user[data-queue]")
    assert first["data-queue"] == "sent" and first.select_one(".queue-tools") is None
    assert words(first.select_one(".bubble")) == "second"
    assert second["data-queue"] == "dropped"
