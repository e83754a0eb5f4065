"""The plan-limit meter and auto-continue with the real Claude Code CLI.

Claude Code reads the API's ``anthropic-ratelimit-unified-*`` headers only behind a
claude.ai login or a gateway; offline, the fake model server poses as a gateway (an
unsigned token whose audience is ``claude-gateway``). It answers a 429 with the headers of
a spent 5-hour limit that resets a little later: the turn stops, the CLI reports the limit
(``rate_limit_event``), the session is told to continue at the reset, the app is stopped
and started again (a real ``angelia serve``), and at the reset the continue goes — once —
and the turn completes.
"""

from __future__ import annotations

import base64
import json
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from tests.fakes.fake_model_server import FakeModelServer, request_texts
from tests.faults._support import ServerProcess
from tests.helpers import count, send, wait_for_events
from tests.real.steps import new_claude_session

pytestmark = pytest.mark.real_cli

# Far enough ahead for a turn and a restart of the app on a busy machine.
RESET_IN_S = 30
FIVE_HOURS_S = 5 * 3600
LIMITED = "hit the limit"


def gateway_token() -> str:
    """An unsigned JWT for the gateway audience: what makes the CLI read the limit headers."""

    def part(value: dict[str, Any]) -> str:
        return base64.urlsafe_b64encode(json.dumps(value).encode()).rstrip(b"=").decode()

    claims = {"aud": "claude-gateway", "sub": "angelia-test", "exp": int(time.time()) + 3600}
    return f"{part({'alg': 'none', 'typ': 'JWT'})}.{part(claims)}."


def limit_headers(status: str, reset: int, used: float) -> dict[str, str]:
    week = reset + 3 * 86400
    return {
        "anthropic-ratelimit-unified-status": status,
        "anthropic-ratelimit-unified-reset": str(reset),
        "anthropic-ratelimit-unified-representative-claim": "five_hour",
        "anthropic-ratelimit-unified-5h-utilization": str(used),
        "anthropic-ratelimit-unified-5h-reset": str(reset),
        "anthropic-ratelimit-unified-7d-utilization": "0.42",
        "anthropic-ratelimit-unified-7d-reset": str(week),
    }


async def test_a_turn_stopped_by_the_limit_continues_at_the_reset_after_a_restart(
    tmp_path: Path,
    project_dir: Path,
    claude_bin: Path,
    claude_env: dict[str, str],
    fake_model: FakeModelServer,
) -> None:
    reset = int(time.time()) + RESET_IN_S
    spent = {**limit_headers("rejected", reset, 1.0), "retry-after": str(RESET_IN_S)}
    fake_model.set_rules(
        {
            "rules": [{"match": LIMITED, "status": 429, "error": "limit", "headers": spent}],
            "headers": limit_headers("allowed", reset, 0.9),
        }
    )
    env = {k: v for k, v in claude_env.items() if k != "ANTHROPIC_API_KEY"}
    env["ANTHROPIC_AUTH_TOKEN"] = gateway_token()
    first = ServerProcess(tmp_path / "served", tmp_path).start()
    try:
        async with first.client() as client:
            sid = await new_claude_session(client, project_dir, claude_bin, env)
            await send(client, sid, LIMITED)
            events = await wait_for_events(client, sid, count("turn_end"), timeout=60)
            (limit,) = [e for e in events if e["kind"] == "rate_limit"]
            assert (limit["limit"], limit["status"]) == ("five_hour", "rejected")
            assert limit["resets_at"] == datetime.fromtimestamp(reset, UTC).isoformat()
            (end,) = [e for e in events if e["kind"] == "turn_end"]
            assert end["is_error"] and "5-hour limit" in end["result"], end
            meter = (await client.get(f"/api/sessions/{sid}/limits")).json()["limits"]
            assert meter["stopped"] and [w["used_percent"] for w in meter["windows"]] == [100, 42]

            r = await client.post(f"/api/sessions/{sid}/resume-at", json={})
            assert r.status_code == 201, r.text
            assert datetime.fromisoformat(r.json()["at"]).timestamp() == reset
    finally:
        first.stop()
    # The API takes requests again once the limit resets.
    fake_model.set_rules({"headers": limit_headers("allowed", reset + FIVE_HOURS_S, 0.05)})
    asked_before = len(fake_model.message_requests())

    second = ServerProcess(tmp_path / "served", tmp_path).start()
    try:
        async with second.client() as client:
            waiting = (await client.get(f"/api/sessions/{sid}/resume-at")).json()
            # On a loaded machine the reset can pass while the server restarts; the continue
            # then goes at once (that it never went before the reset is checked below).
            state = waiting["state"]
            assert state == "pending" or (state == "sent" and time.time() >= reset), waiting
            events = await wait_for_events(
                client, sid, count("turn_end", 2), timeout=RESET_IN_S + 60
            )
            sent = [e for e in events if e["kind"] == "user_message" and e["text"] == "continue"]
            assert len(sent) == 1
            final = [e for e in events if e["kind"] == "turn_end"][-1]
            assert not final["is_error"] and final["result"] == "hello from fake", final
            done = (await client.get(f"/api/sessions/{sid}/resume-at")).json()
            assert done["state"] == "sent"
            meter = (await client.get(f"/api/sessions/{sid}/limits")).json()["limits"]
            assert meter["status"] == "allowed" and not meter["stopped"]
            assert [w["used_percent"] for w in meter["windows"]] == [5, 42]
    finally:
        second.stop()
    assert "Traceback" not in first.log() + second.log(), first.log() + second.log()
    # The continue reached the model once, and not before the reset.
    later = fake_model.message_requests()[asked_before:]
    continued = [e for e in later if any("continue" in t for t in request_texts(e))]
    assert continued and all(e["ts"] >= reset for e in continued)
