"""Question and plan cards: their fields, the decision form, and the answered line."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx
import pytest
from bs4 import BeautifulSoup, Tag
from fastapi.templating import Jinja2Templates

from app.resources import templates_dir
from app.web.render import make_templates
from app.web.transcript import fold_events, render_event
from tests.api.test_chat import make_session
from tests.conftest import write_scenario
from tests.helpers import count, of_kind, send, wait_for_events
from tests.real.test_real_claude_questions import QUESTIONS
from tests.web.test_render import HOSTILE, assert_no_active_markup, ev


@pytest.fixture(scope="module")
def templates() -> Jinja2Templates:
    return make_templates(templates_dir())


def soup(html: str) -> BeautifulSoup:
    return BeautifulSoup(html, "html.parser")


def words(el: Tag | None) -> str:
    assert el is not None
    return " ".join(el.get_text(" ").split())


def card_html(templates: Jinja2Templates, **perm: Any) -> str:
    base = {"permission_id": "p1", "tool": "AskUserQuestion", "status": "pending"}
    return templates.get_template("cards/_permission.html").render(perm={**base, **perm})


# -- the question card, rendered -----------------------------------------------------------


@pytest.mark.parametrize("key", ["prompt", "kind"])
def test_question_card_has_a_field_per_choice_and_other(
    templates: Jinja2Templates, key: str
) -> None:
    # A stored event says "prompt", an API row "kind": the dispatcher reads either.
    page = soup(card_html(templates, input={"questions": QUESTIONS}, **{key: "question"}))
    card = page.select_one(".perm.pending")
    assert card is not None and card["data-prompt"] == "question"
    sets = card.select("fieldset.question")
    assert [words(s.legend) for s in sets] == [
        "Database Which database should I use?",
        "Extras Which extras?",
    ]
    first, second = sets
    radios = first.select("input[type=radio][name=answer-0]")
    assert [r["value"] for r in radios] == ["SQLite", "Postgres"]
    assert first.select("input[type=checkbox]") == []
    boxes = second.select("input[type=checkbox][name=answer-1]")
    assert [b["value"] for b in boxes] == ["Auth", "Search"]
    assert [words(d) for d in first.select(".q-desc")] == ["one file, no server", "a server"]
    assert first.select_one("input[type=text][name=other-0]") is not None
    assert second.select_one("input[type=text][name=other-1]") is not None
    assert "instead of a choice" in words(first.select_one(".q-other"))
    assert "added to the choices" in words(second.select_one(".q-other"))
    # Every input is inside its label.
    for field in card.select("fieldset input"):
        assert field.find_parent("label") is not None
    buttons = [(b["name"], b["value"], words(b)) for b in card.select("button[type=submit]")]
    assert buttons == [("decision", "allow_once", "Answer"), ("decision", "deny", "Decline ⎋")]
    # Enter never answers a question: the Answer button has no key of its own.
    assert card.select_one("button[value=allow_once][aria-keyshortcuts]") is None
    assert "Enter does not answer" in words(card.select_one(".perm-keys"))


def test_question_card_escapes_what_the_agent_wrote(templates: Jinja2Templates) -> None:
    hostile = [
        {
            "question": HOSTILE,
            "header": HOSTILE,
            "options": [{"label": HOSTILE, "description": HOSTILE}],
            "multiSelect": False,
        }
    ]
    html = card_html(templates, input={"questions": hostile}, prompt="question")
    assert_no_active_markup(html)
    assert HOSTILE not in html
    radio = soup(html).select_one("input[name=answer-0]")
    assert radio is not None and radio["value"] == HOSTILE


def test_question_card_keeps_what_was_sent_when_refused(templates: Jinja2Templates) -> None:
    sent = {"answer-0": ["Postgres"], "other-1": ["Docs"], "message": ["hm"]}
    html = templates.get_template("cards/_permission.html").render(
        perm={
            "permission_id": "p1",
            "status": "pending",
            "kind": "question",
            "input": {"questions": QUESTIONS},
        },
        notice="answers: answer the question 'Which extras?'",
        form_values=sent,
    )
    page = soup(html)
    checked = page.select("input[checked]")
    assert [c["value"] for c in checked] == ["Postgres"]
    other = page.select_one("input[name=other-1]")
    assert other is not None and other["value"] == "Docs"
    assert "Which extras?" in words(page.select_one(".notice[role=alert]"))


def test_unreadable_questions_say_so(templates: Jinja2Templates) -> None:
    page = soup(card_html(templates, input={"questions": "nope"}, prompt="question"))
    assert "could not be read" in words(page.select_one(".perm .notice"))


def test_answered_question_shows_the_answers_stored_and_live(
    templates: Jinja2Templates,
) -> None:
    answers = {"Which database should I use?": "SQLite", "Which extras?": "Auth, Search"}
    events = [
        ev(
            1,
            "permission_request",
            permission_id="p1",
            tool="AskUserQuestion",
            input={"questions": QUESTIONS},
            prompt="question",
            status="pending",
        ),
        ev(
            2,
            "permission_decision",
            permission_id="p1",
            tool="AskUserQuestion",
            prompt="question",
            decision="allow_once",
            source="user",
            answers=answers,
        ),
    ]
    expected = "Answered · Which database should I use? SQLite · Which extras? Auth, Search"
    stored = soup(render_event(templates, fold_events(events)[0]))
    assert words(stored.select_one(".perm.decided .outcome")) == expected
    assert stored.select_one(".perm.decided")["data-prompt"] == "question"  # type: ignore[index]
    live = soup(render_event(templates, events[1]))
    assert words(live.select_one(".decision-text")) == expected
    assert live.select_one(".tool") is None

    declined = {**events[1], "decision": "deny", "answers": None, "message": "later"}
    line = soup(render_event(templates, declined))
    assert words(line.select_one(".decision-text")) == "Declined by you"
    assert words(line.select_one(".decision-message")) == "— later"


# -- the decision form, over HTTP ----------------------------------------------------------


async def prompt_session(
    client: httpx.AsyncClient,
    project_dir: Path,
    fake: dict[str, Any],
    step: dict[str, Any],
    **profile: Any,
) -> tuple[str, dict[str, Any]]:
    """A session whose agent's first step asks (``step``); (session, the request event)."""
    write_scenario(fake["scenario"], [[{**step, "permission": True}, {"text": "ok"}]])
    sid = await make_session(client, project_dir, fake, **profile)
    await send(client, sid, "go on")
    events = await wait_for_events(client, sid, count("permission_request"))
    [request] = of_kind(events, "permission_request")
    return sid, request


