"""The history pages over HTTP: the sessions list, search, rename/delete, imports."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, time, timedelta
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import httpx
import pytest
from bs4 import BeautifulSoup
from sqlalchemy import event, insert
from sqlalchemy.engine import Engine

from app.db.models import ChatSession, Event, PermissionRequest
from app.services.store import store
from app.settings import Settings
from app.web.chat.pages import PAGE_EVENTS
from tests.conftest import TOKEN, LiveServer
from tests.web.history.test_pages_permissions import soup_of, texts
from tests.web.test_render import assert_no_active_markup

FIXTURES = Path(__file__).parents[2] / "fixtures" / "claude_projects"
HOSTILE_SCRIPT = "<script>alert('boom')</script>"
HOSTILE_IMG = '<img src=x onerror="alert(2)">'


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    """The shared settings, with Claude Code's projects folder set to the fixtures."""
    return Settings(
        data_dir=tmp_path / "data",
        token=TOKEN,
        idle_check_interval_s=3600,
        close_timeout_s=2.0,
        claude_projects_dir=FIXTURES,
    )


async def new_profile(client: httpx.AsyncClient, project_dir: Path, name: str = "p") -> str:
    body = {"name": name, "backend": "claude", "cwd": str(project_dir)}
    r = await client.post("/api/profiles", json=body)
    assert r.status_code == 201, r.text
    pid: str = r.json()["id"]
    return pid


async def new_session(client: httpx.AsyncClient, profile_id: str, title: str) -> str:
    r = await client.post("/api/sessions", json={"profile_id": profile_id, "title": title})
    assert r.status_code == 201, r.text
    sid: str = r.json()["id"]
    return sid


def local_midnight() -> datetime:
    return datetime.combine(datetime.now().astimezone().date(), time.min).astimezone()


@contextmanager
def counting_queries(engine: Engine) -> Iterator[list[str]]:
    seen: list[str] = []

    def record(*args: Any) -> None:
        seen.append(str(args[2]))

    event.listen(engine, "before_cursor_execute", record)
    try:
        yield seen
    finally:
        event.remove(engine, "before_cursor_execute", record)


def row_ids(page: BeautifulSoup) -> list[str]:
    return [str(li["data-sid"]) for li in page.select("li.history-row")]


@pytest.fixture
async def many(
    server: LiveServer, client: httpx.AsyncClient, project_dir: Path
) -> AsyncIterator[dict[str, Any]]:
    """10,000 sessions written straight to the database, two of them today, one
    yesterday, the rest long ago; one has two approvals waiting."""
    alpha = await new_profile(client, project_dir, "alpha")
    beta = await new_profile(client, project_dir, "beta")
    midnight = local_midnight()
    old = datetime(2025, 3, 1, 12, tzinfo=UTC)

    def when(i: int) -> datetime:
        if i < 2:
            return (midnight + timedelta(minutes=10 - i)).astimezone(UTC)
        if i == 2:
            return (midnight - timedelta(hours=2)).astimezone(UTC)
        return old - timedelta(minutes=i)

    rows = [
        {
            "id": f"s{i:05d}",
            "profile_id": beta if i % 5 == 0 else alpha,
            "backend": "codex" if i % 7 == 0 else "claude",
            "title": f"session {i}",
            "status": "ended" if i % 2 else "idle",
            "cost_usd": 0.25 if i == 0 else 0.0,
            "input_tokens": 0,
            "output_tokens": 0,
            "turns": i % 4,
            "created_at": when(i) - timedelta(hours=1),
            "updated_at": when(i),
        }
        for i in range(10_000)
    ]
    engine = server.app.state.angelia.engine
    with engine.begin() as conn:
        conn.execute(insert(ChatSession.__table__), rows)  # type: ignore[attr-defined]
        conn.execute(
            insert(PermissionRequest.__table__),  # type: ignore[attr-defined]
            [
                {
                    "id": f"perm{i}",
                    "session_id": "s00001",
                    "backend_request_id": f"r{i}",
                    "tool": "Bash",
                    "input": {},
                    "options": [],
                    "title": "",
                    "reason": "",
                    "tool_call_id": "",
                    "status": "pending",
                    "created_at": datetime.now(UTC),
                }
                for i in range(2)
            ],
        )
    yield {"alpha": alpha, "beta": beta, "engine": engine}


