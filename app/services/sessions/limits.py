"""Plan limits as the backends report them: the newest ``rate_limit`` event, read for a meter.

Only a backend that reports its limits (Claude Code behind a claude.ai login or a gateway)
stores ``rate_limit`` events; for every other session there is nothing to show, and the
pages show nothing rather than a guess.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from sqlalchemy.engine import Engine
from sqlmodel import Session, col, select

from app.db.models import Event
from app.services.store.eventlog import EventLog

__all__ = ["Limits", "Window", "label_of", "newest_overall", "of_session", "read"]

KIND = "rate_limit"
# What the pages call each limit the API names; others show their own name.
LABELS = {
    "five_hour": "5-hour",
    "seven_day": "weekly",
    "seven_day_opus": "weekly (Opus)",
    "seven_day_sonnet": "weekly (Sonnet)",
    "seven_day_oauth_apps": "weekly (apps)",
}


def label_of(limit: str) -> str:
    return LABELS.get(limit) or limit.replace("_", " ") or "plan"


@dataclass(frozen=True)
class Window:
    """One limit: how much of it is used (0–100, None unknown) and when it resets."""

    limit: str
    label: str
    used_percent: int | None
    resets_at: datetime | None

    def as_dict(self) -> dict[str, Any]:
        return {
            "limit": self.limit,
            "label": self.label,
            "used_percent": self.used_percent,
            "resets_at": self.resets_at.isoformat() if self.resets_at else None,
        }


@dataclass(frozen=True)
class Limits:
    """The newest report: the limit that decides, its status, every window it named, and
    whether it stops turns now (``rejected`` until its reset)."""

    limit: str
    label: str
    status: str
    resets_at: datetime | None
    reported_at: datetime | None
    windows: list[Window] = field(default_factory=list)
    session_id: str = ""

    def stopped(self, now: datetime | None = None) -> bool:
        if self.status != "rejected":
            return False
        return self.resets_at is None or self.resets_at > (now or datetime.now(UTC))

    def as_dict(self) -> dict[str, Any]:
        return {
            "limit": self.limit,
            "label": self.label,
            "status": self.status,
            "stopped": self.stopped(),
            "resets_at": self.resets_at.isoformat() if self.resets_at else None,
            "reported_at": self.reported_at.isoformat() if self.reported_at else None,
            "windows": [w.as_dict() for w in self.windows],
            "session_id": self.session_id,
        }


def _moment(value: Any) -> datetime | None:
    if isinstance(value, datetime):
        return value if value.tzinfo else value.replace(tzinfo=UTC)
    if not isinstance(value, str) or not value:
        return None
    try:
        found = datetime.fromisoformat(value)
    except ValueError:
        return None
    return found if found.tzinfo else found.replace(tzinfo=UTC)


def _percent(value: Any) -> int | None:
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 <= value <= 1:
        return None
    return round(value * 100)


def read(payload: dict[str, Any], created_at: Any = None, session_id: str = "") -> Limits:
    """A stored ``rate_limit`` payload as a meter reads it.

    The windows come in a fixed order (the 5-hour first); when the report named none, the
    deciding limit alone is one."""
    limit = str(payload.get("limit") or "")
    windows = [
        Window(
            limit=str(w.get("limit") or ""),
            label=label_of(str(w.get("limit") or "")),
            used_percent=_percent(w.get("used_fraction")),
            resets_at=_moment(w.get("resets_at")),
        )
        for w in payload.get("windows") or []
        if isinstance(w, dict) and w.get("limit")
    ]
    if not windows and limit:
        windows = [
            Window(
                limit,
                label_of(limit),
                _percent(payload.get("used_fraction")),
                _moment(payload.get("resets_at")),
            )
        ]
    order = list(LABELS)
    windows.sort(key=lambda w: order.index(w.limit) if w.limit in order else len(order))
    return Limits(
        limit=limit,
        label=label_of(limit),
        status=str(payload.get("status") or ""),
        resets_at=_moment(payload.get("resets_at")),
        reported_at=_moment(created_at),
        windows=windows,
        session_id=session_id,
    )


def of_session(events: EventLog, session_id: str) -> Limits | None:
    """The session's newest limit report; None when its backend never sent one."""
    found = events.list(session_id, kind=KIND, newest=True, limit=1)
    if not found:
        return None
    return read(found[-1], found[-1].get("at"), session_id)


def newest_overall(engine: Engine) -> Limits | None:
    """The newest limit report of any session (limits belong to the account, not to one
    session); None when no backend ever sent one."""
    with Session(engine) as db:
        row = db.exec(
            select(Event)
            .where(col(Event.kind) == KIND)
            .order_by(col(Event.created_at).desc(), col(Event.id).desc())
            .limit(1)
        ).first()
    if row is None:
        return None
    return read(dict(row.payload), row.created_at, row.session_id)