async def question_session(
    client: httpx.AsyncClient, project_dir: Path, fake: dict[str, Any]
) -> tuple[str, str]:
    """A session whose agent asks QUESTIONS; (session, permission id)."""
    ask = {"tool": "AskUserQuestion", "input": {"questions": QUESTIONS}}
    sid, request = await prompt_session(client, project_dir, fake, ask)
    assert request["prompt"] == "question"
    return sid, str(request["permission_id"])


async def test_question_form_is_refused_until_every_question_has_an_answer(
    client: httpx.AsyncClient, project_dir: Path, fake_claude: dict[str, Any]
) -> None:
    sid, pid = await question_session(client, project_dir, fake_claude)
    page = soup((await client.get(f"/sessions/{sid}")).text)
    assert page.select_one(f"#perm-{pid}.perm-question fieldset.question") is not None

    r = await client.post(
        f"/permissions/{pid}/decision",
        data={"decision": "allow_once", "answer-0": "Postgres", "other-0": ""},
    )
    assert r.status_code == 422
    card = soup(r.text).select_one(".perm.pending")
    assert card is not None
    assert "Which extras?" in words(card.select_one(".notice"))
    assert [c["value"] for c in card.select("input[checked]")] == ["Postgres"]
    pending = (await client.get("/api/permissions", params={"session_id": sid})).json()
    assert pending[0]["status"] == "pending"

    r = await client.post(f"/permissions/{pid}/decision", data={"decision": "allow_always"})
    assert r.status_code == 422
    assert "allow_once" in words(soup(r.text).select_one(".notice"))

    # One choice and the user's own words replace it; several choices get them added.
    r = await client.post(
        f"/permissions/{pid}/decision",
        data={
            "decision": "allow_once",
            "answer-0": "SQLite",
            "other-0": "DuckDB",
            "answer-1": ["Auth", "Search"],
            "other-1": "Docs",
        },
    )
    assert r.status_code == 200, r.text
    stored = {"Which database should I use?": "DuckDB", "Which extras?": "Auth, Search, Docs"}
    decided = soup(r.text).select_one(".perm.decided")
    assert decided is not None
    assert words(decided.select_one(".outcome")) == (
        "Answered · Which database should I use? DuckDB · Which extras? Auth, Search, Docs"
    )
    events = await wait_for_events(client, sid, count("turn_end"))
    [decision] = of_kind(events, "permission_decision")
    assert decision["answers"] == stored
    assert (await client.get("/api/permissions", params={"session_id": sid})).json()[0][
        "answers"
    ] == stored

    page = soup((await client.get(f"/sessions/{sid}")).text)
    assert "DuckDB" in words(page.select_one(f"#perm-{pid} .outcome"))


