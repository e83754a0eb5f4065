"""Plan limits and scheduled continues through the API, with the fake claude reporting a
limit as Claude Code does (``rate_limit_event``): the figures stored and read back, the
continue stored, shown on the board, sent once when due (also after a restart, never
twice), cancellable, and bad input refused with a clear 4xx."""

from __future__ import annotations

import asyncio
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest
from sqlmodel import Session, select

from app.db.models import ScheduledContinue
from app.main import create_app
from app.settings import Settings
from tests.api.test_chat import make_profile
from tests.conftest import LiveServer, write_scenario
from tests.helpers import count, send, wait_for_events

FIVE_HOURS_S = 5 * 3600
# How far ahead a due time is asked for: it must still lie ahead when the request
# arrives, on a machine busy with other tests (1 s was not, once).
SOON_S = 4


def limit_event(status: str, reset: int, used: float = 1.0) -> dict[str, Any]:
    """A ``rate_limit_event`` as Claude Code 2.1.332 writes it."""
    week = reset + 3 * 86400
    return {
        "type": "rate_limit_event",
        "rate_limit_info": {
            "status": status,
            "resetsAt": reset,
            "rateLimitType": "five_hour",
            "isUsingOverage": False,
            "unifiedWindows": {
                "five_hour": {"utilization": used, "resetsAt": reset},
                "seven_day": {"utilization": 0.42, "resetsAt": week},
            },
        },
        "uuid": "u1",
        "session_id": "s1",
    }


def stopped_turn(reset: int) -> list[dict[str, Any]]:
    """A turn that ends on the 5-hour limit, as the real CLI ends it."""
    return [
        {"emit": limit_event("rejected", reset)},
        {"text": "You've hit your 5-hour limit"},
    ]


async def limited_session(
    client: httpx.AsyncClient, project_dir: Path, fake: dict[str, Any], reset: int
) -> str:
    write_scenario(fake["scenario"], [stopped_turn(reset), [{"text": "carried on"}]])
    pid = await make_profile(client, project_dir, fake)
    r = await client.post("/api/sessions", json={"profile_id": pid})
    sid: str = r.json()["id"]
    await send(client, sid, "do the work")
    await wait_for_events(client, sid, count("turn_end"))
    return sid


def iso(epoch: int) -> str:
    return datetime.fromtimestamp(epoch, UTC).isoformat()


def continues_sent(events: list[dict[str, Any]], text: str = "continue") -> int:
    return sum(e["kind"] == "user_message" and e.get("text") == text for e in events)


async def test_the_limit_is_stored_and_read_back(
    client: httpx.AsyncClient, project_dir: Path, fake_claude: dict[str, Any]
) -> None:
    reset = int(time.time()) + 3600
    sid = await limited_session(client, project_dir, fake_claude, reset)

    r = await client.get(f"/api/sessions/{sid}/limits")
    assert r.status_code == 200, r.text
    limits = r.json()["limits"]
    assert limits["limit"] == "five_hour" and limits["label"] == "5-hour"
    assert limits["status"] == "rejected" and limits["stopped"] is True
    assert datetime.fromisoformat(limits["resets_at"]) == datetime.fromtimestamp(reset, UTC)
    windows = [(w["label"], w["used_percent"]) for w in limits["windows"]]
    assert windows == [("5-hour", 100), ("weekly", 42)]
    assert r.json()["scheduled"] is None
    # The account's newest figures, for the usage page.
    newest = (await client.get("/api/limits")).json()
    assert newest["session_id"] == sid and newest["windows"] == limits["windows"]

    page = (await client.get(f"/sessions/{sid}")).text
    assert 'id="limit-continue"' in page and "Continue automatically at" in page
    assert "100% used" in page and "weekly limit" in page
    usage = (await client.get("/usage")).text
    assert 'id="usage-limits"' in usage and "42% used" in usage


