"""A message sent "now" reaches the real Claude Code inside the running turn.

The fake model scripts a slow tool call; while it runs, the message goes through
``/steer``. It must show up in the model's next request of that same turn, next to the
tool result, before the turn's one ``turn_end``; the transcript marks where it landed.
Without a tool call left, the CLI runs it right after the turn's text: still one turn.
"""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from tests.fakes.fake_model_server import FakeModelServer, request_texts
from tests.helpers import count, of_kind, send, wait_for_events

pytestmark = pytest.mark.real_cli

STEER = "steer: use the second approach instead"


@pytest.fixture
def fake_rules() -> dict[str, Any]:
    slow = " ".join(["slowly"] * 60)
    return {
        "rules": [
            {"match": "slow work", "tool": "Bash", "input": {"command": "sleep 3; echo slept"}},
            {"match": "slow text", "text": slow},
            {"match": "steer:", "text": "changing course"},
        ],
        "after_tool": "after the tool",
        "chunk_delay": 0.05,
    }


def seq_of(events: list[dict[str, Any]], kind: str, **match: Any) -> int:
    """The seq of the first event of ``kind`` whose fields match."""
    for e in events:
        if e["kind"] == kind and all(e.get(k) == v for k, v in match.items()):
            return int(e["seq"])
    raise AssertionError(f"no {kind} {match} in {[e['kind'] for e in events]}")


async def steer_mid_turn(client: httpx.AsyncClient, sid: str, prompt: str, once: str) -> int:
    """Start a turn with ``prompt``; once an event ``once`` is stored, steer it."""
    await send(client, sid, prompt)
    await wait_for_events(client, sid, count(once), timeout=60)
    r = await client.post(f"/api/sessions/{sid}/steer", json={"text": STEER})
    assert r.status_code == 202, r.text
    seq: int = r.json()["seq"]
    return seq


async def test_a_message_sent_now_lands_between_the_tool_calls_of_the_running_turn(
    client: httpx.AsyncClient, claude_session: str, fake_model: FakeModelServer
) -> None:
    sid = claude_session
    assert (await client.get(f"/api/sessions/{sid}/steer")).json() == {
        "can_steer": True,
        "reason": "",
    }
    steer_seq = await steer_mid_turn(client, sid, "please do slow work", "tool_call")

    events = await wait_for_events(client, sid, count("turn_end"), timeout=60)
    assert len(of_kind(events, "turn_end")) == 1
    [sent] = [e for e in events if e["seq"] == steer_seq]
    assert sent["kind"] == "user_message" and sent["steering"] is True
    [landed] = of_kind(events, "steer_landed")
    assert (landed["message_id"], landed["text"]) == (sent["message_id"], STEER)
    # Sent while the tool ran, landed once its result was back, answered after that.
    assert (
        seq_of(events, "tool_call")
        < steer_seq
        < seq_of(events, "tool_result")
        < landed["seq"]
        < seq_of(events, "assistant_message", text="after the tool")
        < seq_of(events, "turn_end")
    )

    # The model got it in the request that carried the tool result: the same turn.
    requests = [request_texts(e) for e in fake_model.message_requests()]
    [with_result] = [texts for texts in requests if "slept" in texts]
    assert any(STEER in t for t in with_result)
    assert sum(any(STEER in t for t in texts) for texts in requests) == 1

    # Nothing runs now: a message for "now" is refused and nothing is stored.
    r = await client.post(f"/api/sessions/{sid}/steer", json={"text": "too late"})
    assert r.status_code == 409 and "not working" in r.json()["detail"]
    after = (await client.get(f"/api/sessions/{sid}/events")).json()["events"]
    assert not any(e.get("text") == "too late" for e in after)


async def test_a_message_sent_now_after_the_last_tool_is_answered_within_the_same_turn(
    client: httpx.AsyncClient, claude_session: str, fake_model: FakeModelServer
) -> None:
    sid = claude_session
    await steer_mid_turn(client, sid, "please slow text", "text_delta")

    events = await wait_for_events(
        client, sid, lambda evs: any(e.get("text") == "changing course" for e in evs), timeout=60
    )
    events = await wait_for_events(client, sid, count("turn_end"), timeout=30)
    # The CLI ends its turn and runs the message as one more: the app shows one turn.
    [end] = of_kind(events, "turn_end")
    [landed] = of_kind(events, "steer_landed")
    first_answer = seq_of(events, "assistant_message")
    assert (
        first_answer < landed["seq"] < seq_of(events, "assistant_message", text="changing course")
    )
    assert landed["seq"] < end["seq"]
    assert end["usage"]["output_tokens"] > 0
    status = (await client.get(f"/api/sessions/{sid}")).json()["status"]
    assert status == "live"


async def test_stop_after_a_message_sent_now_stops_the_turn_it_would_start(
    client: httpx.AsyncClient, claude_session: str, fake_model: FakeModelServer
) -> None:
    sid = claude_session
    await steer_mid_turn(client, sid, "please do slow work", "tool_call")
    # The CLI keeps the waiting message queued through the interrupt and then runs it.
    r = await client.post(f"/api/sessions/{sid}/interrupt")
    assert r.status_code == 202, r.text

    events = await wait_for_events(client, sid, count("turn_end"), timeout=60)
    [end] = of_kind(events, "turn_end")
    assert end["stop_reason"] == "cancelled"
    chat = (await client.get(f"/api/sessions/{sid}")).json()
    assert (chat["status"], chat["turns"]) == ("live", 1)
    # The session goes on: the next message is a turn of its own.
    await send(client, sid, "hello again")
    events = await wait_for_events(client, sid, count("turn_end", 2), timeout=60)
    assert of_kind(events, "turn_end")[-1]["stop_reason"] == "success"
    assert of_kind(events, "assistant_message")[-1]["seq"] > end["seq"]
