"""Hostile input gets a 4xx that says what is wrong, never a 500: integers beyond SQLite's
range, odd ``Last-Event-ID`` values, JSON nested or sized past the caps, glob characters
in a Claude session id, pseudo-filesystem and overlong paths, dates at the calendar's
ends, and spreadsheet formulas in the usage CSV."""

from __future__ import annotations

import asyncio
import csv
import io
import json
from pathlib import Path
from typing import Any

import httpx
import pytest

from app.schemas import ProfileCreate
from app.services.store import store
from tests.conftest import TOKEN, LiveServer
from tests.security._support import make_session

HUGE = 2**63  # one past SQLite's largest integer
# The caps of app/web/bodylimits.py, as the API promises them.
MAX_JSON_DEPTH = 64
MAX_JSON_BYTES = 128 * 1024 * 1024
FIXTURES = Path(__file__).parent.parent / "fixtures" / "claude_projects"


async def new_session(client: httpx.AsyncClient, cwd: Path) -> str:
    """A session of a claude profile that never runs: no message is sent to it."""
    return await make_session(client, cwd, {"command": None, "env": {}})


async def stream_status(client: httpx.AsyncClient, url: str, **kw: Any) -> tuple[int, str]:
    """The status of a stream that is refused (read whole) or accepted (left at once)."""
    async with client.stream("GET", url, **kw) as r:
        if r.status_code != 200:
            return r.status_code, (await r.aread()).decode()
        return 200, ""


# -- integers ------------------------------------------------------------------------------


@pytest.mark.parametrize("query", [{"after": HUGE}, {"before": HUGE}, {"after": 10**30}])
async def test_event_bounds_beyond_sqlite_are_422(
    client: httpx.AsyncClient, project_dir: Path, query: dict[str, int]
) -> None:
    sid = await new_session(client, project_dir)
    r = await client.get(f"/api/sessions/{sid}/events", params=query)
    assert r.status_code == 422, r.text
    assert r.json()["detail"][0]["field"] in {"query.after", "query.before"}


@pytest.mark.parametrize("path", ["/api/sessions/{sid}/stream", "/sessions/{sid}/live"])
async def test_streams_refuse_an_after_beyond_sqlite(
    client: httpx.AsyncClient, project_dir: Path, path: str
) -> None:
    sid = await new_session(client, project_dir)
    status, _ = await stream_status(client, path.format(sid=sid), params={"after": HUGE})
    assert status == 422


@pytest.mark.parametrize("query", [{"around": HUGE}, {"around": -1}])
async def test_session_page_refuses_an_around_beyond_range(
    client: httpx.AsyncClient, project_dir: Path, query: dict[str, int]
) -> None:
    sid = await new_session(client, project_dir)
    assert (await client.get(f"/sessions/{sid}", params=query)).status_code == 422
    r = await client.get(f"/sessions/{sid}/earlier", params={"before": HUGE})
    assert r.status_code == 422


async def test_rewind_and_queue_refuse_huge_numbers(
    client: httpx.AsyncClient, project_dir: Path
) -> None:
    sid = await new_session(client, project_dir)
    r = await client.post(f"/api/sessions/{sid}/rewind", json={"event_seq": HUGE})
    assert r.status_code == 422 and "event_seq" in r.text
    r = await client.patch(f"/api/sessions/{sid}/queue/{HUGE}", json={"text": "x"})
    assert r.status_code == 422
    assert (await client.delete(f"/api/sessions/{sid}/queue/{HUGE}")).status_code == 422


# -- Last-Event-ID -------------------------------------------------------------------------


@pytest.mark.parametrize("path", ["/api/sessions/{sid}/stream", "/sessions/{sid}/live"])
# Header bytes arrive as Latin-1: b"\xb2" is "²", which str.isdigit() accepts.
# A few by hand; tests/fuzz/test_openapi.py sweeps many more against the same rule.
@pytest.mark.parametrize("value", ["²", "0²", str(HUGE), "9" * 400, "-1", "12abc", "1 2"])
async def test_a_last_event_id_that_is_not_plain_digits_is_400(
    client: httpx.AsyncClient, project_dir: Path, path: str, value: str
) -> None:
    sid = await new_session(client, project_dir)
    headers = {"Last-Event-ID": value.encode("latin-1")}
    status, text = await stream_status(client, path.format(sid=sid), headers=headers)
    assert status == 400, text
    assert "Last-Event-ID" in text


@pytest.mark.parametrize("path", ["/api/sessions/{sid}/stream", "/sessions/{sid}/live"])
async def test_a_blank_last_event_id_counts_as_absent_and_one_digit_more_is_not(
    client: httpx.AsyncClient, project_dir: Path, path: str
) -> None:
    sid = await new_session(client, project_dir)
    url = path.format(sid=sid)
    assert (await stream_status(client, url, headers={"Last-Event-ID": ""}))[0] == 200
    limit = str(2**53 - 1)  # the largest seq the streams accept (JavaScript's exact integers)
    assert (await stream_status(client, url, headers={"Last-Event-ID": limit}))[0] == 200
    padded = "0" * 5000 + "1"  # int() alone refuses a string this long
    assert (await stream_status(client, url, headers={"Last-Event-ID": padded}))[0] == 200
    assert (await stream_status(client, url, headers={"Last-Event-ID": limit + "0"}))[0] == 400