async def test_odd_figures_are_shown_as_unknown_never_guessed(
    client: httpx.AsyncClient, project_dir: Path, fake_claude: dict[str, Any]
) -> None:
    odd = {
        "type": "rate_limit_event",
        "rate_limit_info": {
            "status": "rejected",
            "resetsAt": 1e300,
            "rateLimitType": "five_hour",
            "utilization": "most",
            "unifiedWindows": {
                "five_hour": {"utilization": 7, "resetsAt": -5},
                "seven_day": "soon",
                "": {"utilization": 0.5},
            },
        },
    }
    write_scenario(fake_claude["scenario"], [[{"emit": odd}, {"text": "stopped"}]])
    pid = await make_profile(client, project_dir, fake_claude)
    sid = (await client.post("/api/sessions", json={"profile_id": pid})).json()["id"]
    await send(client, sid, "go")
    await wait_for_events(client, sid, count("turn_end"))
    limits = (await client.get(f"/api/sessions/{sid}/limits")).json()["limits"]
    assert limits["resets_at"] is None and limits["stopped"] is True
    assert limits["windows"] == [
        {"limit": "five_hour", "label": "5-hour", "used_percent": None, "resets_at": None}
    ]
    # No reset known: no time to offer, and none taken for granted.
    page = (await client.get(f"/sessions/{sid}")).text
    assert "5-hour limit" in page and "limit-continue" not in page and "% used" not in page
    r = await client.post(f"/api/sessions/{sid}/resume-at", json={})
    assert r.status_code == 422 and "no limit reset time" in r.text


async def test_no_limit_reported_shows_nothing(
    client: httpx.AsyncClient, project_dir: Path, fake_claude: dict[str, Any]
) -> None:
    pid = await make_profile(client, project_dir, fake_claude)
    sid = (await client.post("/api/sessions", json={"profile_id": pid})).json()["id"]
    await send(client, sid, "hi")
    await wait_for_events(client, sid, count("turn_end"))
    assert (await client.get(f"/api/sessions/{sid}/limits")).json()["limits"] is None
    assert (await client.get("/api/limits")).json() is None
    page = (await client.get(f"/sessions/{sid}")).text
    assert "limit-meter" not in page and "limit-continue" not in page
    assert 'id="usage-limits"' not in (await client.get("/usage")).text


async def test_continue_at_the_reset_is_sent_once_and_shown_until_then(
    client: httpx.AsyncClient, project_dir: Path, fake_claude: dict[str, Any]
) -> None:
    # Far enough ahead that the page is still read before the continue goes out, with
    # the machine busy (3 s was not, once).
    reset = int(time.time()) + 8
    sid = await limited_session(client, project_dir, fake_claude, reset)

    r = await client.post(f"/api/sessions/{sid}/resume-at", json={})
    assert r.status_code == 201, r.text
    row = r.json()
    assert row["state"] == "pending" and row["message"] == "continue"
    assert datetime.fromisoformat(row["at"]) == datetime.fromtimestamp(reset, UTC)
    assert (await client.get(f"/api/sessions/{sid}/resume-at")).json()["id"] == row["id"]
    card = next(c for c in (await client.get("/api/board")).json() if c["id"] == sid)
    assert datetime.fromisoformat(card["scheduled_at"]) == datetime.fromtimestamp(reset, UTC)
    board_page = (await client.get("/board")).text
    assert "scheduled: continue at" in board_page
    page = (await client.get(f"/sessions/{sid}")).text
    assert 'id="limit-scheduled"' in page and 'id="limit-cancel"' in page

    events = await wait_for_events(client, sid, count("turn_end", 2))
    assert continues_sent(events) == 1
    # The transcript says nobody typed it just then; the user's own message stays plain.
    (auto,) = [e for e in events if e["kind"] == "user_message" and e.get("scheduled")]
    assert auto["text"] == "continue"
    page = (await client.get(f"/sessions/{sid}")).text
    assert page.count("sent automatically, as scheduled") == 1
    assert any(e["kind"] == "assistant_message" and e["text"] == "carried on" for e in events)
    done = (await client.get(f"/api/sessions/{sid}/resume-at")).json()
    assert done["state"] == "sent" and done["done_at"] is not None
    cards = (await client.get("/api/board")).json()
    assert all(c["id"] != sid or not c["scheduled_at"] for c in cards)


async def test_a_continue_due_during_a_turn_waits_in_the_queue_like_a_message(
    client: httpx.AsyncClient, project_dir: Path, fake_claude: dict[str, Any]
) -> None:
    # The first turn runs until the continue has come due and been queued.
    release = project_dir.parent / "release"
    busy = [{"until_file": str(release)}, {"text": "first done"}]
    write_scenario(fake_claude["scenario"], [busy, [{"text": "carried on"}]])
    pid = await make_profile(client, project_dir, fake_claude)
    sid = (await client.post("/api/sessions", json={"profile_id": pid})).json()["id"]
    await send(client, sid, "work for a while")
    await wait_for_events(client, sid, count("session_info"))  # the turn runs
    at = (datetime.now(UTC) + timedelta(seconds=SOON_S)).isoformat()
    r = await client.post(f"/api/sessions/{sid}/resume-at", json={"at": at})
    assert r.status_code == 201, r.text
    await wait_for_events(
        client,
        sid,
        lambda evs: any(e["kind"] == "user_message" and e.get("text") == "continue" for e in evs),
    )
    release.touch()
    events = await wait_for_events(client, sid, count("turn_end", 2), timeout=60)
    (held,) = [e for e in events if e["kind"] == "user_message" and e.get("text") == "continue"]
    assert held["queued"] is True and held["queue_reason"] == "turn"
    first_end = next(e["seq"] for e in events if e["kind"] == "turn_end")
    went = next(e for e in events if e["kind"] == "queued_sent")
    assert went["queued_seq"] == held["seq"] and went["seq"] > first_end