async def test_sessions_page_groups_by_day_and_pages_by_cursor(
    server: LiveServer,
    client: httpx.AsyncClient,
    many: dict[str, Any],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    manager = server.app.state.angelia.manager
    monkeypatch.setattr(manager, "is_live", lambda sid: sid == "s00000")
    with counting_queries(many["engine"]) as queries:
        r = await client.get("/sessions")
    assert r.status_code == 200
    # One page of rows whatever the total, and a fixed number of queries (no N+1); one of
    # them lists the newest waiting requests, which every page announces.
    assert len(queries) <= 9, queries
    assert len(r.content) < 200_000
    page = soup_of(r)
    assert row_ids(page) == [f"s{i:05d}" for i in range(50)]
    assert texts(page, "h2.day-heading")[:2] == ["Today", "Yesterday"]
    today = page.select("section.history-day")[0]
    assert [str(li["data-sid"]) for li in today.select("li.history-row")] == ["s00000", "s00001"]
    assert page.select_one("nav a[href='/sessions'][aria-current='page']") is not None

    live = page.select_one("li[data-sid=s00000]")
    assert live is not None and live.select_one(".status-live") is not None
    assert live.select_one(".history-pending") is None
    assert "$0.25" in live.get_text()
    waiting = page.select_one("li[data-sid=s00001]")
    assert waiting is not None and waiting.select_one(".status-live") is None
    assert texts(waiting, ".history-pending") == ["2 waiting for approval"]
    assert waiting.select_one("a.history-title")["href"] == "/sessions/s00001"  # type: ignore[index]
    meta = " ".join(waiting.select_one(".history-meta").get_text(" ").split())  # type: ignore[union-attr]
    assert meta.startswith("alpha · claude · ") and "1 turn ·" in meta

    # "Older sessions" carries the cursor; pages never overlap and cover everything.
    seen = row_ids(page)
    older = page.select_one("a[rel=next]")
    pages = 1
    while older is not None:
        r = await client.get(str(older["href"]))
        assert r.status_code == 200
        page = soup_of(r)
        assert page.select_one(".pager a[href='/sessions']") is not None
        seen += row_ids(page)
        older = page.select_one("a[rel=next]")
        pages += 1
        if pages == 3:
            break
    assert seen == [f"s{i:05d}" for i in range(150)]

    r = await client.get("/sessions", params={"cursor": "not a cursor!"})
    assert r.status_code == 200
    page = soup_of(r)
    assert page.select_one("#err-cursor") is not None
    assert row_ids(page)[0] == "s00000"


async def test_sessions_page_filters(client: httpx.AsyncClient, many: dict[str, Any]) -> None:
    async def ids(**params: str) -> list[str]:
        r = await client.get("/sessions", params=params)
        assert r.status_code == 200
        return row_ids(soup_of(r))

    ended = await ids(status="ended")
    assert len(ended) == 50 and all(int(s[1:]) % 2 for s in ended)
    codex = await ids(backend="codex")
    assert codex[:3] == ["s00000", "s00007", "s00014"]
    assert all(int(s[1:]) % 7 == 0 for s in codex)
    beta = await ids(profile=many["beta"])
    assert all(int(s[1:]) % 5 == 0 for s in beta)
    today = local_midnight().date().isoformat()
    assert await ids(**{"from": today}) == ["s00000", "s00001"]
    yesterday = (local_midnight().date() - timedelta(days=1)).isoformat()
    assert await ids(**{"from": yesterday, "to": yesterday}) == ["s00002"]
    assert await ids(status="ended", **{"from": today}) == ["s00001"]

    # The chosen filters stay chosen, and "Older sessions" keeps them.
    r = await client.get("/sessions", params={"status": "ended", "backend": "claude"})
    page = soup_of(r)
    chosen = page.select_one("select[name=status] option[selected]")
    assert chosen is not None and chosen["value"] == "ended"
    href = str(page.select_one("a[rel=next]")["href"])  # type: ignore[index]
    query = parse_qs(urlsplit(href).query)
    assert query["status"] == ["ended"] and query["backend"] == ["claude"] and query["cursor"]
    more = row_ids(soup_of(await client.get(href)))
    assert len(more) == 50 and all(int(s[1:]) % 2 and int(s[1:]) % 7 for s in more)

    r = await client.get("/sessions", params={"from": "last week"})
    page = soup_of(r)
    assert "YYYY-MM-DD" in page.select_one("#err-from").get_text()  # type: ignore[union-attr]
    assert len(row_ids(page)) == 50
    r = await client.get("/sessions", params={"status": "nope"})
    assert "No sessions match." in soup_of(r).get_text()


async def test_search_page_escapes_transcripts_and_links_to_the_event(
    server: LiveServer, client: httpx.AsyncClient, project_dir: Path
) -> None:
    events = server.app.state.angelia.events
    sid = await new_session(client, await new_profile(client, project_dir), HOSTILE_IMG)
    events.append(sid, "user_message", {"text": f"please look at {HOSTILE_SCRIPT} now"})
    events.append(
        sid, "assistant_message", {"text": f"That is {HOSTILE_IMG}, an alert", "message_id": "m"}
    )
    events.append(sid, "tool_result", {"tool_call_id": "t", "output": "zebra\u202eyrrah"})
    await events.flush()

    r = await client.get("/search", params={"q": "alert"})
    assert r.status_code == 200
    html = r.text
    assert_no_active_markup(html)
    assert "&lt;script&gt;" in html and "&lt;img src=x onerror=" in html
    page = soup_of(r)
    hits = page.select("ol.hits li.hit")
    assert [h["data-seq"] for h in hits] == ["2", "1"]  # newest first
    assert texts(page, ".hit-kind") == ["Agent", "You"]
    assert texts(page, "a.hit-link") == [HOSTILE_IMG, HOSTILE_IMG]
    links = [str(a["href"]) for a in page.select("a.hit-link")]
    assert links == [f"/sessions/{sid}?around=2#e-2", f"/sessions/{sid}?around=1#e-1"]
    marks = [m.get_text() for m in page.select(".snippet mark")]
    assert set(marks) == {"alert"} and len(marks) == 3
    # Only <mark> comes through as markup; the hostile text stays text.
    assert {t.name for t in page.select(".snippet *")} == {"mark"}
    assert HOSTILE_SCRIPT in page.select(".snippet")[1].get_text()
    assert page.select_one("time")["datetime"].endswith("+00:00")  # type: ignore[index,union-attr]
    box = page.select_one("#nav-search-q")
    assert box is not None and box["value"] == "alert"

    # Bidi controls in a snippet are made visible, not obeyed.
    snippet = soup_of(await client.get("/search", params={"q": "zebra"})).select_one(".snippet")
    assert snippet is not None and "\u202e" not in snippet.get_text()

    for q in ('"', "AND OR NOT", "(((", "*", "x" * 2000):
        r = await client.get("/search", params={"q": q})
        assert r.status_code == 200, q
    r = await client.get("/search", params={"q": "nothinglikethis"})
    assert "Nothing matches" in r.text
    r = await client.get("/search")
    assert r.status_code == 200 and soup_of(r).select("li.hit") == []
    # The search box is on every page.
    for path in ("/", "/sessions", f"/sessions/{sid}", "/permissions"):
        form = soup_of(await client.get(path)).select_one("nav form[role=search]")
        assert form is not None and form["action"] == "/search", path
        assert form.select_one("input[name=q]") is not None


async def test_old_event_opens_in_its_window(
    server: LiveServer, client: httpx.AsyncClient, project_dir: Path
) -> None:
    sid = await new_session(client, await new_profile(client, project_dir), "long")
    now = datetime.now(UTC)
    with server.app.state.angelia.engine.begin() as conn:
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
                for i in range(1, 1001)
            ],
        )

    def seqs(page: BeautifulSoup) -> list[int]:
        return [int(str(e["data-seq"])) for e in page.select("#transcript .event")]

    page = soup_of(await client.get(f"/sessions/{sid}", params={"around": 10}))
    assert seqs(page) == list(range(1, PAGE_EVENTS + 1))
    assert page.select_one("#transcript .earlier") is None
    later = page.select_one("#history-later")
    assert later is not None and f"{1000 - PAGE_EVENTS} later events" in later.get_text()
    assert later.select_one("a")["href"] == f"/sessions/{sid}"  # type: ignore[index]
    log = page.select_one("#transcript")
    assert log is not None and log["data-last-seq"] == "1000"
    assert log["sse-connect"] == f"/sessions/{sid}/live?after=1000"

    page = soup_of(await client.get(f"/sessions/{sid}", params={"around": 500}))
    start = 500 - PAGE_EVENTS // 2
    assert seqs(page) == list(range(start, start + PAGE_EVENTS))
    earlier = page.select_one("#transcript .earlier")
    assert earlier is not None and earlier["hx-get"] == f"/sessions/{sid}/earlier?before={start}"

    # An event in the tail opens the ordinary page.
    tail = 1001 - PAGE_EVENTS
    for around in (tail, 1000, 5000):
        page = soup_of(await client.get(f"/sessions/{sid}", params={"around": around}))
        assert seqs(page) == list(range(tail, 1001)), around
        assert page.select_one("#history-later") is None
    r = await client.get(f"/sessions/{sid}", params={"around": "0"})
    assert r.status_code == 422


