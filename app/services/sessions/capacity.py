"""The server-wide cap on agent processes running at once (``Settings.max_agents``).

Every start of a brain claims a place before its process is spawned and keeps it while
the brain is live, so requests arriving together cannot start more than the cap between
them. A request that starts several (a comparison) holds all its places first: it is
refused whole, before anything is made, or every one of its starts has a place. All of
this runs on the event loop, so a check and the claim after it are never interleaved.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from app.errors import AgentCapReached

__all__ = ["AgentCap", "Hold"]


@dataclass
class Hold:
    """Places kept for starts to come; ``left`` are not used yet."""

    left: int


class AgentCap:
    """``running`` counts the live brains; places being started or held add to them."""

    def __init__(self, cap: int, running: Callable[[], int]) -> None:
        self.cap = cap
        self._running = running
        self._pending = 0

    def in_use(self) -> int:
        return self._running() + self._pending

    def check(self, wanted: int = 1) -> None:
        """Raises AgentCapReached (422) when ``wanted`` more would go over the cap."""
        if self.in_use() + wanted > self.cap:
            raise AgentCapReached(
                f"This server runs at most {self.cap} agents at once (max_agents) and "
                f"{self.in_use()} are running or starting, so {wanted} more cannot start "
                "now. Stop a session or wait for one to go idle, or raise the cap: "
                "angelia serve --max-agents N (or ANGELIA_MAX_AGENTS=N)."
            )

    @contextmanager
    def hold(self, wanted: int) -> Iterator[Hold]:
        """``wanted`` places for the starts made inside; unused ones are given back."""
        self.check(wanted)
        held = Hold(wanted)
        self._pending += wanted
        try:
            yield held
        finally:
            self._pending -= held.left

    @contextmanager
    def starting(self, held: Hold | None = None) -> Iterator[None]:
        """A place for one brain while it starts (from ``held`` if it has one left);
        the caller counts it among the running before leaving."""
        if held is not None and held.left > 0:
            held.left -= 1
        else:
            self.check()
            self._pending += 1
        try:
            yield
        finally:
            self._pending -= 1
