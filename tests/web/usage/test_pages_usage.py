"""The usage page, ``GET /api/usage`` and its CSV: charts with numbers, and empty."""

from __future__ import annotations

import csv
import io
from datetime import date, timedelta
from pathlib import Path

import httpx
from bs4 import BeautifulSoup
from sqlalchemy import text

from app.schemas import ProfileCreate
from app.services.store import store
from tests.conftest import LiveServer

TODAY = date.today()


def seed(server: LiveServer, cwd: Path) -> dict[str, str]:
    engine = server.app.state.angelia.engine
    events = server.app.state.angelia.events
    ids = {}
    for name, backend in (("=SUM(1)", "claude"), ("side", "gemini")):
        data = ProfileCreate(name=name, backend=backend, cwd=str(cwd))
        ids[name] = store.create_profile(engine, data=data).id
    a = store.create_session(engine, profile_id=ids["=SUM(1)"], title="a").id
    b = store.create_session(engine, profile_id=ids["side"], title="b").id
    turns = [
        (a, 0, 0.5, "claude-<b>sonnet</b>"),
        (a, 1, 0.25, "claude-opus"),
        (b, 1, None, ""),
        (a, 40, 9.0, "claude-opus"),  # outside the default 30 days
    ]
    for sid, days_ago, cost, model in turns:
        usage = {"input_tokens": 1000, "output_tokens": 100, "cache_read_input_tokens": 50}
        payload = {"stop_reason": "end_turn", "cost_usd": cost, "usage": usage, "model": model}
        seq = events.append(sid, "turn_end", payload).seq
        events.flush_sync()  # written by the app's writer thread otherwise
        at = f"{(TODAY - timedelta(days=days_ago)).isoformat()} 12:00:00"
        with engine.begin() as conn:
            conn.execute(
                text("UPDATE event SET created_at = :at WHERE session_id = :s AND seq = :q"),
                {"at": at, "s": sid, "q": seq},
            )
    return ids


async def test_the_page_draws_cost_and_tokens_with_their_numbers(
    server: LiveServer, client: httpx.AsyncClient, project_dir: Path
) -> None:
    ids = seed(server, project_dir)
    r = await client.get("/usage")
    assert r.status_code == 200
    page = BeautifulSoup(r.text, "html.parser")
    totals = page.select_one("#usage-totals")
    assert totals is not None and "$0.75" in totals.get_text()
    assert "3" in [dd.get_text() for dd in totals.select("dd")]  # turns in 30 days
    cost = page.select("#cost-chart rect.bar")
    # Two days with a cost, one profile each (the gemini turn has none).
    assert len(cost) == 2
    assert {b.select_one("title").get_text() for b in cost} == {
        f"{TODAY.isoformat()} · =SUM(1): $0.50",
        f"{(TODAY - timedelta(days=1)).isoformat()} · =SUM(1): $0.25",
    }
    assert "No cost reported by: side" in page.get_text()
    tokens = page.select("#tokens-chart rect.bar")
    assert len(tokens) == 3 * 3  # three models, input/output/cache each
    # A model name from a CLI is text, never markup.
    assert page.select_one("#tokens-chart b") is None
    assert "claude-<b>sonnet</b>" in page.select_one("#by-model").get_text()
    rows = [tr.select_one("th").get_text() for tr in page.select("#by-profile tbody tr")]
    assert set(rows) == {"=SUM(1)", "side"}
    side = next(tr for tr in page.select("#by-profile tbody tr") if "side" in tr.get_text())
    assert "not reported" in side.get_text()
    link = page.select_one("#by-day caption a")
    assert link is not None and str(link["href"]).startswith("/api/usage.csv?group=day&since=")
    assert page.select_one("nav a[href='/usage'][aria-current=page]") is not None
    assert ids


async def test_an_empty_period_says_so_and_draws_nothing(client: httpx.AsyncClient) -> None:
    r = await client.get("/usage", params={"days": "7"})
    assert r.status_code == 200
    page = BeautifulSoup(r.text, "html.parser")
    assert page.select_one("#usage-empty") is not None
    assert page.select("svg") == []
    assert "not reported" in page.select_one("#usage-totals").get_text()
    assert page.select_one("button[value='7'][aria-pressed=true]") is not None


async def test_a_bad_period_is_said_and_the_default_shown(client: httpx.AsyncClient) -> None:
    r = await client.get("/usage", params={"since": "2026-13-01"})
    assert r.status_code == 422
    page = BeautifulSoup(r.text, "html.parser")
    error = page.select_one("#err-period")
    assert error is not None and "YYYY-MM-DD" in error.get_text()
    r = await client.get("/usage", params={"since": "2026-12-05", "until": "2026-12-01"})
    assert r.status_code == 422 and "after the last" in r.text


async def test_the_api_groups_and_the_csv_matches_it(
    server: LiveServer, client: httpx.AsyncClient, project_dir: Path
) -> None:
    ids = seed(server, project_dir)
    since = (TODAY - timedelta(days=29)).isoformat()
    r = await client.get("/api/usage", params={"group": "profile", "since": since})
    assert r.status_code == 200
    body = r.json()
    by_key = {g["key"]: g for g in body["groups"]}
    assert by_key[ids["=SUM(1)"]]["cost_usd"] == 0.75
    assert by_key[ids["side"]]["cost_usd"] is None
    assert body["total"]["turns"] == 3 and body["total"]["sessions"] == 2
    r = await client.get("/api/usage.csv", params={"group": "profile", "since": since})
    assert r.status_code == 200 and r.headers["content-type"].startswith("text/csv")
    assert "angelia-usage-by-profile.csv" in r.headers["content-disposition"]
    table = list(csv.DictReader(io.StringIO(r.text)))
    assert [row["label"] for row in table] == ["'=SUM(1)", "side", "total"]
    assert table[1]["cost_usd"] == "" and table[0]["cost_usd"] == "0.75"
    r = await client.get("/api/usage", params={"since": "2026-12-05", "until": "2026-12-01"})
    assert r.status_code == 422
    r = await client.get("/api/usage", params={"group": "week"})
    assert r.status_code == 422