async def test_header_actions_rename_delete_export_fork(
    server: LiveServer, client: httpx.AsyncClient, project_dir: Path
) -> None:
    sid = await new_session(client, await new_profile(client, project_dir), "before")
    page = soup_of(await client.get(f"/sessions/{sid}"))
    actions = page.select_one("#session-actions")
    assert actions is not None
    exports = [str(a["href"]) for a in actions.select("a[download]")]
    assert exports == [
        f"/api/sessions/{sid}/export?format=md",
        f"/api/sessions/{sid}/export?format=json",
    ]
    assert actions.select_one("form[action$='/fork']") is None  # nothing to fork yet
    delete = actions.select_one("details.confirm-delete form")
    assert delete is not None and delete["action"] == f"/sessions/{sid}/delete"
    rename = actions.select_one("form.rename-form")
    assert rename is not None and rename["action"] == f"/sessions/{sid}/rename"
    field = rename.select_one("input[name=title]")
    assert field is not None and field["value"] == "before" and field["id"] == "rename-title"
    assert rename.select_one("label[for=rename-title]") is not None

    # The page's forms as a browser sends them: the cookie, and our own Origin.
    async with httpx.AsyncClient(base_url=server.url) as browser:
        assert (await browser.get("/", params={"token": TOKEN})).status_code == 303  # signs in
        r = await browser.post(f"/sessions/{sid}/rename", data={"title": "after"})
        assert r.status_code == 403  # no same-origin proof
        origin = {"Origin": server.url}
        r = await browser.post(
            f"/sessions/{sid}/rename", data={"title": "  after  "}, headers=origin
        )
        assert r.status_code == 303 and r.headers["location"] == f"/sessions/{sid}"
        assert (await client.get(f"/api/sessions/{sid}")).json()["title"] == "after"

        r = await browser.post(f"/sessions/{sid}/rename", data={"title": "   "}, headers=origin)
        assert r.status_code == 303 and "rename_error=" in r.headers["location"]
        page = soup_of(await browser.get(r.headers["location"]))
        assert page.select_one("details.rename[open] #rename-error") is not None
        assert (await client.get(f"/api/sessions/{sid}")).json()["title"] == "after"

        # A Claude session can be forked once it has a conversation of its own.
        store.update_session(server.app.state.angelia.engine, sid, backend_session_id="b-1")
        page = soup_of(await browser.get(f"/sessions/{sid}"))
        fork = page.select_one("#session-actions form[action$='/fork']")
        assert fork is not None and fork["action"] == f"/sessions/{sid}/fork"
        r = await browser.post(str(fork["action"]), headers=origin)
        assert r.status_code == 303
        fork_id = r.headers["location"].rsplit("/", 1)[1]
        assert (await client.get(f"/api/sessions/{fork_id}")).json()["forked_from"] == "b-1"

        r = await browser.post(f"/sessions/{sid}/delete")
        assert r.status_code == 403
        r = await browser.post(f"/sessions/{sid}/delete", headers=origin)
        assert r.status_code == 303 and r.headers["location"] == "/sessions"
        assert (await client.get(f"/api/sessions/{sid}")).status_code == 404
        assert (await browser.post(f"/sessions/{sid}/delete", headers=origin)).status_code == 404
        assert (await browser.post("/sessions/nope/rename", headers=origin)).status_code == 404


