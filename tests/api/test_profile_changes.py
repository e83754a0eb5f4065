"""A profile edited while its session's CLI runs: the CLI takes the change before the
next message (restarted, the conversation resumed), with a note in the transcript."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx
from bs4 import BeautifulSoup

from tests.api.test_chat import fake_log, make_session
from tests.conftest import write_scenario
from tests.helpers import count, of_kind, send, wait_for_events


def starts(fake: dict[str, Any]) -> list[list[str]]:
    return [e["argv"] for e in fake_log(fake) if "argv" in e]


async def profile_of(client: httpx.AsyncClient, sid: str) -> str:
    return str((await client.get(f"/api/sessions/{sid}")).json()["profile_id"])


async def running_note(client: httpx.AsyncClient, profile_id: str) -> str | None:
    page = BeautifulSoup((await client.get(f"/profiles/{profile_id}/edit")).text, "html.parser")
    note = page.select_one("#running-note")
    return " ".join(note.get_text().split()) if note is not None else None


async def test_a_deny_added_mid_session_reaches_the_cli_before_the_next_message(
    client: httpx.AsyncClient, project_dir: Path, fake_claude: dict[str, Any]
) -> None:
    write_scenario(fake_claude["scenario"], [[{"text": "ok"}]] * 3)
    sid = await make_session(client, project_dir, fake_claude)
    profile_id = await profile_of(client, sid)
    assert await running_note(client, profile_id) is None
    await send(client, sid, "one")
    await wait_for_events(client, sid, count("turn_end"))
    backend_id = (await client.get(f"/api/sessions/{sid}")).json()["backend_session_id"]
    # The edit form says who the change reaches, and when.
    note = await running_note(client, profile_id)
    assert note is not None and note.startswith("1 session of this profile is running."), note

    # A change the CLI does not take at start restarts nothing.
    r = await client.patch(f"/api/profiles/{profile_id}", json={"name": "renamed"})
    assert r.status_code == 200, r.text
    await send(client, sid, "two")
    events = await wait_for_events(client, sid, count("turn_end", 2))
    assert len(starts(fake_claude)) == 1 and of_kind(events, "note") == []

    r = await client.patch(
        f"/api/profiles/{profile_id}", json={"disallowed_tools": ["Bash(rm:*)"]}
    )
    assert r.status_code == 200, r.text
    await send(client, sid, "three")
    events = await wait_for_events(client, sid, count("turn_end", 3))
    first, second = starts(fake_claude)
    assert "--disallowedTools" not in first
    assert second[second.index("--disallowedTools") + 1] == "Bash(rm:*)"
    assert f"--resume={backend_id}" in second
    (note,) = of_kind(events, "note")
    assert note["note"] == "profile_changed" and "restarts with the new settings" in note["text"]
    assert [e["text"] for e in of_kind(events, "assistant_message")] == ["ok"] * 3
    session = (await client.get(f"/api/sessions/{sid}")).json()
    assert session["status"] == "live" and session["backend_session_id"] == backend_id


async def test_messages_waiting_for_the_turn_survive_the_restart(
    client: httpx.AsyncClient, project_dir: Path, fake_claude: dict[str, Any]
) -> None:
    slow = [{"sleep": 1.0}, {"text": "slow"}]
    write_scenario(fake_claude["scenario"], [slow, [{"text": "a"}], [{"text": "b"}]])
    sid = await make_session(client, project_dir, fake_claude)
    await send(client, sid, "one")
    await wait_for_events(client, sid, count("status"))  # working
    for text in ("two", "three"):
        r = await client.post(f"/api/sessions/{sid}/messages", json={"text": text})
        assert r.status_code == 202 and r.json()["queued"], r.text
    profile_id = await profile_of(client, sid)
    env = {**fake_claude["env"], "EXTRA": "1"}
    r = await client.patch(f"/api/profiles/{profile_id}", json={"env": env})
    assert r.status_code == 200, r.text

    events = await wait_for_events(client, sid, count("turn_end", 3), timeout=30)
    # One restart, before "two"; "three" goes to the restarted CLI.
    assert len(starts(fake_claude)) == 2
    # The restarted fake begins its script again.
    assert [e["text"] for e in of_kind(events, "assistant_message")] == ["slow", "slow", "a"]
    texts = [e["text"] for e in of_kind(events, "user_message")]
    assert texts == ["one", "two", "three"]
    assert len(of_kind(events, "note")) == 1
