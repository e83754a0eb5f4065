"""What an ACP agent's answers mean for the app: how a ``session/prompt`` ended, and
the cause behind an error answer."""

from __future__ import annotations

from acp import RequestError
from acp.schema import PromptResponse

from app.brains.events import JsonDict, TurnEnded

__all__ = ["error_reason", "turn_ended"]

_ERROR_STOPS = {
    "refusal": "{label} refused this prompt; it and what follows will not be in its context.",
    "max_tokens": "{label} stopped: it reached its token limit.",
    "max_turn_requests": "{label} stopped: it reached its limit of model requests per turn.",
}


def turn_ended(
    response: PromptResponse,
    *,
    label: str,
    cancel_requested: bool,
    cost_usd: float | None,
    duration_ms: int,
    result: str,
) -> TurnEnded:
    """The ``TurnEnded`` for a ``session/prompt`` answer; abnormal stops are flagged."""
    reason = str(response.stop_reason)
    if cancel_requested and reason == "end_turn":
        # Some agents finish with end_turn after a cancel (claude-agent-acp PR #694).
        reason = "cancelled"
    note = _ERROR_STOPS.get(reason)
    usage: JsonDict = {}
    if response.usage is not None:
        usage = response.usage.model_dump(exclude_none=True, exclude={"field_meta"})
    return TurnEnded(
        stop_reason=reason,
        is_error=note is not None,
        cost_usd=cost_usd,
        duration_ms=duration_ms,
        usage=usage,
        result=result,
        errors=(note.format(label=label),) if note else (),
    )


def error_reason(exc: RequestError) -> str:
    """An agent's error answer as text, with the cause agents put in its data (gemini:
    "Internal error" plus {"details": "No previous sessions found for this project."})."""
    reason = str(exc)
    data = exc.data if isinstance(exc.data, dict) else {}
    details = data.get("details") or data.get("message")
    if isinstance(details, str) and details.strip() and details.strip() not in reason:
        reason = f"{reason}: {details.strip()}"
    return reason