async def test_import_from_claude_code_shows_the_report(
    server: LiveServer, client: httpx.AsyncClient, tmp_path: Path
) -> None:
    page = soup_of(await client.get("/sessions"))
    form = page.select_one("form.import-claude")
    assert form is not None and form["action"] == "/sessions/import/claude"
    assert str(FIXTURES) in form.get_text()

    r = await client.post("/sessions/import/claude")
    assert r.status_code == 200
    page = soup_of(r)
    report = " ".join(page.select_one("#import-report").get_text(" ").split())  # type: ignore[union-attr]
    assert "4 created, 0 updated, 0 unchanged" in report
    assert "2 malformed lines" in report and "29 events added" in report
    assert len(row_ids(page)) == 4
    titles = texts(page, "a.history-title")
    assert "List project files" in titles

    again = soup_of(await client.post("/sessions/import/claude"))
    report = " ".join(again.select_one("#import-report").get_text(" ").split())  # type: ignore[union-attr]
    assert "0 created, 0 updated, 4 unchanged" in report
    assert len(row_ids(again)) == 4

    server.app.state.angelia.settings.claude_projects_dir = tmp_path / "nowhere"
    r = await client.post("/sessions/import/claude")
    assert r.status_code == 422
    error = soup_of(r).select_one("#import-error")
    assert error is not None and "does not exist" in error.get_text()


