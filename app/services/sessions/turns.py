"""Pure helpers for a turn's events: merging text deltas, counting cost and tokens."""

from __future__ import annotations

from typing import Any

from app.brains.events import BrainEvent, TextDelta, TurnEnded
from app.db.models import ChatSession


def turn_share(
    reported: float | None, last_total: float | None, session_cost: float
) -> tuple[float | None, float | None]:
    """(this turn's cost, the running total to remember) from a backend's report.

    Claude reports the process's running total, so the turn's own share is the
    difference. On a process's first report, a backend whose total spans earlier
    processes (a resumed ACP session) has already been counted up to here.
    """
    if reported is None:
        return None, last_total
    if last_total is None:
        cumulative = session_cost > 0 and reported >= session_cost
        last_total = session_cost if cumulative else 0.0
    return max(reported - last_total, 0.0), reported


def session_totals(chat: ChatSession, event: TurnEnded, turn_cost: float | None) -> dict[str, Any]:
    """The session's counters after this turn."""
    usage = event.usage or {}
    return {
        "turns": chat.turns + 1,
        "cost_usd": chat.cost_usd + (turn_cost or 0.0),
        "input_tokens": chat.input_tokens + token_count(usage.get("input_tokens")),
        "output_tokens": chat.output_tokens + token_count(usage.get("output_tokens")),
    }


def token_count(value: object) -> int:
    """A backend's token count if it is a sane number, else 0 (never a crash)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return 0
    if value != value or not 0 <= value < 2**53:  # NaN, negative, or beyond exact ints
        return 0
    return int(value)


def coalesce_deltas(batch: list[BrainEvent]) -> list[BrainEvent]:
    """Merge runs of text deltas of one message that were ready at the same moment.

    Nothing waits for more text, so a quiet stream keeps its token-by-token feel; a
    burst becomes one stored event per run instead of one per token. No text is lost:
    the pieces are joined in order.
    """
    out: list[BrainEvent] = []
    run: list[TextDelta] = []

    def end_run() -> None:
        if len(run) == 1:
            out.append(run[0])
        elif run:
            out.append(TextDelta(text="".join(d.text for d in run), message_id=run[0].message_id))
        run.clear()

    for event in batch:
        if isinstance(event, TextDelta):
            if run and run[0].message_id != event.message_id:
                end_run()
            run.append(event)
        else:
            end_run()
            out.append(event)
    end_run()
    return out
