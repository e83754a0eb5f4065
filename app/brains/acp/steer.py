"""Steering an ACP agent: a message into its running turn, where the agent offers it.

There is no steering in ACP itself. codex-acp (2.6.0) advertises it in ``initialize`` as
``_meta.steering.supported`` and takes an extension request ``_session/steering``
``{sessionId, prompt, _meta.steering.idleBehavior}``; its answer's ``outcome`` is
``injected`` when the text joined the running turn. With ``idleBehavior:
"promptRequired"`` an idle session answers ``promptRequired`` instead of starting a turn
of the adapter's own, so the app keeps the message's fate in its hands.
"""

from __future__ import annotations

from typing import Any, Protocol

from app.errors import ConflictError

# ``ext_method`` adds the leading underscore that marks an extension method.
STEERING_METHOD = "session/steering"
INJECTED = "injected"


class SteerableSession(Protocol):
    """What steering needs of an open ACP session."""

    @property
    def label(self) -> str: ...
    def sid(self) -> str: ...
    async def extension(self, method: str, params: dict[str, Any], what: str) -> dict[str, Any]: ...


def advertises_steering(meta: object) -> bool:
    """Whether an ``initialize`` answer's ``_meta`` says the agent takes steering."""
    steering = meta.get("steering") if isinstance(meta, dict) else None
    return isinstance(steering, dict) and steering.get("supported") is True


async def steer_turn(session: SteerableSession, text: str, *, running: bool) -> None:
    """Send ``text`` into the session's running turn.

    ``ConflictError`` when no turn runs or the agent did not put it into the turn.
    """
    if not running:
        raise ConflictError("No turn is running; send the message as a new one.")
    params: dict[str, Any] = {
        "sessionId": session.sid(),
        "prompt": [{"type": "text", "text": text}],
        "_meta": {"steering": {"idleBehavior": "promptRequired"}},
    }
    reply = await session.extension(STEERING_METHOD, params, "the message")
    outcome = reply.get("outcome") if isinstance(reply, dict) else None
    if outcome != INJECTED:
        raise ConflictError(f"{session.label} did not take the message into the turn ({outcome}).")