async def test_import_json_export_upload(
    server: LiveServer, client: httpx.AsyncClient, project_dir: Path
) -> None:
    sid = await new_session(client, await new_profile(client, project_dir), "exported")
    server.app.state.angelia.events.append(sid, "user_message", {"text": "round trip"})
    await server.app.state.angelia.events.flush()
    doc = (await client.get(f"/api/sessions/{sid}/export", params={"format": "json"})).json()

    files = {"file": ("export.json", json.dumps(doc).encode(), "application/json")}
    r = await client.post("/sessions/import/json", files=files)
    assert r.status_code == 303
    new_id = r.headers["location"].rsplit("/", 1)[1]
    assert new_id != sid
    events = (await client.get(f"/api/sessions/{new_id}/events")).json()["events"]
    assert [e["text"] for e in events] == ["round trip"]

    bad = {"file": ("x.json", b"{not json", "application/json")}
    r = await client.post("/sessions/import/json", files=bad)
    assert r.status_code == 422
    assert "not valid JSON" in soup_of(r).select_one("#import-error").get_text()  # type: ignore[union-attr]
    wrong = {"file": ("x.json", b'{"hello": 1}', "application/json")}
    r = await client.post("/sessions/import/json", files=wrong)
    assert r.status_code == 422 and soup_of(r).select_one("#import-error") is not None
    r = await client.post("/sessions/import/json", files={"file": ("x.json", b"", "text/plain")})
    assert r.status_code == 422
