"""Messages sent into a running Claude Code turn, and the turn ends they cause.

Measured with Claude Code 2.1.332: a user message written while a turn runs (no
``priority``) is taken up at the next tool boundary, next to the tool result, and the
turn still ends with one ``result``; the CLI echoes it (``--replay-user-messages``) at
the moment it lands. When no tool call is left to wait for, it waits for the turn's
``result`` and the CLI runs it as a turn of its own, so a second ``result`` follows.
So does a stopped turn: the interrupt leaves it queued (``still_queued``) and the CLI
runs it next. The app shows all of that as one turn: a result that comes while a
steering message still waits is held back and merged into the next one.
"""

from __future__ import annotations

from dataclasses import replace

from app.brains.events import SteerLanded, TurnEnded


class SteerBook:
    """The steering messages a Claude Code process has not taken up yet."""

    def __init__(self) -> None:
        # message id -> text, oldest first
        self._waiting: dict[str, str] = {}
        self._held: TurnEnded | None = None

    def sent(self, message_id: str, text: str) -> None:
        self._waiting[message_id] = text

    def echoed(self, message_id: str) -> SteerLanded | None:
        """The landing of ``message_id`` if it is a waiting steering message."""
        if message_id not in self._waiting:
            return None
        return SteerLanded(message_id=message_id, text=self._waiting.pop(message_id))

    def turn_started(self) -> SteerLanded | None:
        """A new turn after a held result: the CLI took the oldest waiting message up.

        Said here and not only on the echo, so a CLI that does not echo still shows it.
        """
        if self._held is None or not self._waiting:
            return None
        message_id = next(iter(self._waiting))
        return SteerLanded(message_id=message_id, text=self._waiting.pop(message_id))

    def turn_ended(self, event: TurnEnded) -> TurnEnded | None:
        """The turn end to report now, or None while a steering message still waits."""
        merged = _merge(self._held, event) if self._held is not None else event
        if self._waiting:
            self._held = merged
            return None
        self._held = None
        return merged


def _merge(first: TurnEnded, last: TurnEnded) -> TurnEnded:
    """One turn end for both parts: the last one's outcome, the sums of their counts.

    The cost needs no sum: Claude Code reports the process's running total.
    """
    usage = dict(last.usage)
    for key, value in first.usage.items():
        if isinstance(value, int) and not isinstance(value, bool):
            earlier = usage.get(key, 0)
            if isinstance(earlier, int) and not isinstance(earlier, bool):
                usage[key] = earlier + value
    duration = None
    if first.duration_ms is not None or last.duration_ms is not None:
        duration = (first.duration_ms or 0) + (last.duration_ms or 0)
    return replace(last, usage=usage, duration_ms=duration)
