"""Reviewing past sessions: search, long transcripts by cursor, the sessions list, delete."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import httpx
from sqlalchemy import insert

from app.db.models import ChatSession, Event
from app.web.chat.pages import EARLIER_EVENTS, PAGE_EVENTS
from tests.conftest import LiveServer


async def new_session(client: httpx.AsyncClient, project_dir: Path, title: str = "") -> str:
    pid = (
        await client.post(
            "/api/profiles", json={"name": "p", "backend": "claude", "cwd": str(project_dir)}
        )
    ).json()["id"]
    sid: str = (
        await client.post("/api/sessions", json={"profile_id": pid, "title": title or None})
    ).json()["id"]
    return sid


async def test_search_finds_user_assistant_and_tool_text_with_escaped_snippets(
    server: LiveServer, client: httpx.AsyncClient, project_dir: Path
) -> None:
    events = server.app.state.angelia.events
    sid = await new_session(client, project_dir, "search me")
    events.append(
        sid, "user_message", {"text": "please fix the flaky <script>alert(1)</script> test"}
    )
    events.append(
        sid, "assistant_message", {"text": "The clock drifts in test_login", "message_id": "m"}
    )
    events.append(
        sid,
        "tool_call",
        {
            "tool_call_id": "t",
            "tool": "Bash",
            "title": "pytest -k zebra",
            "input": {"command": "pytest -k zebra"},
        },
    )
    events.append(
        sid,
        "tool_result",
        {"tool_call_id": "t", "output": "1 failed: quokka_error", "is_error": True},
    )
    events.append(sid, "text_delta", {"text": "unindexedword", "message_id": "m"})
    await events.flush()

    async def hits(q: str) -> list[dict[str, object]]:
        r = await client.get("/api/search", params={"q": q})
        assert r.status_code == 200
        result: list[dict[str, object]] = r.json()
        return result

    assert [(h["kind"], h["seq"]) for h in await hits("flaky")] == [("user_message", 1)]
    assert [h["kind"] for h in await hits("drifts")] == ["assistant_message"]
    assert [h["kind"] for h in await hits("zebra")] == ["tool_call"]
    assert [h["kind"] for h in await hits("quokka")] == ["tool_result"]
    assert await hits("unindexedword") == []
    hit = (await hits("script"))[0]
    assert "<script>" not in str(hit["snippet_html"])
    assert "&lt;<mark>script</mark>&gt;" in str(hit["snippet_html"])
    assert hit["url"] == f"/sessions/{sid}#e-1"
    # FTS syntax in the box is just text, never a 500.
    for q in ('"', "AND OR NOT", "title:foo", "(((", "NEAR(a b)", "*"):
        r = await client.get("/api/search", params={"q": q})
        assert r.status_code == 200, q
    # Deleting the session removes its search rows.
    assert (await client.delete(f"/api/sessions/{sid}")).status_code == 204
    assert await hits("flaky") == []
    assert (await client.get(f"/api/sessions/{sid}")).status_code == 404


async def test_long_transcript_opens_at_the_tail_and_pages_backwards(
    server: LiveServer, client: httpx.AsyncClient, project_dir: Path
) -> None:
    sid = await new_session(client, project_dir)
    engine = server.app.state.angelia.engine
    now = datetime.now(UTC)
    with engine.begin() as conn:
        conn.execute(
            insert(Event.__table__),  # type: ignore[attr-defined]
            [
                {
                    "session_id": sid,
                    "seq": i,
                    "kind": "user_message",
                    "payload": {"text": f"line {i}"},
                    "created_at": now,
                }
                for i in range(1, 10_001)
            ],
        )
    r = await client.get(f"/api/sessions/{sid}/events", params={"limit": 100, "tail": True})
    page = r.json()["events"]
    assert [e["seq"] for e in page] == list(range(9901, 10_001))
    r = await client.get(
        f"/api/sessions/{sid}/events", params={"limit": 100, "tail": True, "before": 9901}
    )
    assert [e["seq"] for e in r.json()["events"]] == list(range(9801, 9901))
    page_html = await client.get(f"/sessions/{sid}")
    assert page_html.status_code == 200
    # Only the tail is rendered: the page stays small whatever the session's length.
    assert "line 10000<" in page_html.text and "line 5000<" not in page_html.text
    top = 10_001 - PAGE_EVENTS
    assert f"/sessions/{sid}/earlier?before={top}" in page_html.text
    more = await client.get(f"/sessions/{sid}/earlier", params={"before": top})
    first = top - EARLIER_EVENTS
    assert f"line {top - 1}<" in more.text and f"line {first}<" in more.text
    assert f"line {first - 1}<" not in more.text
    assert f"/sessions/{sid}/earlier?before={first}" in more.text
    assert len(page_html.content) < 400_000


async def test_ten_thousand_sessions_paginate_by_cursor(
    server: LiveServer, client: httpx.AsyncClient, project_dir: Path
) -> None:
    sid = await new_session(client, project_dir)
    pid = (await client.get(f"/api/sessions/{sid}")).json()["profile_id"]
    engine = server.app.state.angelia.engine
    base = datetime(2026, 1, 1, tzinfo=UTC)
    rows = [
        {
            "id": f"s{i:05d}",
            "profile_id": pid,
            "backend": "claude",
            "title": f"t{i}",
            "status": "ended" if i % 2 else "idle",
            "cost_usd": 0.0,
            "input_tokens": 0,
            "output_tokens": 0,
            "turns": 0,
            "created_at": base,
            # Ties on updated_at must not lose or repeat rows across pages.
            "updated_at": base + timedelta(minutes=i // 3),
        }
        for i in range(10_000)
    ]
    with engine.begin() as conn:
        conn.execute(insert(ChatSession.__table__), rows)  # type: ignore[attr-defined]
    seen: list[str] = []
    cursor = None
    pages = 0
    while True:
        params: dict[str, str | int] = {"limit": 1000}
        if cursor:
            params["cursor"] = cursor
        r = await client.get("/api/sessions", params=params)
        assert r.status_code == 200
        seen += [s["id"] for s in r.json()]
        pages += 1
        cursor = r.headers.get("x-next-cursor")
        if not cursor:
            break
    assert len(seen) == 10_001 and len(set(seen)) == 10_001 and pages == 11
    assert seen[0] == sid  # newest first
    r = await client.get("/api/sessions", params={"status": "ended", "limit": 1000})
    assert len(r.json()) == 1000 and all(s["status"] == "ended" for s in r.json())
    r = await client.get("/api/sessions", params={"cursor": "garbage!"})
    assert r.status_code == 422


async def test_rename(client: httpx.AsyncClient, project_dir: Path) -> None:
    sid = await new_session(client, project_dir, "old")
    r = await client.patch(f"/api/sessions/{sid}", json={"title": "new name"})
    assert r.status_code == 200 and r.json()["title"] == "new name"
    assert (await client.patch(f"/api/sessions/{sid}", json={"title": ""})).status_code == 422


async def test_fork_starts_the_cli_with_fork_session(
    client: httpx.AsyncClient, project_dir: Path, fake_claude: dict[str, object]
) -> None:
    from tests.api.test_chat import fake_log, make_session
    from tests.conftest import write_scenario
    from tests.helpers import count, send, wait_for_events

    write_scenario(fake_claude["scenario"], [[{"text": "original"}]])  # type: ignore[arg-type]
    sid = await make_session(client, project_dir, fake_claude)  # type: ignore[arg-type]
    await send(client, sid, "hello")
    await wait_for_events(client, sid, count("turn_end"))
    old_backend = (await client.get(f"/api/sessions/{sid}")).json()["backend_session_id"]
    r = await client.post(f"/api/sessions/{sid}/fork")
    assert r.status_code == 201
    fork = r.json()
    assert fork["forked_from"] == old_backend and fork["backend_session_id"] is None
    copied = (await client.get(f"/api/sessions/{fork['id']}/events")).json()["events"]
    assert [e["text"] for e in copied if e["kind"] == "assistant_message"] == ["original"]
    write_scenario(fake_claude["scenario"], [[{"text": "forked"}]])  # type: ignore[arg-type]
    await send(client, fork["id"], "go on")
    await wait_for_events(client, fork["id"], count("turn_end", 2))
    argv = [e["argv"] for e in fake_log(fake_claude) if "argv" in e][-1]  # type: ignore[arg-type]
    assert f"--resume={old_backend}" in argv and "--fork-session" in argv
    new_backend = (await client.get(f"/api/sessions/{fork['id']}")).json()["backend_session_id"]
    assert new_backend and new_backend != old_backend


async def test_unresumable_session_offers_a_continuation(
    server: LiveServer,
    client: httpx.AsyncClient,
    project_dir: Path,
    fake_claude: dict[str, object],
) -> None:
    from tests.api.test_chat import make_session
    from tests.conftest import write_scenario
    from tests.helpers import count, send, wait_for_events

    scenario = fake_claude["scenario"]
    write_scenario(scenario, [[{"text": "one"}]])  # type: ignore[arg-type]
    sid = await make_session(client, project_dir, fake_claude)  # type: ignore[arg-type]
    await send(client, sid, "hello")
    await wait_for_events(client, sid, count("turn_end"))
    await server.app.state.angelia.manager.stop_brain(sid)
    # The CLI lost the transcript: the fake fails --resume the way the real CLI does.
    write_scenario(scenario, [], unknown_resume=True)  # type: ignore[arg-type]
    r = await client.post(f"/api/sessions/{sid}/messages", json={"text": "again"})
    assert r.status_code >= 400
    events = (await client.get(f"/api/sessions/{sid}/events")).json()["events"]
    error = [e for e in events if e["kind"] == "error"][-1]
    assert error["resume_failed"] is True
    assert "No conversation found" in error["message"] + error["detail"]
    assert error["continue_url"] == f"/sessions/{sid}/continue"
    r = await client.post(f"/api/sessions/{sid}/continue")
    assert r.status_code == 201
    new = r.json()
    assert new["continued_from"] == sid and new["backend_session_id"] is None
    note = (await client.get(f"/api/sessions/{new['id']}/events")).json()["events"][0]
    assert note["kind"] == "note" and note["link"] == f"/sessions/{sid}"
    write_scenario(scenario, [[{"text": "fresh"}]])  # type: ignore[arg-type]
    await send(client, new["id"], "start over")
    await wait_for_events(client, new["id"], count("turn_end"))


async def test_missing_folder_is_explained(
    client: httpx.AsyncClient, project_dir: Path, fake_claude: dict[str, object], tmp_path: Path
) -> None:
    from tests.api.test_chat import make_session

    gone = tmp_path / "gone"
    gone.mkdir()
    sid = await make_session(client, gone, fake_claude)  # type: ignore[arg-type]
    gone.rmdir()
    r = await client.post(f"/api/sessions/{sid}/messages", json={"text": "hi"})
    assert r.status_code >= 400 and "no longer exists" in r.json()["detail"]
