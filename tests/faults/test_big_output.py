"""A tool result of megabytes in the middle of a turn, beside a session that streams.

Agents print single lines of many megabytes (a ``cat`` of a big file, an image). Such a
line is parsed in a worker thread and its payload encoded by a thread of its own, so the
event loop keeps serving everyone else meanwhile. Whatever the timing, every event must
arrive once, in order and with gapless ``seq``, on the stream and in storage (the big one
on the stream as a stand-in saying where the whole event is), the text must be
searchable, and the other session and ``/api/health`` must keep answering.
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path
from typing import Any

import httpx

from tests.conftest import LiveServer, write_scenario
from tests.helpers import count, covered, of_kind, read_sse, send, wait_for_events
from tests.security._support import make_session

HOSTILE_FAKE = Path(__file__).resolve().parents[1] / "security" / "hostile_claude.py"
# Every kind of character an encoder could get wrong, a word to search for near the start,
# and one past the first MB, which the search index leaves out.
ROW = 'line "quoted" \\ back\tslash, é ü 中文 😀, 1234567890123456789012 ok\n'
BIG_TEXT = "zanzibarquokka " + ROW * (3_000_000 // len(ROW)) + "wombatfarewell"


def big_turn() -> list[dict[str, Any]]:
    return [
        {"text": "before the file", "chunks": 3},
        {"tool": "Read", "input": {"path": "big.txt"}, "output": BIG_TEXT},
        {"text": "after the file", "chunks": 3},
    ]


async def _session(
    client: httpx.AsyncClient, project_dir: Path, fake: dict[str, Any], scenario: Path
) -> str:
    env = {**fake["env"], "FAKE_CLAUDE_SCENARIO": str(scenario)}
    command = [sys.executable, str(HOSTILE_FAKE)]
    return await make_session(client, project_dir, {**fake, "command": command, "env": env})


def assert_gapless(frames: list[dict[str, Any]], after: int) -> None:
    seqs = [seq for seq, _ in covered(frames)]
    assert seqs == list(range(after + 1, after + 1 + len(seqs))), seqs


async def test_a_big_tool_result_arrives_whole_and_in_order_beside_another_stream(
    server: LiveServer,
    client: httpx.AsyncClient,
    project_dir: Path,
    fake_claude: dict[str, Any],
    tmp_path: Path,
) -> None:
    big = write_scenario(tmp_path / "big.json", [big_turn()])
    chatty = write_scenario(
        tmp_path / "chatty.json", [[{"text": "x" * 400, "chunks": 200, "delay": 0.002}]]
    )
    big_sid = await _session(client, project_dir, fake_claude, big)
    chatty_sid = await _session(client, project_dir, fake_claude, chatty)

    def ended(frames: list[dict[str, Any]]) -> bool:
        return any(f["kind"] == "turn_end" for f in frames)

    big_stream = asyncio.create_task(
        read_sse(client, f"/api/sessions/{big_sid}/stream", until=ended, timeout=60)
    )
    chatty_stream = asyncio.create_task(
        read_sse(client, f"/api/sessions/{chatty_sid}/stream", until=ended, timeout=60)
    )
    await send(client, big_sid, "read the big file")
    await send(client, chatty_sid, "talk")
    health = [(await client.get("/api/health")).status_code for _ in range(5)]
    big_frames, chatty_frames = await asyncio.gather(big_stream, chatty_stream)

    assert health == [200] * 5
    assert_gapless(big_frames, 0)
    assert_gapless(chatty_frames, 0)
    assert "".join(f["text"] for f in of_kind(chatty_frames, "text_delta")) == "x" * 400
    # Deltas of one text may be merged, but none crosses the tool call and its result.
    shown = [(f["kind"], f.get("text", "")) for f in big_frames if f["kind"] != "status"]
    call = [k for k, _ in shown].index("tool_call")
    assert shown[call + 1][0] == "tool_result", shown
    assert "".join(t for k, t in shown[:call] if k == "text_delta") == "before the file"
    assert "".join(t for k, t in shown[call:] if k == "text_delta") == "after the file"
    [result] = of_kind(big_frames, "tool_result")
    # Too big to send down a stream: the event's own fields, and where the whole one is.
    assert "output" not in result, sorted(result)
    assert result["elided"]["chars"] > len(BIG_TEXT)
    whole = await client.get(result["elided"]["href"])
    assert whole.status_code == 200 and whole.headers["content-type"] == "application/json"
    event = whole.json()
    assert (event["seq"], event["kind"], event["output"]) == (
        result["seq"],
        "tool_result",
        BIG_TEXT,
    )

    stored = await wait_for_events(client, big_sid, count("turn_end"))
    # (a status event may follow the turn's end)
    covers = covered(big_frames)
    assert [(e["seq"], e["kind"]) for e in stored][: len(covers)] == covers
    assert of_kind(stored, "tool_result")[0]["output"] == BIG_TEXT
    found = (await client.get("/api/search", params={"q": "zanzibarquokka"})).json()
    assert [(h["session_id"], h["seq"]) for h in found] == [(big_sid, result["seq"])]
    assert (await client.get("/api/search", params={"q": "wombatfarewell"})).json() == []


async def test_one_event_is_read_whole_by_its_seq_and_a_missing_one_is_404(
    client: httpx.AsyncClient, project_dir: Path, fake_claude: dict[str, Any], tmp_path: Path
) -> None:
    scenario = write_scenario(tmp_path / "small.json", [[{"text": "hello", "chunks": 2}]])
    sid = await _session(client, project_dir, fake_claude, scenario)
    await send(client, sid, "hi")
    stored = await wait_for_events(client, sid, count("turn_end"))
    for event in stored:
        r = await client.get(f"/api/sessions/{sid}/events/{event['seq']}")
        assert r.status_code == 200 and r.json() == event
    last = stored[-1]["seq"]
    missing = await client.get(f"/api/sessions/{sid}/events/{last + 100}")
    assert missing.status_code == 404 and str(last + 100) in missing.json()["detail"]
    nobody = await client.get("/api/sessions/no-such-session/events/1")
    assert nobody.status_code == 404
