"""Steering API: send a message into the running turn instead of queueing it."""

from __future__ import annotations

from fastapi import APIRouter
from pydantic import BaseModel, ConfigDict, Field, field_validator

from app.nul import Input
from app.web.deps import StateDep
from app.web.history.terminal import refuse_if_followed

router = APIRouter(prefix="/api", tags=["sessions"])


class SteerIn(Input):
    model_config = ConfigDict(extra="forbid")

    text: str = Field(max_length=1_000_000)

    @field_validator("text")
    @classmethod
    def _not_blank(cls, text: str) -> str:
        if not text.strip():
            raise ValueError("message is empty")
        return text


class SteerStatePublic(BaseModel):
    can_steer: bool
    reason: str


class Steered(BaseModel):
    ok: bool = True
    seq: int


@router.get("/sessions/{session_id}/steer")
async def steer_state(session_id: str, state: StateDep) -> SteerStatePublic:
    """Whether a message can go into the running turn; ``reason`` says why not."""
    now = state.manager.steering.state(session_id)
    return SteerStatePublic(can_steer=now.can_steer, reason=now.reason)


@router.post("/sessions/{session_id}/steer", status_code=202)
async def steer(session_id: str, body: SteerIn, state: StateDep) -> Steered:
    """Send a message into the running turn; the agent reads it at its next step.

    409 with the reason, and nothing stored or sent, when no turn runs, a request
    waits for an answer, or the backend cannot take it (queue it with ``/messages``).
    """
    refuse_if_followed(state, session_id)
    seq = await state.manager.steering.steer(session_id, body.text)
    return Steered(seq=seq)
