"""The permission card's form: a tool's decision, a question's answers, a plan's approval.

Every kind of card posts to the same route, which answers with the card again: decided,
or still pending with a notice saying what to fix (422) and the fields as the user left
them. Questions come as fields by position, ``answer-<i>`` (repeated for several choices)
and ``other-<i>`` (the user's own words); ``answers_from_form`` maps them to the question
texts the agent asked.
"""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse
from pydantic import ValidationError
from starlette.datastructures import FormData

from app.errors import ConflictError, ValidationFailed
from app.schemas import DecisionIn
from app.services.permissions.permissions import permission_to_dict
from app.services.permissions.prompts import Question, questions_of
from app.web.chat.lookups import request_event, subagent_of
from app.web.context import base_context, first_error
from app.web.deps import StateDep

router = APIRouter(include_in_schema=False)


def answers_from_form(questions: list[Question], form: FormData) -> dict[str, str | list[str]]:
    """``{question: answer}`` from a question card's fields; unanswered ones are left out.

    One choice: the user's own words (Other) replace the choice. Several choices: their
    own words are one more answer after the ticked ones. More than one value for a
    one-choice question is passed on as a list, for ``check_decision`` to refuse.
    """
    out: dict[str, str | list[str]] = {}
    for i, q in enumerate(questions):
        chosen = [str(v).strip() for v in form.getlist(f"answer-{i}") if str(v).strip()]
        other = str(form.get(f"other-{i}") or "").strip()
        if q.multi_select:
            picked = chosen + ([other] if other else [])
            if picked:
                out[q.question] = picked
        elif other:
            out[q.question] = other
        elif len(chosen) == 1:
            out[q.question] = chosen[0]
        elif chosen:
            out[q.question] = chosen
    return out


@router.post("/permissions/{permission_id}/decision", response_class=HTMLResponse)
async def decide(permission_id: str, request: Request, state: StateDep) -> HTMLResponse:
    """Answer a request from its card; the card comes back in its new state."""
    current = state.manager.permissions.get(permission_id)
    form = await request.form()
    decision = str(form.get("decision") or "")
    message = str(form.get("message") or "")
    answers: dict[str, str | list[str]] | None = None
    mode: str | None = None
    if current.kind == "plan" and form.get("approve"):
        # The two approve buttons say which mode the session continues in.
        decision, mode = "allow_once", str(form.get("approve"))
    if current.kind == "question" and decision == "allow_once":
        answers = answers_from_form(questions_of(current.input), form)
    if current.kind != "tool" and decision.startswith("allow"):
        message = ""  # the message box of a question or plan goes with declining only
    notice = ""
    status = 200
    try:
        body = DecisionIn.model_validate(
            {"decision": decision, "message": message or None, "answers": answers, "mode": mode}
        )
        perm = await state.manager.controls.decide(
            permission_id, body.decision, body.message, answers=body.answers, mode=body.mode
        )
        if perm["kind"] == "plan" and str(perm["decision"]).startswith("allow"):
            perm["mode"] = body.mode or "default"
    except (ValidationError, ValidationFailed) as exc:
        perm = permission_to_dict(state.manager.permissions.get(permission_id))
        notice = first_error(exc) if isinstance(exc, ValidationError) else exc.message
        status = 422
    except ConflictError as exc:
        perm = permission_to_dict(state.manager.permissions.get(permission_id))
        notice = exc.message
    sent = {key: [str(v) for v in form.getlist(key)] for key in form}
    asked = request_event(state.engine, current.session_id, permission_id) or {}
    parent = str(asked.get("parent_tool_call_id") or "")
    context = base_context(request, state) | {
        "perm": {
            **perm,
            "permission_id": perm["id"],
            "preview": asked.get("preview"),
            "blocked_path": asked.get("blocked_path"),
            "blocked_outside": asked.get("blocked_outside"),
            "always_rule": asked.get("always_rule"),
            "parent_tool_call_id": parent,
            "subagent": subagent_of(state.engine, current.session_id, parent) if parent else {},
        },
        "notice": notice,
        # What the user sent, so a refused answer keeps every choice and word.
        "form_values": sent if status == 422 else {},
    }
    return state.templates.TemplateResponse(
        request, "cards/_permission.html", context, status_code=status
    )
