"""How full Claude Code's context is, from the figures the CLI reports.

What the next model request will carry is what the newest main-agent model call read
(``input_tokens`` + ``cache_read_input_tokens`` + ``cache_creation_input_tokens``) plus
what it wrote (``output_tokens``): the CLI's own ``compact_boundary`` counts the same sum
as its ``pre_tokens``. The call's input side is in ``message_start`` (and each
``assistant`` line), its final output count in ``message_delta``; the window is the
model's ``contextWindow`` in the ``result``'s ``modelUsage``. A subagent's calls run in
a context of their own and are not counted.
"""

from __future__ import annotations

from app.brains.claude.fields import as_count, as_dict, as_str
from app.brains.events import Compacted, JsonDict, Usage

__all__ = ["ContextMeter"]

_INPUT_FIELDS = ("input_tokens", "cache_read_input_tokens", "cache_creation_input_tokens")


class ContextMeter:
    """The newest main-agent call's figures; ``usage()`` says them once a window is known."""

    def __init__(self) -> None:
        self._message_id = ""
        self._model = ""
        self._input: int | None = None
        self._output = 0
        self._window = 0

    def message_start(self, message: JsonDict) -> None:
        """A main-agent model call began (``stream_event`` ``message_start``)."""
        self._message_id = as_str(message.get("id"))
        self._model = as_str(message.get("model")) or self._model
        self._take(as_dict(message.get("usage")), output=False)

    def message_delta(self, usage: JsonDict) -> None:
        """The call's running totals (``stream_event`` ``message_delta``)."""
        self._take(usage, output=True)

    def assistant(self, message: JsonDict) -> None:
        """An ``assistant`` line; counts on its own only for a call no stream announced."""
        message_id = as_str(message.get("id"))
        if message_id and message_id == self._message_id:
            return
        self._message_id = message_id
        self._model = as_str(message.get("model")) or self._model
        self._take(as_dict(message.get("usage")), output=True)

    def compacted(self, metadata: JsonDict) -> Compacted:
        """A ``compact_boundary``'s ``compact_metadata``; from then on the conversation is
        the CLI's summary, of ``post_tokens``."""
        after = as_count(metadata.get("post_tokens"))
        if after is not None:
            self._input, self._output = after, 0
        return Compacted(
            trigger=as_str(metadata.get("trigger")),
            before=as_count(metadata.get("pre_tokens")),
            after=after,
        )

    def result(self, model_usage: JsonDict) -> Usage | None:
        """The figures at a turn's end (``result``), or None while any is unknown."""
        windows = {
            name: as_count(as_dict(figures).get("contextWindow"))
            for name, figures in model_usage.items()
        }
        window = windows.get(self._model)
        if window is None and len(windows) == 1:
            window = next(iter(windows.values()))
        self._window = window or self._window
        if self._input is None or not self._window:
            return None
        return Usage(used=self._input + self._output, size=self._window)

    def _take(self, usage: JsonDict, *, output: bool) -> None:
        counts = [as_count(usage.get(name)) for name in _INPUT_FIELDS]
        if any(name in usage for name in _INPUT_FIELDS):
            self._input = sum(c or 0 for c in counts)
            self._output = 0
        if output and (out := as_count(usage.get("output_tokens"))) is not None:
            self._output = out
