"""The approval pages over HTTP: audit log, profile rules, mode switch, badge, cards."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest
from bs4 import BeautifulSoup, Tag

from app.resources import templates_dir
from app.web.render import make_templates
from tests.api.test_chat import make_session
from tests.conftest import write_scenario
from tests.helpers import count, of_kind, send, wait_for_events
from tests.web.test_render import assert_no_active_markup


def soup_of(r: httpx.Response) -> BeautifulSoup:
    return BeautifulSoup(r.text, "html.parser")


def texts(soup: Tag, selector: str) -> list[str]:
    return [" ".join(el.get_text(" ").split()) for el in soup.select(selector)]


async def decided_request(
    client: httpx.AsyncClient, project_dir: Path, fake: dict[str, Any]
) -> tuple[str, str, int]:
    """A session whose one Bash request was allowed once; (session, permission, seq)."""
    tool = {"tool": "Bash", "input": {"command": "touch x"}, "permission": True}
    write_scenario(fake["scenario"], [[tool, {"text": "done"}]])
    sid = await make_session(client, project_dir, fake)
    await send(client, sid, "run touch")
    events = await wait_for_events(client, sid, count("permission_request"))
    request = of_kind(events, "permission_request")[0]
    pid = request["permission_id"]
    r = await client.post(f"/api/permissions/{pid}/decision", json={"decision": "allow_once"})
    assert r.status_code == 200, r.text
    await wait_for_events(client, sid, count("turn_end"))
    return sid, pid, request["seq"]


async def test_audit_lists_a_decided_request_and_filters(
    client: httpx.AsyncClient, project_dir: Path, fake_claude: dict[str, Any]
) -> None:
    sid, pid, seq = await decided_request(client, project_dir, fake_claude)
    profile_id = (await client.get(f"/api/sessions/{sid}")).json()["profile_id"]

    page = soup_of(await client.get("/permissions"))
    rows = page.select("table.audit tbody tr")
    assert len(rows) == 1
    row = rows[0]
    assert row["data-pid"] == pid
    link = row.select_one("a")
    assert link is not None and link["href"] == f"/sessions/{sid}#e-{seq}"
    cells = [" ".join(td.get_text(" ").split()) for td in row.select("td")]
    assert cells[2] == "Bash" and cells[3] == "touch x"
    assert cells[4] == "Allowed once" and cells[5] == "user"
    assert cells[7].endswith(("ms", " s"))
    assert page.select_one("a[href='/permissions'][aria-current='page']") is not None

    today = datetime.now(UTC).date()
    matching = [
        {"session": sid},
        {"profile": profile_id},
        {"tool": "Bash"},
        {"decision": "allow_once"},
        {"source": "user"},
        {"status": "decided"},
        {"from": today.isoformat(), "to": today.isoformat()},
    ]
    excluding = [
        {"session": "nope"},
        {"profile": "nope"},
        {"tool": "Read"},
        {"decision": "deny"},
        {"source": "rule"},
        {"status": "pending"},
        {"to": (today - timedelta(days=1)).isoformat()},
        {"from": (today + timedelta(days=1)).isoformat()},
    ]
    for params in matching:
        page = soup_of(await client.get("/permissions", params=params))
        assert len(page.select("table.audit tbody tr")) == 1, params
    for params in excluding:
        page = soup_of(await client.get("/permissions", params=params))
        assert page.select("table.audit tbody tr") == [], params
        assert "No permission requests match" in page.get_text()
    # The chosen filters stay selected in the form.
    page = soup_of(await client.get("/permissions", params={"decision": "allow_once"}))
    chosen = page.select_one("select[name=decision] option[selected]")
    assert chosen is not None and chosen["value"] == "allow_once"

    r = await client.get("/permissions", params={"from": "yesterday"})
    assert r.status_code == 200
    page = soup_of(r)
    error = page.select_one("#err-from")
    assert error is not None and "YYYY-MM-DD" in error.get_text()
    assert len(page.select("table.audit tbody tr")) == 1  # a bad filter is ignored


async def test_badge_counts_pending_requests(
    client: httpx.AsyncClient, project_dir: Path, fake_claude: dict[str, Any]
) -> None:
    r = await client.get("/badge")
    assert r.status_code == 200
    assert soup_of(r).select_one("[data-count]")["data-count"] == "0"  # type: ignore[index]
    tool = {"tool": "Bash", "input": {"command": "ls"}, "permission": True}
    write_scenario(fake_claude["scenario"], [[tool, {"text": "ok"}]])
    sid = await make_session(client, project_dir, fake_claude)
    await send(client, sid, "go")
    await wait_for_events(client, sid, count("permission_request"))
    badge = soup_of(await client.get("/badge")).select_one("a.badge")
    assert badge is not None and badge["data-count"] == "1"
    assert badge["href"] == "/permissions?status=pending"
    index = soup_of(await client.get("/"))
    assert index.title is not None and index.title.get_text().startswith("(1) ")
    slot = index.select_one("#pending-badge")
    assert slot is not None and slot["hx-get"] == "/badge"
    assert "every 3s" in str(slot["hx-trigger"])


async def test_pending_card_shows_preview_and_queued_message(
    client: httpx.AsyncClient, project_dir: Path, fake_claude: dict[str, Any]
) -> None:
    (project_dir / "app.py").write_text("x = 1\ny = 2\n")
    edit = {
        "tool": "Edit",
        "input": {
            "file_path": str(project_dir / "app.py"),
            "old_string": "x = 1",
            "new_string": "x = 3",
        },
        "permission": True,
        "reason": "Edits need approval",
    }
    write_scenario(fake_claude["scenario"], [[edit, {"text": "edited"}]])
    sid = await make_session(client, project_dir, fake_claude)
    await send(client, sid, "edit it")
    await wait_for_events(client, sid, count("permission_request"))
    r = await client.post(f"/api/sessions/{sid}/messages", json={"text": "and then this"})
    assert r.json()["queued"] is True

    page = soup_of(await client.get(f"/sessions/{sid}"))
    card = page.select_one(".perm.pending")
    assert card is not None and card["tabindex"] == "0"
    assert texts(card, ".diff .del") == ["-x = 1"]
    assert texts(card, ".diff .add") == ["+x = 3"]
    assert "Edits need approval" in card.get_text()
    assert card.select_one(".perm-wait")["data-since"]  # type: ignore[index]
    hints = [b.select_one("kbd") is not None for b in card.select("button[name=decision]")]
    assert hints == [True, False, True, False]
    queued = page.select_one(".msg.user[data-queue=waiting]")
    assert queued is not None and "waits for your approval" in queued.get_text()
    hint = page.select_one("#composer-hint")
    assert hint is not None and not hint.has_attr("hidden")

    pid = card["data-pid"]
    r = await client.post(f"/api/permissions/{pid}/decision", json={"decision": "allow_once"})
    assert r.status_code == 200
    await wait_for_events(client, sid, count("turn_end", 2))
    page = soup_of(await client.get(f"/sessions/{sid}"))
    message = page.select_one(".msg.user[data-queue]")
    assert message is not None and message["data-queue"] == "sent"
    assert message.select_one(".queue-label") is None
    assert page.select_one("#composer-hint").has_attr("hidden")  # type: ignore[union-attr]
    outcome = texts(page, f"#perm-{pid} .outcome")
    assert outcome == ["Allowed once by you"]


async def test_decision_form_answers_and_reports_the_winner(
    client: httpx.AsyncClient, project_dir: Path, fake_claude: dict[str, Any]
) -> None:
    tool = {"tool": "Bash", "input": {"command": "rm -rf build"}, "permission": True}
    write_scenario(fake_claude["scenario"], [[tool, {"text": "ok"}]])
    sid = await make_session(client, project_dir, fake_claude)
    await send(client, sid, "go")
    events = await wait_for_events(client, sid, count("permission_request"))
    pid = of_kind(events, "permission_request")[0]["permission_id"]
    r = await client.post(f"/permissions/{pid}/decision", data={"decision": "allow_always"})
    card = soup_of(r).select_one(".perm")
    assert card is not None and card["data-status"] == "decided"
    outcome = " ".join(card.select_one(".outcome").get_text(" ").split())  # type: ignore[union-attr]
    assert outcome.startswith("Always allowed by you · rule Bash(rm")
    r = await client.post(f"/permissions/{pid}/decision", data={"decision": "deny"})
    page = soup_of(r)
    assert "already answered" in page.select_one(".notice").get_text()  # type: ignore[union-attr]
    assert "Always allowed by you" in page.select_one(".outcome").get_text()  # type: ignore[union-attr]


async def test_profile_page_rules_add_invalid_delete(
    client: httpx.AsyncClient, project_dir: Path, fake_claude: dict[str, Any]
) -> None:
    sid = await make_session(client, project_dir, fake_claude, model="sonnet")
    profile_id = (await client.get(f"/api/sessions/{sid}")).json()["profile_id"]
    index = soup_of(await client.get("/"))
    assert index.select_one(f"#profiles a[href='/profiles/{profile_id}']") is not None

    page = soup_of(await client.get(f"/profiles/{profile_id}"))
    assert page.h1 is not None and page.h1.get_text() == "fake"
    fields = page.get_text(" ")
    assert str(project_dir) in fields and "sonnet" in fields
    assert "FAKE_CLAUDE_LOG" in fields and str(fake_claude["log"]) not in fields
    assert "No rules yet" in fields

    r = await client.post(
        f"/profiles/{profile_id}/rules", data={"rule": "Bash(npm test:*)", "decision": "deny"}
    )
    assert r.status_code == 303 and r.headers["location"] == f"/profiles/{profile_id}#rules"
    page = soup_of(await client.get(f"/profiles/{profile_id}"))
    assert texts(page, "table.rules tbody td:first-child") == ["Bash(npm test:*)"]
    assert texts(page, "table.rules tbody td:nth-child(2)") == ["deny"]

    r = await client.post(
        f"/profiles/{profile_id}/rules", data={"rule": "Bash(", "decision": "allow"}
    )
    assert r.status_code == 422
    page = soup_of(r)
    error = page.select_one("#err-rule")
    assert error is not None and "not a valid rule" in error.get_text()
    field = page.select_one("form.rule-form input[name=rule]")
    assert field is not None and field["value"] == "Bash(" and field["aria-invalid"] == "true"
    assert len(page.select("table.rules tbody tr")) == 1

    rules = (await client.get(f"/api/profiles/{profile_id}/rules")).json()
    delete = page.select_one("details.confirm-delete form")
    assert delete is not None
    assert delete["action"] == f"/profiles/{profile_id}/rules/{rules[0]['id']}/delete"
    r = await client.post(str(delete["action"]))
    assert r.status_code == 303
    assert (await client.get(f"/api/profiles/{profile_id}/rules")).json() == []
    assert (await client.post(str(delete["action"]))).status_code == 404
    assert (await client.get("/profiles/nope")).status_code == 404


async def test_mode_form_needs_confirmation_for_bypass(
    client: httpx.AsyncClient, project_dir: Path, fake_claude: dict[str, Any]
) -> None:
    sid = await make_session(client, project_dir, fake_claude)
    page = soup_of(await client.get(f"/sessions/{sid}"))
    form = page.select_one("form#mode-form")
    assert form is not None and form["action"] == f"/sessions/{sid}/mode"
    assert form.select_one("option[selected]")["value"] == "default"  # type: ignore[index]
    assert form.select_one("input[type=checkbox][name=confirm]") is not None

    r = await client.post(f"/sessions/{sid}/mode", data={"mode": "bypassPermissions"})
    assert r.status_code == 303
    assert r.headers["location"].startswith(f"/sessions/{sid}?")
    assert (await client.get(f"/api/sessions/{sid}")).json()["permission_mode"] is None
    page = soup_of(await client.get(r.headers["location"]))
    error = page.select_one("#mode-error")
    assert error is not None and "confirm" in error.get_text()
    chosen = page.select_one("#mode-select option[selected]")
    assert chosen is not None and chosen["value"] == "bypassPermissions"
    assert "is-bypass" not in page.body["class"]  # type: ignore[index]

    r = await client.post(f"/sessions/{sid}/mode", data={"mode": "nonsense"})
    page = soup_of(await client.get(r.headers["location"]))
    assert "mode" in page.select_one("#mode-error").get_text()  # type: ignore[union-attr]

    r = await client.post(
        f"/sessions/{sid}/mode", data={"mode": "bypassPermissions", "confirm": "1"}
    )
    assert r.status_code == 303 and r.headers["location"] == f"/sessions/{sid}"
    assert (await client.get(f"/api/sessions/{sid}")).json()["permission_mode"] == (
        "bypassPermissions"
    )
    page = soup_of(await client.get(f"/sessions/{sid}"))
    assert "is-bypass" in page.body["class"]  # type: ignore[index]
    assert not page.select_one("#bypass-flag").has_attr("hidden")  # type: ignore[union-attr]
    chosen = page.select_one("#mode-select option[selected]")
    assert chosen is not None and chosen["value"] == "bypassPermissions"
    assert page.select_one("#mode-error") is None
    assert [
        e["mode"]
        for e in of_kind(
            (await client.get(f"/api/sessions/{sid}/events")).json()["events"], "mode_changed"
        )
    ] == ["bypassPermissions"]

    r = await client.post(f"/sessions/{sid}/mode", data={"mode": "plan"})
    assert r.status_code == 303 and r.headers["location"] == f"/sessions/{sid}"
    page = soup_of(await client.get(f"/sessions/{sid}"))
    assert "is-bypass" not in page.body["class"]  # type: ignore[index]
    assert (await client.post("/sessions/nope/mode", data={"mode": "plan"})).status_code == 404


# -- the card's preview, rendered directly -------------------------------------------------

HOSTILE = "<script>alert(1)</script>"
PREVIEWS: list[dict[str, Any]] = [
    {"kind": "command", "command": HOSTILE, "description": HOSTILE},
    {
        "kind": "diff",
        "path": HOSTILE,
        "new_file": True,
        "diff": f"--- a/x\n+++ b/x\n@@ -1 +1 @@\n-{HOSTILE}\n+{HOSTILE}\n ctx\n",
    },
    {"kind": "mcp", "server": HOSTILE, "tool": HOSTILE, "arguments": {HOSTILE: HOSTILE}},
    {"kind": "path", "path": HOSTILE},
    {"kind": "input", "input": {HOSTILE: [HOSTILE]}},
    {"kind": HOSTILE},
]


@pytest.mark.parametrize("preview", PREVIEWS, ids=lambda p: str(p["kind"])[:10])
@pytest.mark.parametrize("status", ["pending", "decided"])
def test_preview_kinds_render_escaped(preview: dict[str, Any], status: str) -> None:
    templates = make_templates(templates_dir())
    perm = {
        "permission_id": "p1",
        "tool": HOSTILE,
        "title": HOSTILE,
        "input": {"command": HOSTILE},
        "reason": HOSTILE,
        "blocked_path": HOSTILE,
        "status": status,
        "decision": None if status == "pending" else "allow_always",
        "source": None if status == "pending" else "restart",
        "rule": None if status == "pending" else HOSTILE,
        "preview": preview,
        "at": "2026-12-02T14:00:00.000Z",
    }
    html = templates.get_template("cards/_permission.html").render(perm=perm, notice=HOSTILE)
    assert_no_active_markup(html)
    assert HOSTILE not in html and "&lt;script&gt;" in html
    soup = BeautifulSoup(html, "html.parser")
    if preview["kind"] == "diff":
        assert [s["class"] for s in soup.select("pre.diff span")] == [
            ["hunk"],
            ["del"],
            ["add"],
            ["ctx"],
        ]
        assert "new file" in html
    if status == "decided":
        outcome = soup.select_one(".outcome")
        assert outcome is not None
        text = " ".join(outcome.get_text(" ").split())
        assert text.startswith("Always allowed when the server restarted · rule")
    else:
        assert soup.select_one(".perm-wait")["data-since"] == perm["at"]  # type: ignore[index]
