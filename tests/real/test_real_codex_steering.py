"""A message sent "now" reaches the real Codex (codex-acp 2.6.0) inside the running turn.

codex-acp advertises steering and takes it as the ``_session/steering`` extension request
(``app/brains/acp/steer.py``). The fake model scripts a slow command; the message sent
while it runs must be in the model's next request of that same turn, before its end.
"""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from tests.fakes.fake_model_server import FakeModelServer, request_texts
from tests.helpers import count, of_kind, send, wait_for_events
from tests.real.steps import TIMEOUT
from tests.real.test_real_codex import (  # noqa: F401 (fixtures)
    codex_env,
    codex_profile,
    conversation_requests,
    make_codex_profile,
    new_session,
)

pytestmark = pytest.mark.real_cli

STEER = "steer: use the second approach instead"


@pytest.fixture
def fake_rules() -> dict[str, Any]:
    slow = {"command": "sleep 4; echo slept"}
    return {
        "rules": [{"match": "slow work", "tool": "Bash", "input": slow}],
        "after_tool": "after the tool",
        "chunk_delay": 0.02,
    }


async def test_a_message_sent_now_joins_codex_s_running_turn(
    client: httpx.AsyncClient,
    codex_profile: dict[str, Any],  # noqa: F811
    fake_model: FakeModelServer,
) -> None:
    sid = await new_session(client, codex_profile)
    await send(client, sid, "please do slow work")
    await wait_for_events(client, sid, count("tool_call"), timeout=TIMEOUT)
    assert (await client.get(f"/api/sessions/{sid}/steer")).json() == {
        "can_steer": True,
        "reason": "",
    }
    r = await client.post(f"/api/sessions/{sid}/steer", json={"text": STEER})
    assert r.status_code == 202, r.text

    events = await wait_for_events(client, sid, count("turn_end"), timeout=TIMEOUT)
    [end] = of_kind(events, "turn_end")
    # Marked where Codex took it into the turn, which is at once, while the command runs.
    [landed] = of_kind(events, "steer_landed")
    assert landed["text"] == STEER
    assert r.json()["seq"] < landed["seq"] < of_kind(events, "tool_result")[0]["seq"] < end["seq"]
    requests = [request_texts(e) for e in conversation_requests(fake_model)]
    with_steer = [texts for texts in requests if any(STEER in t for t in texts)]
    assert len(with_steer) == 1, requests
    # In the turn: the request that has the message also has the command's output.
    assert any("slept" in t for t in with_steer[0])
