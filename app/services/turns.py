"""Pure helpers for a turn's events: merging text deltas, counting tokens."""

from __future__ import annotations

from app.brains.events import BrainEvent, TextDelta


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
