"""Permission modes in the real-CLI tests: bypass switched on mid-session, and plan mode
pressed to allow every card it lets through."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import httpx

from app.services.permissions.readonly import plan_mode_denial
from tests.helpers import Event, of_kind, send
from tests.real.steps import TIMEOUT, decide, permission_rows, take_turn


async def bypass_runs_a_command_unasked(
    client: httpx.AsyncClient, session_id: str, project_dir: Path, turn: int
) -> list[dict[str, Any]]:
    """Switch to bypassPermissions mid-session and run ``touch bypassed.txt`` as turn
    ``turn``: the mode is the app's to keep, so the agent may ask but the app allows."""
    r = await client.post(
        f"/api/sessions/{session_id}/mode", json={"mode": "bypassPermissions", "confirm": True}
    )
    assert r.status_code == 200, r.text
    events = await take_turn(client, session_id, "BASH: touch bypassed.txt", turn)
    assert (project_dir / "bypassed.txt").exists()
    decisions = of_kind(events, "permission_decision")
    assert [(d["decision"], d["source"]) for d in decisions] == [("allow_once", "mode")]
    return events


def folder_state(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in folder.rglob("*") if p.is_file()}


async def allow_every_card_until_the_turn_ends(
    client: httpx.AsyncClient, sid: str, turn: int
) -> tuple[list[Event], list[str]]:
    """Press Allow once on every card that waits, until turn ``turn`` has ended.

    Returns the events and the ids of the cards that were there to allow.
    """
    allowed: list[str] = []
    loop = asyncio.get_running_loop()
    deadline = loop.time() + TIMEOUT
    while loop.time() < deadline:
        r = await client.get("/api/permissions", params={"session_id": sid, "status": "pending"})
        for row in r.json():
            await decide(client, row["id"], "allow_once")
            allowed.append(row["id"])
        events = (await client.get(f"/api/sessions/{sid}/events")).json()["events"]
        if len(of_kind(events, "turn_end")) >= turn:
            return events, allowed
        await asyncio.sleep(0.1)
    raise AssertionError(f"turn {turn} did not end; allowed {allowed}")


async def allow_every_card_of_each(
    client: httpx.AsyncClient, sid: str, messages: list[str]
) -> tuple[list[Event], list[str]]:
    """Send each message as a turn of its own, allowing every card it raises: the events
    and the ids of every card there was to allow."""
    allowed: list[str] = []
    events: list[Event] = []
    for turn, text in enumerate(messages, start=1):
        await send(client, sid, text)
        events, cards = await allow_every_card_until_the_turn_ends(client, sid, turn)
        allowed += cards
    return events, allowed


async def assert_plan_mode_refused(
    client: httpx.AsyncClient, sid: str, events: list[Event], commands: list[str]
) -> None:
    """The app's plan mode refused each of ``commands``, the ones asked about, with its
    reason; no other question was asked."""
    decisions = of_kind(events, "permission_decision")
    refused = [(d["tool"], d["decision"], d["source"]) for d in decisions]
    assert refused == [("Bash", "deny", "mode")] * len(commands), refused
    assert {d["message"] for d in decisions} == {plan_mode_denial("Bash")}
    rows = await permission_rows(client, sid)
    assert sorted(r["input"]["command"] for r in rows) == sorted(commands)
