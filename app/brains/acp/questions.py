"""An ACP agent's permission questions as the user sees them.

``PermissionDesk`` turns each ``session/request_permission`` into a ``PermissionAsked``
for the tool call it is about, waits for the user's answer, and says
``PermissionCancelled`` for every question that goes away unanswered. Which questions may
be asked at all (the right session, no cancel or history replay under way) stays with the
brain; the questions themselves are kept by ``OpenQuestions`` (``client``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from acp.schema import AllowedOutcome, RequestPermissionResponse, ToolCallUpdate
from acp.schema import PermissionOption as AcpPermissionOption

from app.brains.acp.client import OpenQuestions, app_options
from app.brains.acp.updates import UpdateMapper
from app.brains.base import PermissionAnswer
from app.brains.events import BrainEvent, PermissionAsked, PermissionCancelled

__all__ = ["PermissionDesk", "allows"]


class PermissionDesk:
    """The open permission questions of one agent session.

    Args:
        mapper: Holds the tool calls the questions are about.
        emit: Where events go (the brain's queue).
    """

    def __init__(self, mapper: UpdateMapper, emit: Callable[[BrainEvent], None]) -> None:
        self._mapper = mapper
        self._emit = emit
        self._questions = OpenQuestions()

    async def ask(
        self, tool_call: ToolCallUpdate, options: Sequence[AcpPermissionOption]
    ) -> RequestPermissionResponse:
        """Ask the user about ``tool_call``; the answer to give the agent."""
        for event in self._mapper.tool_update(tool_call):
            self._emit(event)
        tool = self._mapper.tools[tool_call.tool_call_id]
        request_id, answered = self._questions.open(options)
        tool_name, tool_input = tool.as_claude_tool()
        self._emit(
            PermissionAsked(
                request_id=request_id,
                tool=tool_name,
                input=tool_input,
                options=app_options(options),
                tool_call_id=tool.tool_call_id,
                title=tool.title,
                tool_kind=tool.kind,
            )
        )
        try:
            return await answered
        finally:
            if self._questions.withdraw(request_id):
                # Still open: the connection went away under the question.
                self._emit(PermissionCancelled(request_id=request_id))

    def answer(self, request_id: str, answer: PermissionAnswer) -> bool:
        """Answer one question; False if it is unknown or already answered."""
        return self._questions.answer(request_id, answer)

    def cancel_all(self) -> None:
        """Answer every open question ``cancelled`` and say so for each."""
        for request_id in self._questions.cancel_all():
            self._emit(PermissionCancelled(request_id=request_id))


def allows(response: RequestPermissionResponse, options: Sequence[AcpPermissionOption]) -> bool:
    """Whether an answer to ``session/request_permission`` lets the tool run."""
    outcome = response.outcome
    if not isinstance(outcome, AllowedOutcome):
        return False
    kind = next((o.kind for o in options if o.option_id == outcome.option_id), "")
    return kind.startswith("allow")
