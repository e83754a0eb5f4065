"""Words for counts the user reads: "1 file", "2 files", never "file(s)"."""

from __future__ import annotations

__all__ = ["counted"]


def counted(n: int, noun: str, plural: str | None = None) -> str:
    """``n`` and ``noun``, made plural (``plural``, or ``noun`` + "s") unless ``n`` is 1."""
    return f"{n} {noun if n == 1 else (plural or noun + 's')}"
