"""The context gauge's figures and Compact, through the API and the pages, with the fake
claude and the fake ACP agent (the real CLIs: tests/real/test_real_claude_context.py)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx

from tests.api.test_chat import make_session
from tests.conftest import write_scenario
from tests.fakes.fake_acp_agent import FakeAcpFiles
from tests.helpers import count, of_kind, send, wait_for_events

WINDOW = 200_000
# What the newest call read (input + cache read + cache creation); its message_delta
# says 5 output tokens on top.
CALL_USAGE = {
    "input_tokens": 1_000,
    "cache_read_input_tokens": 150_000,
    "cache_creation_input_tokens": 2_000,
}
USED = 1_000 + 150_000 + 2_000 + 5


def stdin_texts(fake: dict[str, Any]) -> list[str]:
    """The user messages the app wrote to the fake CLI."""
    path: Path = fake["log"]
    lines = [json.loads(x) for x in path.read_text().splitlines()] if path.exists() else []
    return [
        line["stdin"]["message"]["content"]
        for line in lines
        if isinstance(line.get("stdin"), dict) and line["stdin"].get("type") == "user"
    ]


async def test_claude_figures_fill_the_gauge_and_compact_folds_into_one_line(
    client: httpx.AsyncClient, project_dir: Path, fake_claude: dict[str, Any]
) -> None:
    turns = [
        [{"text": "a long answer", "usage": CALL_USAGE}],
        [{"compact": {"pre_tokens": USED, "post_tokens": 18_000}}],
    ]
    write_scenario(fake_claude["scenario"], turns, context_window=WINDOW)
    sid = await make_session(client, project_dir, fake_claude)
    unknown = (await client.get(f"/api/sessions/{sid}/context")).json()
    assert unknown == {
        "used": None,
        "size": None,
        "level": "unknown",
        "percent": None,
        "can_compact": False,
        "compact_refusal": "Nothing to compact yet: the agent has not started a conversation.",
    }

    await send(client, sid, "say a lot")
    events = await wait_for_events(client, sid, count("turn_end"))
    (usage,) = of_kind(events, "usage")
    assert (usage["used"], usage["size"]) == (USED, WINDOW)
    # Stored before the turn's end, so a page that shows the end shows the figures too.
    assert usage["seq"] < of_kind(events, "turn_end")[0]["seq"]
    figures = (await client.get(f"/api/sessions/{sid}/context")).json()
    assert figures == {
        "used": USED,
        "size": WINDOW,
        "level": "amber",
        "percent": 77,
        "can_compact": True,
        "compact_refusal": "",
    }
    page = (await client.get(f"/sessions/{sid}")).text
    assert 'data-level="amber"' in page and f'data-used="{USED}"' in page
    assert "153.0k of 200.0k tokens used (77%)" in page
    assert 'id="compact-btn"' in page
    row = (await client.get("/sessions")).text
    assert f'data-gauge-of="{sid}"' in row and 'data-level="amber"' in row

    r = await client.post(f"/api/sessions/{sid}/compact")
    assert r.status_code == 202, r.text
    events = await wait_for_events(client, sid, count("turn_end", 2))
    assert stdin_texts(fake_claude)[-1] == "/compact"
    (compacted,) = of_kind(events, "compacted")
    assert compacted["trigger"] == "manual"
    assert (compacted["before"], compacted["after"]) == (USED, 18_000)
    # Until the next model call, the context is the CLI's summary.
    assert (of_kind(events, "usage")[-1]["used"]) == 18_000
    after = (await client.get(f"/api/sessions/{sid}/context")).json()
    assert (after["used"], after["level"], after["percent"]) == (18_000, "green", 9)
    page = (await client.get(f"/sessions/{sid}")).text
    assert "Compacted: 153.0k → 18.0k tokens" in page
    assert "Before: 153,005 tokens." in page


async def test_compact_is_refused_while_a_turn_runs_and_nothing_is_sent(
    client: httpx.AsyncClient, project_dir: Path, fake_claude: dict[str, Any]
) -> None:
    turns = [[{"text": "hi", "usage": CALL_USAGE}], [{"sleep": 30}]]
    write_scenario(fake_claude["scenario"], turns, context_window=WINDOW)
    sid = await make_session(client, project_dir, fake_claude)
    await send(client, sid, "first")
    await wait_for_events(client, sid, count("turn_end"))
    await send(client, sid, "take your time")
    r = await client.post(f"/api/sessions/{sid}/compact")
    assert r.status_code == 409, r.text
    assert "compact once its turn has ended" in r.json()["detail"]
    page = await client.post(f"/sessions/{sid}/compact")
    assert page.status_code == 409 and "compact once its turn has ended" in page.text
    assert "/compact" not in stdin_texts(fake_claude)
    # The working session is on the board, its card with the gauge.
    (card,) = (await client.get("/api/board")).json()
    assert card["context"]["used"] == USED and card["context"]["level"] == "amber"
    assert 'data-level="amber"' in (await client.get("/board")).text
    await client.post(f"/api/sessions/{sid}/interrupt")
    assert (await client.post("/api/sessions/no-such-session/compact")).status_code == 404


async def acp_session(client: httpx.AsyncClient, files: FakeAcpFiles) -> str:
    pid = (await client.post("/api/profiles", json=files.profile())).json()["id"]
    sid: str = (await client.post("/api/sessions", json={"profile_id": pid})).json()["id"]
    return sid


async def test_an_acp_agent_without_a_compact_command_gets_no_button_and_a_409(
    client: httpx.AsyncClient, tmp_path: Path
) -> None:
    files = FakeAcpFiles(tmp_path)
    usage = {"update": {"usage": {"used": 190_000, "size": WINDOW}}}
    files.scenario([{"update": {"commands": ["review"]}}, usage, {"text": "ok"}])
    sid = await acp_session(client, files)
    await send(client, sid, "hi")
    await wait_for_events(client, sid, count("turn_end"))
    figures = (await client.get(f"/api/sessions/{sid}/context")).json()
    assert (figures["used"], figures["size"], figures["level"]) == (190_000, WINDOW, "red")
    assert figures["compact_refusal"] == "The acp agent offers no compact command."
    r = await client.post(f"/api/sessions/{sid}/compact")
    assert r.status_code == 409 and "offers no compact command" in r.text
    page = (await client.get(f"/sessions/{sid}")).text
    assert 'data-level="red"' in page and 'id="compact-btn"' not in page
    events = (await client.get(f"/api/sessions/{sid}/events")).json()["events"]
    assert [e["text"] for e in of_kind(events, "user_message")] == ["hi"]


async def test_an_acp_agent_that_lists_compact_gets_it_as_its_command(
    client: httpx.AsyncClient, tmp_path: Path
) -> None:
    files = FakeAcpFiles(tmp_path)
    files.scenario([{"update": {"commands": ["compact"]}}, {"text": "ok"}], [{"text": "done"}])
    sid = await acp_session(client, files)
    await send(client, sid, "hi")
    await wait_for_events(client, sid, count("turn_end"))
    assert (await client.get(f"/api/sessions/{sid}/context")).json()["level"] == "unknown"
    assert 'id="compact-btn"' in (await client.get(f"/sessions/{sid}")).text
    r = await client.post(f"/api/sessions/{sid}/compact")
    assert r.status_code == 202, r.text
    await wait_for_events(client, sid, count("turn_end", 2))
    prompts = [
        json.loads(x)["in"]
        for x in files.log_path.read_text().splitlines()
        if '"session/prompt"' in x
    ]
    assert prompts[-1]["params"]["prompt"] == [{"type": "text", "text": "/compact"}]