async def test_a_cancelled_continue_is_never_sent(
    client: httpx.AsyncClient, project_dir: Path, fake_claude: dict[str, Any]
) -> None:
    reset = int(time.time()) + 3600
    first = await limited_session(client, project_dir, fake_claude, reset)
    second = await limited_session(client, project_dir, fake_claude, reset)
    soon = datetime.now(UTC) + timedelta(seconds=SOON_S)
    for sid, extra in ((first, 0), (second, 1)):
        at = (soon + timedelta(seconds=extra)).isoformat()
        r = await client.post(f"/api/sessions/{sid}/resume-at", json={"at": at})
        assert r.status_code == 201, r.text
    r = await client.delete(f"/api/sessions/{first}/resume-at")
    assert r.status_code == 200 and r.json()["state"] == "cancelled"
    # The later one goes; the cancelled earlier one was due first and never went.
    await wait_for_events(client, second, count("turn_end", 2))
    events = (await client.get(f"/api/sessions/{first}/events")).json()["events"]
    assert continues_sent(events) == 0
    assert (await client.get(f"/api/sessions/{first}/resume-at")).json()["state"] == "cancelled"
    r = await client.delete(f"/api/sessions/{first}/resume-at")
    assert r.status_code == 404 and "No continue is scheduled" in r.json()["detail"]


async def test_the_forms_work_without_scripts(
    client: httpx.AsyncClient, project_dir: Path, fake_claude: dict[str, Any]
) -> None:
    sid = await limited_session(client, project_dir, fake_claude, int(time.time()) + 3600)
    form = f"/sessions/{sid}/resume-at"
    r = await client.post(form, data={"message": "go on"})
    assert r.status_code == 303 and r.headers["location"] == f"/sessions/{sid}#limits"
    row = (await client.get(f"/api/sessions/{sid}/resume-at")).json()
    assert (row["state"], row["message"]) == ("pending", "go on")
    r = await client.post(f"{form}/cancel")
    assert r.status_code == 303
    assert (await client.get(f"/api/sessions/{sid}/resume-at")).json()["state"] == "cancelled"
    # Refused: the error page says why; with htmx, the panel comes back saying it.
    r = await client.post(form, data={"message": " "})
    assert r.status_code == 422 and "message: is empty" in r.text
    r = await client.post(form, data={"message": " "}, headers={"HX-Request": "true"})
    assert r.status_code == 200 and 'id="limit-error"' in r.text and "is empty" in r.text
    r = await client.post(f"{form}/cancel")
    assert r.status_code == 404 and "No continue is scheduled" in r.text


async def test_a_new_time_replaces_the_pending_one(
    server: LiveServer, client: httpx.AsyncClient, project_dir: Path, fake_claude: dict[str, Any]
) -> None:
    sid = await limited_session(client, project_dir, fake_claude, int(time.time()) + 3600)
    first = (await client.post(f"/api/sessions/{sid}/resume-at", json={})).json()
    later = (datetime.now(UTC) + timedelta(hours=2)).isoformat()
    body = {"at": later, "message": "carry on with the tests"}
    second = (await client.post(f"/api/sessions/{sid}/resume-at", json=body)).json()
    assert second["id"] != first["id"] and second["message"] == "carry on with the tests"
    assert (await client.get(f"/api/sessions/{sid}/resume-at")).json()["id"] == second["id"]
    pending = [c for c in (await client.get("/api/board")).json() if c["id"] == sid]
    assert datetime.fromisoformat(pending[0]["scheduled_at"]) == datetime.fromisoformat(later)
    # However often a client schedules and cancels, the session keeps one row.
    for _ in range(20):
        assert (await client.post(f"/api/sessions/{sid}/resume-at", json=body)).status_code == 201
        assert (await client.delete(f"/api/sessions/{sid}/resume-at")).status_code == 200
    with Session(server.app.state.angelia.engine) as db:
        rows = db.exec(select(ScheduledContinue)).all()
    assert [(r.session_id, r.state) for r in rows] == [(sid, "cancelled")]


