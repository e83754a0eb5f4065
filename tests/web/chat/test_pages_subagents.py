"""A subagent's work nests under the Agent call that runs it: in fold_events, on the
page after a reload, and in the live stream's permission card."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import httpx
from bs4 import BeautifulSoup

from app.resources import templates_dir
from app.web.nesting import nest_subagents
from app.web.render import make_templates
from app.web.transcript import fold_events, render_event
from tests.api.test_chat import make_session
from tests.conftest import LiveServer
from tests.web.chat.test_pages_prompts import words
from tests.web.test_render import HOSTILE, assert_no_active_markup, ev

AGENT_INPUT = {
    "description": "Make a file",
    "prompt": "BASH: touch x",
    "subagent_type": "general-purpose",
}


def subagent_events(*, finished: bool = True) -> list[dict[str, Any]]:
    """An Agent call whose subagent runs Bash after asking, as the real CLI reports it."""
    inner = {"parent_tool_call_id": "A1"}
    events = [
        ev(1, "user_message", text="delegate"),
        ev(2, "tool_call", tool_call_id="A1", tool="Agent", title="Make a file", input=AGENT_INPUT),
        ev(3, "task", task_id="t1", tool_call_id="A1", status="running", description="Make a file"),
        ev(4, "assistant_message", text="I will touch it", message_id="m2", **inner),
        ev(5, "tool_call", tool_call_id="B1", tool="Bash", title="touch x", **inner),
        ev(6, "permission_request", permission_id="p1", tool="Bash", status="pending", **inner),
        ev(7, "permission_decision", permission_id="p1", decision="allow_once", source="user"),
        ev(8, "tool_result", tool_call_id="B1", output="", **inner),
        # A progress report: its description says what the subagent does now.
        ev(9, "task", task_id="t1", tool_call_id="A1", description="Running x", last_tool="Bash"),
    ]
    if finished:
        events += [
            ev(10, "task", task_id="t1", tool_call_id="A1", status="completed", summary="Made x"),
            ev(11, "tool_result", tool_call_id="A1", output="done"),
            ev(12, "turn_end", stop_reason="success"),
        ]
    return events


def test_fold_nests_the_subagents_work_under_its_call() -> None:
    events = subagent_events()
    folded = fold_events(events)
    assert [e["seq"] for e in folded] == [1, 2, 6, 7, 11, 12]
    call = folded[1]
    assert [c["seq"] for c in call["children"]] == [4, 5, 8]
    assert call["children"][1]["state"] == "done"
    assert call["subagent"] == {
        "description": "Make a file",
        "subagent_type": "general-purpose",
        "status": "completed",
        "summary": "Made x",
        "last_tool": "Bash",
    }
    assert folded[2]["subagent"]["description"] == "Make a file"
    assert "children" not in events[1] and "subagent" not in events[5]


def test_a_subagent_still_running_or_cut_off() -> None:
    running = fold_events(subagent_events(finished=False))[1]["subagent"]
    assert (running["status"], running["last_tool"]) == ("running", "Bash")
    stopped = subagent_events(finished=False) + [ev(10, "turn_end", stop_reason="interrupted")]
    assert fold_events(stopped)[1]["subagent"]["status"] == "stopped"


def test_items_whose_call_is_not_on_the_page_stay_at_the_top() -> None:
    later = subagent_events()[3:]
    # Task reports of a call on another page stay too (hidden), for the page to apply.
    assert [e["seq"] for e in nest_subagents(later)] == list(range(4, 13))


def test_the_group_renders_collapsed_with_its_status_line() -> None:
    templates = make_templates(templates_dir())
    folded = fold_events(subagent_events())
    html = "".join(render_event(templates, e) for e in folded)
    assert_no_active_markup(html)
    soup = BeautifulSoup(html, "html.parser")
    wrapper = soup.select_one(".event.agent-call[data-kind=tool_call]")
    assert wrapper is not None and wrapper["id"] == "e-2"
    assert wrapper.select_one(".tool-call[data-tcid=A1]") is not None
    group = wrapper.select_one("details.subagent[data-subagent-for=A1]")
    assert group is not None and not group.has_attr("open")
    assert group["data-status"] == "completed" and "status-completed" in group["class"]
    assert words(group.select_one(".subagent-name")) == "Subagent · Make a file (general-purpose)"
    assert words(group.select_one(".subagent-status")) == "completed · last tool: Bash · Made x"
    log = group.select_one(".subagent-log")
    assert log is not None
    assert [e["data-seq"] for e in log.select(":scope > .event")] == ["4", "5", "8"]
    assert all(e["data-parent"] == "A1" for e in log.select(":scope > .event"))
    assert soup.select("[data-kind=task]") == []
    card = soup.select_one("#perm-p1")
    assert card is not None and card.find_parent(class_="subagent") is None
    assert words(card.select_one(".perm-asker")) == (
        "Asked by the subagent Make a file (general-purpose)"
    )


def test_live_fragments_of_a_subagent() -> None:
    templates = make_templates(templates_dir())
    events = subagent_events()
    call = BeautifulSoup(render_event(templates, events[1]), "html.parser")
    group = call.select_one(".subagent[data-status=running]")
    assert group is not None and words(group.select_one(".subagent-status")) == "running…"
    nested = BeautifulSoup(render_event(templates, events[4]), "html.parser")
    assert nested.select_one(".tool-call[data-parent=A1]") is not None
    hostile = {**events[2], "status": HOSTILE, "summary": HOSTILE, "last_tool": HOSTILE}
    html = render_event(templates, hostile)
    assert_no_active_markup(html)
    report = BeautifulSoup(html, "html.parser").select_one("[data-task-for=A1]")
    assert report is not None and report.has_attr("hidden") and report["data-summary"] == HOSTILE
    # The permission card is never nested, and the main agent's items name no parent.
    asked = BeautifulSoup(render_event(templates, events[5]), "html.parser")
    assert asked.select_one("[data-parent]") is None
    assert "data-parent" not in render_event(templates, events[0])


async def test_after_a_reload_and_live(
    server: LiveServer, client: httpx.AsyncClient, project_dir: Path, fake_claude: dict[str, Any]
) -> None:
    sid = await make_session(client, project_dir, fake_claude)
    log = server.app.state.angelia.events
    for event in subagent_events(finished=False):
        payload = {k: v for k, v in event.items() if k not in ("seq", "session_id", "kind", "at")}
        log.append(sid, event["kind"], payload)
    await log.flush()
    page = BeautifulSoup((await client.get(f"/sessions/{sid}")).text, "html.parser")
    group = page.select_one("#transcript .agent-call .subagent[data-subagent-for=A1]")
    assert group is not None and group["data-status"] == "running"
    assert words(group.select_one(".subagent-status")) == "running… · last tool: Bash"
    assert len(group.select(".subagent-log > .event")) == 3
    card = page.select_one("#transcript > .perm-event #perm-p1")
    assert card is not None and "Make a file" in words(card.select_one(".perm-asker"))

    # The live stream's card is rendered alone: it looks the subagent up.
    html = await first_sse_data(client, f"/sessions/{sid}/live?after=5", "perm-asker")
    asker = BeautifulSoup(html, "html.parser").select_one(".perm-asker")
    assert words(asker) == "Asked by the subagent Make a file (general-purpose)"


async def first_sse_data(client: httpx.AsyncClient, url: str, needle: str) -> str:
    """The data of the first SSE message on ``url`` that contains ``needle``."""

    async def read() -> str:
        async with client.stream("GET", url) as resp:
            data: list[str] = []
            async for line in resp.aiter_lines():
                if line.startswith("data:"):
                    data.append(line[5:].removeprefix(" "))
                elif not line and data:
                    text = "\n".join(data)
                    if needle in text:
                        return text
                    data = []
        raise AssertionError(f"the stream ended without {needle!r}")

    return await asyncio.wait_for(read(), timeout=10)
