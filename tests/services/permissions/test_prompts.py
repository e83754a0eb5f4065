"""The pure rules for answering a question prompt or approving a plan."""

from __future__ import annotations

import re

import pytest

from app.errors import ValidationFailed
from app.services.permissions.prompts import (
    answered_input,
    check_answers,
    check_decision,
    questions_of,
)

QUESTIONS = {
    "questions": [
        {
            "question": "Which database?",
            "header": "DB",
            "options": [
                {"label": "SQLite", "description": "a file"},
                {"label": "Postgres", "description": "a server"},
            ],
            "multiSelect": False,
        },
        {
            "question": "Which extras?",
            "header": "Extras",
            "options": [{"label": "Auth"}, {"label": "Search"}],
            "multiSelect": True,
        },
    ]
}


def test_questions_of_reads_well_formed_entries_and_skips_odd_ones() -> None:
    odd = {"questions": [*QUESTIONS["questions"], {"header": "no text"}, "junk", {"question": 3}]}
    qs = questions_of(odd)
    assert [q.question for q in qs] == ["Which database?", "Which extras?"]
    assert qs[0].options == (("SQLite", "a file"), ("Postgres", "a server"))
    assert qs[1].options == (("Auth", ""), ("Search", "")) and qs[1].multi_select
    assert questions_of({"questions": "nope"}) == [] and questions_of({}) == []


def test_answers_join_multiple_choices_and_keep_free_text() -> None:
    got = check_answers(
        QUESTIONS, {"Which database?": " my own DB ", "Which extras?": ["Auth", "Search"]}
    )
    assert got == {"Which database?": "my own DB", "Which extras?": "Auth, Search"}
    assert answered_input(QUESTIONS, got)["answers"] == got
    assert "answers" not in QUESTIONS  # the stored input is not changed


@pytest.mark.parametrize(
    ("answers", "reason"),
    [
        ({"Which database?": "SQLite"}, "answer the question 'Which extras?'"),
        ({"Which database?": "SQLite", "Which extras?": "  "}, "answer the question"),
        ({"Which database?": ["SQLite", "Postgres"], "Which extras?": "Auth"}, "takes one"),
        ({"Who?": "me", "Which database?": "SQLite", "Which extras?": "Auth"}, "no such question"),
        ({"Which database?": "x" * 10_001, "Which extras?": "Auth"}, "longer than"),
    ],
)
def test_bad_answers_say_what_is_wrong(answers: dict[str, object], reason: str) -> None:
    with pytest.raises(ValueError, match=re.escape(reason)):
        check_answers(QUESTIONS, answers)


def test_a_question_needs_answers_and_is_answered_once() -> None:
    with pytest.raises(ValidationFailed, match="answers: answer the questions"):
        check_decision("question", QUESTIONS, "allow_once", None, None)
    with pytest.raises(ValidationFailed, match="decision: a question is answered once"):
        check_decision("question", QUESTIONS, "allow_always", {"x": "y"}, None)
    with pytest.raises(ValidationFailed, match="answers: no such question"):
        check_decision("question", QUESTIONS, "allow_once", {"x": "y"}, None)
    with pytest.raises(ValidationFailed, match="answers: answer the question 'Which extras"):
        check_decision(
            "question",
            QUESTIONS,
            "allow_once",
            {"Which database?": "SQLite", "Which extras?": []},
            None,
        )
    ok = check_decision(
        "question",
        QUESTIONS,
        "allow_once",
        {"Which database?": "SQLite", "Which extras?": "Auth"},
        None,
    )
    assert ok.answers == {"Which database?": "SQLite", "Which extras?": "Auth"}
    declined = check_decision("question", QUESTIONS, "deny", None, None)
    assert declined.answers is None and declined.mode == ""


def test_a_plan_approval_picks_a_mode_that_leaves_plan_mode() -> None:
    assert check_decision("plan", {}, "allow_once", None, None).mode == "default"
    assert check_decision("plan", {}, "allow_once", None, "acceptEdits").mode == "acceptEdits"
    for bad in ("plan", "bypassPermissions", "dontAsk"):
        with pytest.raises(ValidationFailed, match="mode: after a plan"):
            check_decision("plan", {}, "allow_once", None, bad)
    with pytest.raises(ValidationFailed, match="mode: a mode only goes with approving a plan"):
        check_decision("plan", {}, "deny", None, "default")
    with pytest.raises(ValidationFailed, match="mode: a mode only goes"):
        check_decision("tool", {}, "allow_once", None, "default")
    with pytest.raises(ValidationFailed, match="answers: answers only go"):
        check_decision("tool", {}, "allow_once", {"a": "b"}, None)
    assert check_decision("tool", {}, "allow_always", None, None).mode == ""