# -- JSON caps -----------------------------------------------------------------------------


def nested(depth: int) -> bytes:
    return b"[" * depth + b"]" * depth


@pytest.mark.parametrize(
    ("path", "content_type"),
    [
        ("/api/import/json", "application/json"),
        ("/api/import/json", None),  # the import reads any body that is not a form
        ("/api/profiles", "application/json"),
        ("/api/sessions", "application/vnd.x+json"),
        ("/api/profiles/nope/rules", "application/json; charset=utf-8"),
    ],
)
async def test_json_nested_100000_deep_is_400(
    client: httpx.AsyncClient, path: str, content_type: str | None
) -> None:
    headers = {"Content-Type": content_type} if content_type else {}
    r = await client.post(path, content=nested(100_000), headers=headers)
    assert r.status_code == 400, r.text[:300]
    assert r.json() == {"detail": f"The JSON nests deeper than {MAX_JSON_DEPTH} levels"}


async def test_the_depth_cap_is_exact(client: httpx.AsyncClient) -> None:
    headers = {"Content-Type": "application/json"}
    r = await client.post("/api/profiles", content=nested(MAX_JSON_DEPTH + 1), headers=headers)
    assert r.status_code == 400
    r = await client.post("/api/profiles", content=nested(MAX_JSON_DEPTH), headers=headers)
    assert r.status_code == 422  # the schema's answer, not the cap's
    deeper = b'{"name": "' + b"[" * 1000 + b'", "cwd": ' + nested(MAX_JSON_DEPTH - 1) + b"}"
    r = await client.post("/api/profiles", content=deeper, headers=headers)
    assert r.status_code == 422 and "cwd" in r.text


async def test_a_deep_export_uploaded_as_a_file_is_refused(client: httpx.AsyncClient) -> None:
    files = {"file": ("deep.json", nested(100_000), "application/json")}
    r = await client.post("/api/import/json", files=files)
    assert r.status_code == 422 and "deeper than" in r.text
    r = await client.post("/sessions/import/json", files=files)
    assert r.status_code == 422 and "deeper than" in r.text
    # Sent as text/plain the API route still reads it as JSON: the same check applies.
    r = await client.post(
        "/api/import/json", content=nested(100_000), headers={"Content-Type": "text/plain"}
    )
    assert r.status_code == 422 and "deeper than" in r.text


async def test_a_body_over_the_size_cap_is_413_before_it_is_read(server: LiveServer) -> None:
    reader, writer = await asyncio.open_connection("127.0.0.1", server.port)
    head = (
        f"POST /api/import/json HTTP/1.1\r\nHost: 127.0.0.1:{server.port}\r\n"
        f"Authorization: Bearer {TOKEN}\r\nContent-Type: application/json\r\n"
        f"Content-Length: {MAX_JSON_BYTES + 1}\r\n\r\n"
    )
    writer.write(head.encode() + b"[")
    await writer.drain()
    try:
        # Without the cap the server waits for the rest of the body: the read times out.
        answer = await asyncio.wait_for(reader.read(4096), timeout=20)
    finally:
        writer.close()
    assert answer.startswith(b"HTTP/1.1 413"), answer[:200]
    assert b"larger than" in answer


# -- Claude session ids --------------------------------------------------------------------


@pytest.fixture
def claude_projects(tmp_path: Path) -> Path:
    """The fixture transcripts where the server looks for Claude Code's (CLAUDE_CONFIG_DIR)."""
    import shutil

    projects = tmp_path / "claude-config" / "projects"
    shutil.copytree(FIXTURES, projects)
    return projects


@pytest.mark.parametrize("bad", ["**", "*", "1111*", "[1]1111111-1111-4111-8111-111111111111"])
async def test_glob_characters_in_a_terminal_session_id_are_refused(
    client: httpx.AsyncClient, claude_projects: Path, bad: str
) -> None:
    r = await client.post(f"/sessions/import/claude/{bad}", follow_redirects=False)
    assert r.status_code == 422
    assert "is not a Claude Code session id" in r.text
    # Nothing was opened or imported.
    assert (await client.get("/api/sessions")).json() == []


async def test_a_stored_glob_id_leaves_the_session_page_working(
    server: LiveServer, client: httpx.AsyncClient, project_dir: Path, claude_projects: Path
) -> None:
    sid = await new_session(client, project_dir)
    store.update_session(server.app.state.angelia.engine, sid, backend_session_id="**")
    r = await client.get(f"/sessions/{sid}")
    assert r.status_code == 200, r.text[-500:]
    assert 'id="transcript-missing"' in r.text and "cannot be found" in r.text


# -- the folder picker ---------------------------------------------------------------------


