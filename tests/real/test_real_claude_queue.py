"""Messages sent while a turn runs wait in the app, editable, and go one per turn.

Real Claude Code and the fake model: the first answer streams slowly, so the next
messages arrive mid-turn; one is edited and one dropped before they go.
"""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from tests.fakes.fake_model_server import FakeModelServer, request_texts
from tests.helpers import count, of_kind, send, wait_for_events

pytestmark = pytest.mark.real_cli


@pytest.fixture
def fake_rules() -> dict[str, Any]:
    slow = " ".join(["slowly"] * 40)
    return {"rules": [{"match": "take your time", "text": slow}], "chunk_delay": 0.05}


async def test_waiting_messages_can_be_edited_or_dropped_before_they_go(
    client: httpx.AsyncClient, claude_session: str, fake_model: FakeModelServer
) -> None:
    sid = claude_session
    await send(client, sid, "take your time")
    await wait_for_events(client, sid, count("text_delta"))

    r = await client.post(f"/api/sessions/{sid}/messages", json={"text": "second, draft"})
    assert r.status_code == 202 and r.json()["queued"] is True
    r = await client.post(f"/api/sessions/{sid}/messages", json={"text": "third"})
    assert r.json()["queued"] is True
    queue = (await client.get(f"/api/sessions/{sid}/queue")).json()
    assert [(q["text"], q["reason"]) for q in queue] == [
        ("second, draft", "turn"),
        ("third", "turn"),
    ]
    second, third = (q["seq"] for q in queue)

    r = await client.patch(f"/api/sessions/{sid}/queue/{second}", json={"text": "second, final"})
    assert r.status_code == 200, r.text
    r = await client.patch(f"/api/sessions/{sid}/queue/{second}", json={"text": "  "})
    assert r.status_code == 422
    r = await client.delete(f"/api/sessions/{sid}/queue/{third}")
    assert r.status_code == 204
    r = await client.delete(f"/api/sessions/{sid}/queue/{third}")
    assert r.status_code == 409 and "no longer waiting" in r.text

    events = await wait_for_events(client, sid, count("turn_end", 2), timeout=60)
    [sent] = of_kind(events, "queued_sent")
    assert (sent["queued_seq"], sent["text"]) == (second, "second, final")
    [dropped] = of_kind(events, "queued_dropped")
    assert (dropped["queued_seq"], dropped["text"]) == (third, "third")
    assert [e["text"] for e in of_kind(events, "queued_edited")] == ["second, final"]
    # The queued message went only after the first turn had ended.
    seqs = {e["seq"]: e["kind"] for e in events}
    first_end = min(s for s, k in seqs.items() if k == "turn_end")
    assert sent["seq"] > first_end

    texts = [t for e in fake_model.message_requests() for t in request_texts(e)]
    assert any("second, final" in t for t in texts)
    assert not any("second, draft" in t or t.strip() == "third" for t in texts)
    r = await client.patch(f"/api/sessions/{sid}/queue/{second}", json={"text": "late"})
    assert r.status_code == 409
    assert (await client.get(f"/api/sessions/{sid}/queue")).json() == []
