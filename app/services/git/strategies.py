"""Which ways of merging a branch into its base are possible now, and why not the others.

A fast-forward only moves the base to the branch's last commit, so it needs a base with
no commits of its own since they parted; a merge commit and a squash build a new commit
from the merged tree, so they need a merge without conflicts. Nothing is possible while
the base already has every change of the branch. The panel offers only what is possible
and says why not for the rest; ``merge`` refuses the same cases (``StrategyNotPossible``)
before anything moves.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from app.services.git.command import GitError
from app.wording import counted

__all__ = [
    "LABELS",
    "STRATEGIES",
    "Strategy",
    "StrategyNotPossible",
    "StrategyOption",
    "fast_forward_blocked",
    "options",
]

Strategy = Literal["ff", "merge", "squash"]
STRATEGIES: tuple[Strategy, ...] = ("ff", "merge", "squash")
LABELS: dict[Strategy, str] = {"ff": "Fast-forward", "merge": "Merge commit", "squash": "Squash"}


@dataclass(frozen=True)
class StrategyOption:
    strategy: Strategy
    label: str
    possible: bool
    why_not: str  # why it is not possible now, in a few words; "" when it is


class StrategyNotPossible(GitError):
    """The branch cannot be merged into its base that way now; nothing was changed."""

    def __init__(self, strategy: Strategy, message: str) -> None:
        super().__init__(message)
        self.strategy = strategy


def fast_forward_blocked(into: str, behind: int) -> str:
    """Why ``into`` cannot simply move to the branch: its own commits since they parted."""
    return f"{into} has {counted(behind, 'commit')} this branch does not"


def _conflicting(into: str, files: list[str]) -> str:
    shown = ", ".join(files[:3]) + (f" and {len(files) - 3} more" if len(files) > 3 else "")
    verb = "conflicts" if len(files) == 1 else "conflict"
    return f"{counted(len(files), 'file')} {verb} with {into} ({shown})"


def options(into: str, behind: int, conflicts: list[str]) -> list[StrategyOption]:
    """Each strategy for a branch with commits ``into`` lacks: possible, or why not.

    ``behind`` counts the commits ``into`` has that the branch lacks; ``conflicts`` are
    the files a merge of the two would conflict in.
    """
    why: dict[Strategy, str] = {s: "" for s in STRATEGIES}
    if behind:
        why["ff"] = fast_forward_blocked(into, behind)
    if conflicts:
        why["merge"] = why["squash"] = _conflicting(into, conflicts)
    return [StrategyOption(s, LABELS[s], not why[s], why[s]) for s in STRATEGIES]