async def test_declining_a_question_from_the_card(
    client: httpx.AsyncClient, project_dir: Path, fake_claude: dict[str, Any]
) -> None:
    sid, pid = await question_session(client, project_dir, fake_claude)
    r = await client.post(
        f"/permissions/{pid}/decision",
        data={"decision": "deny", "answer-0": "SQLite", "message": "decide yourself"},
    )
    assert r.status_code == 200, r.text
    card = soup(r.text).select_one(".perm.decided.is-denied")
    assert card is not None and words(card.select_one(".outcome")) == "Declined by you"
    row = (await client.get("/api/permissions", params={"session_id": sid})).json()[0]
    assert row["decision"] == "deny" and row["message"] == "decide yourself"
    assert row["answers"] is None


# -- the plan card -------------------------------------------------------------------------

PLAN = "# Plan\n\n1. write `hello.txt`\n2. say done"


def test_plan_card_renders_the_plan_as_safe_markdown(templates: Jinja2Templates) -> None:
    plan = PLAN + f"\n\n{HOSTILE}\n\n<img src=x onerror=alert(1)>"
    html = card_html(templates, tool="ExitPlanMode", prompt="plan", input={"plan": plan})
    assert_no_active_markup(html)
    page = soup(html)
    card = page.select_one(".perm.pending.perm-plan")
    assert card is not None and card["data-prompt"] == "plan"
    body = card.select_one(".plan-md")
    # The plan's own "# Plan" sits under the card, two levels down.
    assert body is not None and words(body.select_one("h3.md-h1")) == "Plan"
    assert [words(li) for li in body.select("ol li")] == ["write hello.txt", "say done"]
    assert "<script>alert(1)</script>" in body.get_text()  # shown as text, not run
    buttons = [(b["name"], b["value"], words(b)) for b in card.select("button[type=submit]")]
    assert buttons == [
        ("approve", "acceptEdits", "Approve, auto-accept edits"),
        ("approve", "default", "Approve, ask for edits"),
        ("decision", "deny", "Keep planning ⎋"),
    ]
    feedback = card.select_one("label.perm-message textarea[name=message]")
    assert feedback is not None
    assert "Enter does not approve" in words(card.select_one(".perm-keys"))


