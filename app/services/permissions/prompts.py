"""What answering a question or a plan means, independent of any backend.

A question prompt (the agent's ``AskUserQuestion``) is allowed with the user's answers
added to its input; a plan prompt (``ExitPlanMode``) is allowed together with the
permission mode the session continues in. These checks are pure so the API, the page
form and the tests share them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from app.errors import ValidationFailed

# Modes a plan approval may switch to: both leave plan mode, and neither skips the
# user's approval of tools the way bypassPermissions would.
PLAN_APPROVAL_MODES: tuple[str, ...] = ("acceptEdits", "default")
MAX_ANSWER_CHARS = 10_000


@dataclass(frozen=True)
class Question:
    """One of the questions in an ``AskUserQuestion`` input, as the card shows it."""

    question: str
    header: str
    options: tuple[tuple[str, str], ...]  # (label, description)
    multi_select: bool


def questions_of(tool_input: dict[str, Any]) -> list[Question]:
    """The well-formed questions in a question prompt's input; odd entries are skipped."""
    out: list[Question] = []
    raw = tool_input.get("questions")
    for item in raw if isinstance(raw, list) else []:
        if not isinstance(item, dict) or not isinstance(item.get("question"), str):
            continue
        options = []
        raw_options = item.get("options")
        for opt in raw_options if isinstance(raw_options, list) else []:
            if isinstance(opt, dict) and isinstance(opt.get("label"), str):
                desc = opt.get("description")
                options.append((opt["label"], desc if isinstance(desc, str) else ""))
        header = item.get("header")
        out.append(
            Question(
                question=item["question"],
                header=header if isinstance(header, str) else "",
                options=tuple(options),
                multi_select=item.get("multiSelect") is True,
            )
        )
    return out


def check_answers(tool_input: dict[str, Any], answers: dict[str, Any]) -> dict[str, str]:
    """Normalise answers to ``{question: text}``; raises ``ValueError`` saying what is wrong.

    Every question needs an answer: one of its labels or the user's own words ("Other").
    Several labels of a multiple-choice question arrive as a list and are joined with
    ", ", which is how the CLI itself reports them to the model.
    """
    questions = {q.question: q for q in questions_of(tool_input)}
    unknown = [k for k in answers if k not in questions]
    if unknown:
        raise ValueError(f"no such question: {unknown[0]!r}")
    out: dict[str, str] = {}
    for text, q in questions.items():
        value = answers.get(text)
        if isinstance(value, list):
            if not q.multi_select and len(value) > 1:
                raise ValueError(f"{text!r} takes one answer, not {len(value)}")
            value = ", ".join(v.strip() for v in value if isinstance(v, str) and v.strip())
        if not isinstance(value, str) or not value.strip():
            raise ValueError(f"answer the question {text!r}")
        if len(value) > MAX_ANSWER_CHARS:
            raise ValueError(f"the answer to {text!r} is longer than {MAX_ANSWER_CHARS} characters")
        out[text] = value.strip()
    return out


def answered_input(tool_input: dict[str, Any], answers: dict[str, str]) -> dict[str, Any]:
    """The input an allow sends back: the question input plus the answers."""
    return {**tool_input, "answers": dict(answers)}


@dataclass(frozen=True)
class CheckedDecision:
    answers: dict[str, str] | None
    mode: str


def check_decision(
    kind: str,
    tool_input: dict[str, Any],
    choice: str,
    answers: dict[str, Any] | None,
    mode: str | None,
) -> CheckedDecision:
    """Check a decision's extras against the prompt's kind; ``ValidationFailed`` if wrong.

    A question is allowed only with answers; a plan approval continues in ``mode``
    (``default`` unless the user chose otherwise); "always" fits neither.
    """
    allowed = choice in ("allow_once", "allow_always")
    if kind != "tool" and choice == "allow_always":
        raise ValidationFailed("decision", f"a {kind} is answered once; use allow_once")
    if answers is not None and (kind != "question" or not allowed):
        raise ValidationFailed("answers", "answers only go with allow_once on a question")
    if mode is not None and (kind != "plan" or not allowed):
        raise ValidationFailed("mode", "a mode only goes with approving a plan (allow_once)")
    if kind == "question" and allowed:
        if not answers:
            raise ValidationFailed("answers", "answer the questions, or deny to decline them")
        try:
            return CheckedDecision(check_answers(tool_input, answers), "")
        except ValueError as exc:
            raise ValidationFailed("answers", str(exc)) from None
    if kind == "plan" and allowed:
        chosen = mode or "default"
        if chosen not in PLAN_APPROVAL_MODES:
            modes = " or ".join(PLAN_APPROVAL_MODES)
            raise ValidationFailed("mode", f"after a plan the session continues in {modes}")
        return CheckedDecision(None, chosen)
    return CheckedDecision(None, "")
