"""Claude Code's ``rate_limit_event``: the plan limit, as a ``RateLimit`` event.

The CLI reads the API's ``anthropic-ratelimit-unified-*`` response headers (only behind a
claude.ai login or a gateway; with an API key it reports nothing) and writes::

    {"type": "rate_limit_event", "rate_limit_info": {"status": "allowed" | "rejected",
     "resetsAt": <epoch s>, "rateLimitType": "five_hour" | "seven_day" | …,
     "isUsingOverage": false, "unifiedWindows": {"five_hour": {"utilization": 0.37,
     "resetsAt": <epoch s>}, "seven_day": {…}}}, "uuid": …, "session_id": …}

(measured with Claude Code 2.1.332; ``allowed_warning`` headers arrive as ``allowed``).
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from app.brains.claude.fields import as_number
from app.brains.events import JsonDict, RateLimit

__all__ = ["rate_limit_event"]

# Resets before 2000 or after 2200 are no real limit's: shown as unknown.
_EPOCH_RANGE = (946_684_800.0, 7_258_118_400.0)


def rate_limit_event(message: JsonDict) -> RateLimit | None:
    """The event one ``rate_limit_event`` line stands for; None when it names nothing."""
    info = message.get("rate_limit_info")
    info = info if isinstance(info, dict) else {}
    limit = _text(info.get("rateLimitType"))
    status = _text(info.get("status"))
    if not limit and not status:
        return None
    windows: list[JsonDict] = []
    found = info.get("unifiedWindows")
    for name, window in (found if isinstance(found, dict) else {}).items():
        if isinstance(name, str) and name and isinstance(window, dict):
            windows.append(
                {
                    "limit": name[:100],
                    "used_fraction": _fraction(window.get("utilization")),
                    "resets_at": _epoch_iso(window.get("resetsAt")),
                }
            )
    own = next((w for w in windows if w["limit"] == limit), {})
    used = _fraction(info.get("utilization"))
    return RateLimit(
        limit=limit,
        status=status,
        used_fraction=used if used is not None else own.get("used_fraction"),
        resets_at=_epoch_iso(info.get("resetsAt")) or own.get("resets_at", ""),
        windows=tuple(windows[:10]),
    )


def _text(value: Any) -> str:
    return value[:100] if isinstance(value, str) else ""


def _fraction(value: Any) -> float | None:
    """A share from 0 to 1, or None when missing or out of that range."""
    number = as_number(value)
    return number if number is not None and 0 <= number <= 1 else None


def _epoch_iso(value: Any) -> str:
    """Epoch seconds as ISO-8601 UTC, "" when missing or out of range."""
    number = as_number(value)
    if number is None or not _EPOCH_RANGE[0] <= number <= _EPOCH_RANGE[1]:
        return ""
    return datetime.fromtimestamp(int(number), UTC).isoformat()