def test_an_empty_plan_says_so(templates: Jinja2Templates) -> None:
    for given in ({}, {"plan": "  "}, {"plan": 3}):
        page = soup(card_html(templates, prompt="plan", input=given))
        assert "sent no plan text" in words(page.select_one(".plan-empty"))
    page = soup(card_html(templates, prompt="plan", input={"planFilePath": "/p/plan.md"}))
    assert words(page.select_one(".perm .path")) == "Plan file: /p/plan.md"


@pytest.mark.parametrize(
    ("decision", "extra", "expected"),
    [
        ("allow_once", {"mode": "acceptEdits"}, "Plan approved · continues in acceptEdits"),
        ("allow_once", {}, "Plan approved · continues in default"),
        ("deny", {"message": "add a test step"}, "Kept planning: add a test step"),
        ("deny", {"message": ""}, "Kept planning"),
    ],
)
def test_decided_plan_line(
    templates: Jinja2Templates, decision: str, extra: dict[str, Any], expected: str
) -> None:
    answered = ev(
        2,
        "permission_decision",
        permission_id="p1",
        tool="ExitPlanMode",
        prompt="plan",
        decision=decision,
        source="user",
        **extra,
    )
    asked = ev(1, "permission_request", permission_id="p1", prompt="plan", input={"plan": PLAN})
    card = soup(render_event(templates, fold_events([asked, answered])[0]))
    assert words(card.select_one(".perm.decided .outcome")) == expected
    line = soup(render_event(templates, answered))
    assert words(line.select_one(".decision-text")) == expected
    assert line.select_one(".decision-message") is None


async def plan_session(
    client: httpx.AsyncClient, project_dir: Path, fake: dict[str, Any]
) -> tuple[str, str]:
    exit_plan = {"tool": "ExitPlanMode", "input": {"plan": PLAN}}
    sid, request = await prompt_session(
        client, project_dir, fake, exit_plan, permission_mode="plan"
    )
    assert request["prompt"] == "plan"
    return sid, str(request["permission_id"])


async def test_approving_a_plan_from_the_card_switches_the_mode(
    client: httpx.AsyncClient, project_dir: Path, fake_claude: dict[str, Any]
) -> None:
    sid, pid = await plan_session(client, project_dir, fake_claude)
    page = soup((await client.get(f"/sessions/{sid}")).text)
    assert words(page.select_one(f"#perm-{pid} .plan-md h3.md-h1")) == "Plan"

    r = await client.post(f"/permissions/{pid}/decision", data={"approve": "bypassPermissions"})
    assert r.status_code == 422
    card = soup(r.text).select_one(".perm.pending.perm-plan")
    assert card is not None and "mode" in words(card.select_one(".notice"))

    r = await client.post(f"/permissions/{pid}/decision", data={"approve": "acceptEdits"})
    assert r.status_code == 200, r.text
    outcome = words(soup(r.text).select_one(".perm.decided .outcome"))
    assert outcome == "Plan approved · continues in acceptEdits"
    events = await wait_for_events(client, sid, count("turn_end"))
    [decision] = of_kind(events, "permission_decision")
    assert decision["mode"] == "acceptEdits"
    assert (await client.get(f"/api/sessions/{sid}")).json()["permission_mode"] == "acceptEdits"
    page = soup((await client.get(f"/sessions/{sid}")).text)
    assert words(page.select_one(f"#perm-{pid} .outcome")) == outcome


async def test_keep_planning_from_the_card_sends_the_feedback(
    client: httpx.AsyncClient, project_dir: Path, fake_claude: dict[str, Any]
) -> None:
    sid, pid = await plan_session(client, project_dir, fake_claude)
    r = await client.post(
        f"/permissions/{pid}/decision", data={"decision": "deny", "message": "add a test step"}
    )
    assert r.status_code == 200, r.text
    assert words(soup(r.text).select_one(".perm.decided .outcome")) == (
        "Kept planning: add a test step"
    )
    row = (await client.get("/api/permissions", params={"session_id": sid})).json()[0]
    assert (row["decision"], row["message"]) == ("deny", "add a test step")