async def test_a_due_continue_goes_after_a_restart_once(
    settings: Settings, project_dir: Path, fake_claude: dict[str, Any]
) -> None:
    first = LiveServer(create_app(settings))
    await first.start()
    try:
        async with first.client() as client:
            reset = int(time.time()) + 3600
            sid = await limited_session(client, project_dir, fake_claude, reset)
            at = (datetime.now(UTC) + timedelta(seconds=SOON_S)).isoformat()
            r = await client.post(f"/api/sessions/{sid}/resume-at", json={"at": at})
            assert r.status_code == 201, r.text
    finally:
        # Stops with the continue pending: stored, and the stop does not wait for it.
        await first.stop()
    # Due while the app was down: the next start sends it, the one after does not again.
    while datetime.now(UTC) <= datetime.fromisoformat(at):
        time.sleep(0.1)
    for _ in range(2):
        again = LiveServer(create_app(settings))
        await again.start()
        try:
            async with again.client() as client:
                events = await wait_for_events(client, sid, count("turn_end", 2))
                row = (await client.get(f"/api/sessions/{sid}/resume-at")).json()
        finally:
            await again.stop()
        assert continues_sent(events) == 1 and row["state"] == "sent"


async def test_nothing_is_sent_once_the_server_starts_to_stop(
    settings: Settings, project_dir: Path, fake_claude: dict[str, Any]
) -> None:
    server = LiveServer(create_app(settings))
    await server.start()
    try:
        async with server.client() as client:
            sid = await limited_session(client, project_dir, fake_claude, int(time.time()) + 3600)
            at = datetime.now(UTC) + timedelta(seconds=SOON_S)
            r = await client.post(f"/api/sessions/{sid}/resume-at", json={"at": at.isoformat()})
            assert r.status_code == 201, r.text
            # What a signal does first; the agents are being shut down from here on.
            server.app.state.angelia.stopper.begin()
            while datetime.now(UTC) <= at + timedelta(seconds=1):
                await asyncio.sleep(0.1)
            row = (await client.get(f"/api/sessions/{sid}/resume-at")).json()
            events = (await client.get(f"/api/sessions/{sid}/events")).json()["events"]
    finally:
        await server.stop()
    assert row["state"] == "pending" and continues_sent(events) == 0


@pytest.mark.parametrize(
    ("body", "field", "says"),
    [
        ({}, "at", "no limit reset time is known"),
        ({"at": "2001-01-01T00:00:00Z"}, "at", "is in the past"),
        ({"at": "2999-01-01T00:00:00Z"}, "at", "days ahead"),
        ({"at": "tomorrow"}, "at", "datetime"),
        ({"at": "SOON", "message": "   "}, "message", "is empty"),
        ({"message": "x" * 10_001}, "message", "at most 10000"),
        ({"when": "now"}, "when", "Extra inputs"),
    ],
)
async def test_bad_input_is_refused_clearly(
    client: httpx.AsyncClient,
    project_dir: Path,
    fake_claude: dict[str, Any],
    body: dict[str, Any],
    field: str,
    says: str,
) -> None:
    pid = await make_profile(client, project_dir, fake_claude)
    sid = (await client.post("/api/sessions", json={"profile_id": pid})).json()["id"]
    if body.get("at") == "SOON":
        body = dict(body, at=(datetime.now(UTC) + timedelta(hours=1)).isoformat())
    r = await client.post(f"/api/sessions/{sid}/resume-at", json=body)
    assert r.status_code == 422, r.text
    (problem,) = r.json()["detail"]
    assert problem["field"] == field and says.lower() in problem["message"].lower(), problem
    assert (await client.get(f"/api/sessions/{sid}/resume-at")).json() is None


async def test_unknown_sessions_are_404(client: httpx.AsyncClient) -> None:
    for method, path in (
        ("POST", "/api/sessions/nope/resume-at"),
        ("GET", "/api/sessions/nope/resume-at"),
        ("DELETE", "/api/sessions/nope/resume-at"),
        ("GET", "/api/sessions/nope/limits"),
    ):
        body = {"at": (datetime.now(UTC) + timedelta(hours=1)).isoformat()}
        r = await client.request(method, path, json=body if method == "POST" else None)
        assert r.status_code == 404, (method, path, r.text)
        assert r.json()["detail"] == "Session nope not found", r.text