@pytest.mark.parametrize(
    "path",
    ["/proc/1/root", "/proc/self/cwd", "/proc", "/sys/kernel", "/dev", "/tmp/../proc/1/root"],
)
async def test_pseudo_filesystems_are_not_listed(client: httpx.AsyncClient, path: str) -> None:
    r = await client.get("/fs/dirs", params={"path": path})
    assert r.status_code == 422
    assert "pseudo-filesystem" in r.text


async def test_a_link_into_proc_is_not_followed(client: httpx.AsyncClient, tmp_path: Path) -> None:
    (tmp_path / "root-of-1").symlink_to("/proc/1/root")
    r = await client.get("/fs/dirs", params={"path": str(tmp_path / "root-of-1" / "etc")})
    assert r.status_code == 422 and "pseudo-filesystem" in r.text
    r = await client.get("/fs/dirs", params={"cwd": str(tmp_path / "root-of-1" / "x")})
    assert r.status_code == 422 and "pseudo-filesystem" in r.text


# Paths no filesystem call can take, each with what the answer must say.
OVERLONG = [("/" + "a" * 300, "name too long"), ("/" + "a/" * 2100, "longer than 4096")]


@pytest.mark.parametrize(("path", "reason"), [*OVERLONG, ("/tmp/a\x00b", "NUL")])
async def test_overlong_paths_and_nul_are_422(
    client: httpx.AsyncClient, path: str, reason: str
) -> None:
    r = await client.get("/fs/dirs", params={"path": path})
    assert r.status_code == 422 and reason in r.text
    r = await client.get("/fs/dirs", params={"cwd": path})
    assert r.status_code == 422 and reason in r.text


@pytest.mark.parametrize(
    ("path", "reason"), [*OVERLONG, ("~no-such-user-here/projects", "home directory")]
)
async def test_a_claude_import_path_that_cannot_be_read_is_422(
    client: httpx.AsyncClient, path: str, reason: str
) -> None:
    r = await client.post("/api/import/claude", json={"path": path})
    assert r.status_code == 422, r.text[:300]
    assert r.json()["detail"][0]["field"] == "path" and reason in r.text


# -- dates ---------------------------------------------------------------------------------


@pytest.mark.parametrize("route", ["/api/sessions", "/api/permissions"])
@pytest.mark.parametrize(
    ("field", "value"),
    [("since", "0001-01-01T00:00:00+14:00"), ("until", "9999-12-31T23:59:59-14:00")],
)
async def test_moments_that_leave_the_calendar_in_utc_are_422(
    client: httpx.AsyncClient, route: str, field: str, value: str
) -> None:
    r = await client.get(route, params={field: value})
    assert r.status_code == 422, r.text
    assert r.json()["detail"] == [
        {"field": field, "message": "is out of range once converted to UTC"}
    ]


@pytest.mark.parametrize(("field", "value"), [("until", "9999-12-31"), ("since", "0001-01-01")])
async def test_usage_api_days_at_the_calendar_ends_are_422(
    client: httpx.AsyncClient, field: str, value: str
) -> None:
    for route in ("/api/usage", "/api/usage.csv"):
        r = await client.get(route, params={field: value})
        assert r.status_code == 422, r.text
        assert r.json()["detail"][0]["field"] == field
        assert "out of range" in r.json()["detail"][0]["message"]


@pytest.mark.parametrize(
    ("page", "query"),
    [
        ("/usage", {"until": "9999-12-31"}),
        ("/usage", {"since": "0001-01-01"}),
        ("/sessions", {"to": "9999-12-31"}),
        ("/sessions", {"from": "0001-01-01"}),
    ],
)
async def test_page_days_at_the_calendar_ends_are_422(
    client: httpx.AsyncClient, page: str, query: dict[str, str]
) -> None:
    r = await client.get(page, params=query)
    assert r.status_code == 422 and "out of range" in r.text


# -- the usage CSV -------------------------------------------------------------------------


@pytest.mark.parametrize(
    "name", ['\t=HYPERLINK("http://x")', "\r=1+1", " +1", "\n@SUM(1)", "\x0b-2"]
)
async def test_csv_quotes_formulas_behind_blanks_and_control_characters(
    server: LiveServer, client: httpx.AsyncClient, project_dir: Path, name: str
) -> None:
    engine = server.app.state.angelia.engine
    data = ProfileCreate.model_construct(
        **ProfileCreate(name="x", backend="claude", cwd=str(project_dir)).model_dump()
        | {"name": name}
    )
    profile = store.create_profile(engine, data=data)
    sid = store.create_session(engine, profile_id=profile.id, title="t").id
    events = server.app.state.angelia.events
    events.append(sid, "turn_end", {"cost_usd": 0.1, "usage": {"input_tokens": 1}})
    events.flush_sync()
    r = await client.get("/api/usage.csv", params={"group": "profile"})
    assert r.status_code == 200
    rows = list(csv.DictReader(io.StringIO(r.text)))
    assert rows[0]["label"] == "'" + name, json.dumps(rows[0])
