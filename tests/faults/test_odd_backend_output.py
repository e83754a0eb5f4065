"""A backend that writes valid but odd JSON must not wedge a session.

Each case is a line a buggy or hostile CLI could print: numbers JSON allows but Python
cannot convert (``1e400``, a 400-digit integer), numbers SQLite cannot store, fields of the
wrong type, and a tool input nested hundreds of levels deep. After it, the turn must end,
the session must be readable through the API and its page, and the next message must work.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.conftest import LiveServer, write_scenario
from tests.helpers import count, of_kind, send, wait_for_events
from tests.security._support import make_session

# A turn of the fake takes well under a second; a wedged one is not waited for long.
TURN_S = 3.0
HOSTILE_FAKE = Path(__file__).resolve().parents[1] / "security" / "hostile_claude.py"
RESULT = (
    '{"type":"result","subtype":"success","is_error":false,"duration_ms":%s,'
    '"session_id":"SESSION_ID","total_cost_usd":%s,"usage":%s,"result":"ok"}'
)


def raw(duration: str = "5", cost: str = "0.01", usage: str = '{"input_tokens":1}') -> str:
    return RESULT % (duration, cost, usage)


def deep(depth: int) -> dict[str, Any]:
    root: dict[str, Any] = {}
    node = root
    for _ in range(depth):
        node["a"] = {}
        node = node["a"]
    return root


CASES: list[Any] = [
    pytest.param(
        {"raw_result": raw(usage='{"input_tokens":"many","output_tokens":null}')},
        id="usage-strings",
    ),
    pytest.param({"raw_result": raw(cost="-3")}, id="negative-cost"),
    pytest.param(
        {"raw_result": raw(duration="1e400")},
        id="duration-1e400",
    ),
    pytest.param(
        {"raw_result": raw(cost="1" + "0" * 400)},
        id="cost-400-digits",
    ),
    pytest.param(
        {"raw_result": raw(cost="NaN")},
        id="cost-NaN",
    ),
    pytest.param(
        {"raw_result": raw(usage='{"input_tokens":100000000000000000000000}')},
        id="usage-beyond-int64",
    ),
]


async def _session(client: httpx.AsyncClient, project_dir: Path, fake: dict[str, Any]) -> str:
    return await make_session(
        client, project_dir, {**fake, "command": [sys.executable, str(HOSTILE_FAKE)]}
    )


async def _still_usable(
    server: LiveServer, client: httpx.AsyncClient, sid: str, turns: int
) -> None:
    session = await client.get(f"/api/sessions/{sid}")
    assert session.status_code == 200, session.text
    assert session.json()["status"] == "live", session.json()
    assert (await client.get(f"/api/sessions/{sid}/events")).status_code == 200
    assert (await client.get(f"/sessions/{sid}")).status_code == 200
    assert (await client.get("/api/sessions")).status_code == 200
    assert (await client.get("/")).status_code == 200
    await send(client, sid, "and again")
    await wait_for_events(client, sid, count("turn_end", turns + 1), timeout=TURN_S)


@pytest.mark.parametrize("scenario", CASES)
async def test_odd_result_numbers(
    server: LiveServer,
    client: httpx.AsyncClient,
    project_dir: Path,
    fake_claude: dict[str, Any],
    scenario: dict[str, Any],
) -> None:
    write_scenario(fake_claude["scenario"], [[{"text": "hi"}], [{"text": "hi"}]], **scenario)
    sid = await _session(client, project_dir, fake_claude)
    await send(client, sid, "go")
    await wait_for_events(client, sid, count("turn_end"), timeout=TURN_S)
    await _still_usable(server, client, sid, 1)


async def test_deeply_nested_tool_input_is_shown(
    server: LiveServer, client: httpx.AsyncClient, project_dir: Path, fake_claude: dict[str, Any]
) -> None:
    step = {"tool": "Bash", "input": {"command": "ls", "deep": deep(400)}, "output": "ok"}
    write_scenario(fake_claude["scenario"], [[step, {"text": "done"}], [{"text": "hi"}]])
    sid = await _session(client, project_dir, fake_claude)
    await send(client, sid, "go")
    events = await wait_for_events(client, sid, count("turn_end"), timeout=TURN_S)
    assert len(of_kind(events, "tool_call")) == 1, "a tool ran but the transcript lacks it"
    await _still_usable(server, client, sid, 1)


async def test_deeply_nested_permission_request_can_be_answered(
    server: LiveServer, client: httpx.AsyncClient, project_dir: Path, fake_claude: dict[str, Any]
) -> None:
    step = {"tool": "Bash", "input": {"command": "ls", "deep": deep(400)}, "permission": True}
    write_scenario(fake_claude["scenario"], [[step, {"text": "done"}], [{"text": "hi"}]])
    sid = await _session(client, project_dir, fake_claude)
    await send(client, sid, "go")
    events = await wait_for_events(client, sid, count("permission_request"), timeout=TURN_S)
    pid = of_kind(events, "permission_request")[0]["permission_id"]
    r = await client.post(f"/api/permissions/{pid}/decision", json={"decision": "deny"})
    assert r.status_code == 200
    await wait_for_events(client, sid, count("turn_end"), timeout=TURN_S)
