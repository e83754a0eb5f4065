"""The real pi asking Angelia before its tools, through the gate extension.

pi runs every tool unasked; Angelia's pi backend loads ``app/brains/acp/agents/pi_gate.ts`` with
``pi -e``, which asks through ``ctx.ui.confirm`` (pi-acp: ``session/request_permission``
with yes / no) and blocks the call unless the answer is yes. Fixtures and helpers are
``tests/real/common.py``'s, which has the offline set-up.
"""

# The fixtures are imported by name, which pytest needs and pyflakes calls redefinitions.
# ruff: noqa: F811

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.fakes.fake_model_server import FakeModelServer
from tests.helpers import count, kinds, of_kind, send, wait_for_events
from tests.real.common import (  # noqa: F401 (fixtures, found by name)
    PI_DENIED,
    node22_bin,
    pi_acp_bin,
    pi_bin,
    pi_env,
    pi_profile,
    pi_session,
)
from tests.real.steps import TIMEOUT, decide, requests_with, the_pending_request, turn_of

pytestmark = pytest.mark.real_cli


async def test_bypass_permissions_runs_tools_without_a_card(
    client: httpx.AsyncClient,
    pi_session: str,
    project_dir: Path,
) -> None:
    sid = pi_session
    await send(client, sid, "say hi")
    await wait_for_events(client, sid, count("turn_end"), timeout=TIMEOUT)
    # Switched on the live session: the app answers the gate's questions by its mode.
    r = await client.post(
        f"/api/sessions/{sid}/mode", json={"mode": "bypassPermissions", "confirm": True}
    )
    assert r.status_code == 200, r.text
    await send(client, sid, "run touch")
    events = await wait_for_events(client, sid, count("turn_end", 2), timeout=TIMEOUT)

    assert (project_dir / "made_by_fake.txt").exists()
    decisions = of_kind(events, "permission_decision")
    assert [(d["decision"], d["source"]) for d in decisions] == [("allow_once", "mode")], decisions
    statuses = [e.get("status") for e in of_kind(events, "status")]
    assert "waiting" not in statuses, statuses
    results = of_kind(turn_of(events, 2), "tool_result")
    assert len(results) == 1 and results[0]["is_error"] is False, results
    # A mode the app cannot answer by itself is refused, not pretended.
    r = await client.post(f"/api/sessions/{sid}/mode", json={"mode": "acceptEdits"})
    assert r.status_code == 422 and "default, bypassPermissions" in r.text, r.text


async def test_reads_ask_only_outside_the_folder(
    client: httpx.AsyncClient,
    pi_session: str,
    project_dir: Path,
    tmp_path: Path,
    fake_model: FakeModelServer,
) -> None:
    sid = pi_session
    (project_dir / "inside.txt").write_text("inside text")
    outside = tmp_path / "outside.txt"
    outside.write_text("outside secret")
    fake_model.set_rules(
        {
            "chunk_delay": 0.02,
            "rules": [
                {"match": "read inside", "tool": "read", "input": {"path": "inside.txt"}},
                {"match": "read outside", "tool": "read", "input": {"path": str(outside)}},
            ],
        }
    )
    await send(client, sid, "read inside")
    events = await wait_for_events(client, sid, count("turn_end"), timeout=TIMEOUT)
    assert not of_kind(events, "permission_request"), kinds(events)
    (result,) = of_kind(events, "tool_result")
    assert "inside text" in result["output"], result

    await send(client, sid, "read outside")
    request = await the_pending_request(client, sid)
    assert request["tool"] == "Read" and request["input"]["file_path"] == str(outside), request
    await decide(client, request["id"], "deny")
    events = await wait_for_events(client, sid, count("turn_end", 2), timeout=TIMEOUT)
    result = of_kind(events, "tool_result")[-1]
    assert result["is_error"] is True and "outside secret" not in result["output"], result
    assert not requests_with(fake_model, "outside secret")


async def test_interrupt_while_the_gate_waits_runs_nothing(
    client: httpx.AsyncClient, pi_session: str, project_dir: Path
) -> None:
    sid = pi_session
    await send(client, sid, "run touch")
    request = await the_pending_request(client, sid)
    r = await client.post(f"/api/sessions/{sid}/interrupt")
    assert r.status_code == 202, r.text
    events = await wait_for_events(client, sid, count("turn_end"), timeout=TIMEOUT)

    assert of_kind(events, "turn_end")[0]["stop_reason"] == "cancelled"
    r = await client.get("/api/permissions", params={"session_id": sid})
    (row,) = r.json()
    assert row["id"] == request["id"] and row["decision"] == "cancelled", row
    await asyncio.sleep(1)  # room for a tool that would still run after the cancel
    assert not (project_dir / "made_by_fake.txt").exists()
    # The next turn asks afresh and works.
    await send(client, sid, "say hi")
    events = await wait_for_events(client, sid, count("turn_end", 2), timeout=TIMEOUT)
    assert of_kind(events, "turn_end")[-1]["stop_reason"] == "end_turn"
    assert of_kind(events, "assistant_message")[-1]["text"] == "hello from fake"


@pytest.mark.conformance("plan_mode", backend="pi", result="refused")
async def test_plan_mode_is_refused_for_a_profile_and_a_session(
    client: httpx.AsyncClient, pi_profile: dict[str, Any], pi_session: str
) -> None:
    # pi has no plan mode and the gate cannot keep one: the app says so instead of
    # running the agent with every tool.
    r = await client.patch(f"/api/profiles/{pi_profile['id']}", json={"permission_mode": "plan"})
    assert r.status_code == 422 and "plan" in r.text, r.text
    await send(client, pi_session, "say hi")
    await wait_for_events(client, pi_session, count("turn_end"), timeout=TIMEOUT)
    r = await client.post(f"/api/sessions/{pi_session}/mode", json={"mode": "plan"})
    assert r.status_code == 422 and "no 'plan' mode" in r.text, r.text
