"""Lenient readers of the fields in Claude Code's stdout objects.

The CLI's JSON is trusted for nothing: a field of the wrong type reads as missing, so
an odd line never raises further up.
"""

from __future__ import annotations

import math
from typing import Any

from app.brains.events import JsonDict

__all__ = ["as_count", "as_dict", "as_list", "as_number", "as_str"]


def as_dict(value: Any) -> JsonDict:
    return value if isinstance(value, dict) else {}


def as_list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def as_str(value: Any) -> str:
    return value if isinstance(value, str) else ""


def as_number(value: Any) -> float | None:
    """A usable number, or None: JSON allows inf, NaN and 400-digit integers, which would
    break the turn's accounting (and SQLite's integer columns) further up."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    if isinstance(value, int):
        return value if abs(value) < 2**53 else None
    return value if math.isfinite(value) and abs(value) < 2**53 else None


def as_count(value: Any) -> int | None:
    """A count (tokens, say): a usable number that is not negative, as an int; else None."""
    number = as_number(value)
    return int(number) if number is not None and number >= 0 else None
