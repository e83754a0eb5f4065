"""What the agents cost and used, summed in SQL from the stored ``turn_end`` events.

Every backend's turn result is stored as a ``turn_end`` event (``cost_usd``, the CLI's
``usage`` and, since the model is known then, ``model``), imported sessions included, so
the figures come from one place. Tokens are read under each CLI's own names (Claude Code
``cache_read_input_tokens``, ACP ``cached_read_tokens``); a value that is not a sane
count counts as 0. A group whose backends never reported a cost has ``cost_usd`` None:
the page shows its tokens only, never a price made up from them.

Days are the machine's local days (the app and its user share a clock on localhost). A
turn is dated by its own time: an imported turn carries it (``timestamp``), a live one is
stored when it ends.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from datetime import date, datetime, timedelta
from typing import Any, Literal

from sqlalchemy import text
from sqlalchemy.engine import Engine

from app.errors import ValidationFailed

__all__ = ["GROUPS", "Usage", "UsageRow", "check_day", "local_offset_minutes", "usage"]

Group = Literal["day", "profile", "model", "backend"]
GROUPS: tuple[Group, ...] = ("day", "profile", "model", "backend")

# The days a period may start or end on: wider than any real query, and far enough from
# the calendar's ends that the next day, moved by any time zone, is still a date.
FIRST_DAY = date(1970, 1, 1)
LAST_DAY = date(9998, 12, 31)


def check_day(field: str, day: date | None) -> None:
    """Raises:
    ValidationFailed: ``day`` is outside ``FIRST_DAY`` … ``LAST_DAY``."""
    if day is not None and not FIRST_DAY <= day <= LAST_DAY:
        raise ValidationFailed(
            field, f"{day.isoformat()} is out of range; use a day from {FIRST_DAY} to {LAST_DAY}"
        )


def _count(column: str) -> str:
    return (
        f"CASE WHEN typeof({column}) IN ('integer', 'real') AND {column} >= 0 "
        f"AND {column} < 9007199254740992 THEN CAST({column} AS INTEGER) ELSE 0 END"
    )


_SANE_COST = "CASE WHEN typeof(c) IN ('integer', 'real') AND c >= 0 THEN c END"
# Each turn's figures read out of its JSON once, then summed.
_FIGURES = {
    "c": "$.cost_usd",
    "i": "$.usage.input_tokens",
    "o": "$.usage.output_tokens",
    "r1": "$.usage.cache_read_input_tokens",
    "r2": "$.usage.cached_read_tokens",
}
_MODEL = (
    "COALESCE(NULLIF(json_extract(e.payload, '$.model'), ''), NULLIF(s.model, ''), "
    "NULLIF(p.model, ''), '')"
)
_WHEN = "datetime(COALESCE(json_extract(e.payload, '$.timestamp'), e.created_at))"
_KEYS: dict[Group, tuple[str, str]] = {
    # (key, label) expressions per grouping.
    "day": (f"date({_WHEN}, :offset)", f"date({_WHEN}, :offset)"),
    "profile": ("s.profile_id", "COALESCE(p.name, s.profile_id)"),
    "model": (_MODEL, _MODEL),
    "backend": ("s.backend", "s.backend"),
}


@dataclass(frozen=True)
class UsageRow:
    key: str
    label: str
    # None: no turn in the group reported a cost (the backend does not say).
    cost_usd: float | None
    input_tokens: int
    output_tokens: int
    cache_read_tokens: int
    turns: int
    sessions: int

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class Usage:
    group: Group
    since: date | None
    until: date | None
    groups: list[UsageRow]
    total: UsageRow


def local_offset_minutes(now: datetime | None = None) -> int:
    """The machine's UTC offset in minutes, which turns stored UTC times into its days."""
    offset = (now or datetime.now()).astimezone().utcoffset() or timedelta()
    return int(offset.total_seconds() // 60)


def usage(
    engine: Engine,
    *,
    group: Group = "day",
    since: date | None = None,
    until: date | None = None,
    offset_minutes: int | None = None,
    split: bool = False,
) -> Usage:
    """The sums per ``group`` from ``since`` to ``until`` (local days, both included).

    ``split``: day groups are also split by profile (keys ``<day>|<profile id>``), for the
    stacked cost chart.

    Raises:
        ValidationFailed: ``since`` or ``until`` is out of range (``check_day``)."""
    check_day("since", since)
    check_day("until", until)
    offset = local_offset_minutes() if offset_minutes is None else offset_minutes
    key, label = _KEYS[group]
    if split and group == "day":
        key = f"{key} || '|' || s.profile_id"
        label = f"{label} || '|' || COALESCE(p.name, s.profile_id)"
    where = ["e.kind = 'turn_end'"]
    # The (kind, created_at) index finds the turn results; the period is on their time.
    params: dict[str, Any] = {"offset": f"{offset:+d} minutes"}
    if since is not None:
        where.append(f"{_WHEN} >= :since")
        params["since"] = _utc_bound(since, offset)
    if until is not None:
        where.append(f"{_WHEN} < :until")
        params["until"] = _utc_bound(until + timedelta(days=1), offset)
    source = (
        "FROM event AS e JOIN chat_session AS s ON s.id = e.session_id "
        "LEFT JOIN profile AS p ON p.id = s.profile_id WHERE " + " AND ".join(where)
    )
    figures = ", ".join(f"json_extract(e.payload, '{path}') AS {n}" for n, path in _FIGURES.items())
    grouped = text(
        f"WITH t AS (SELECT e.session_id AS sid, {key} AS k, {label} AS label, {figures} "
        f"{source}) SELECT k, MIN(label) AS label, SUM({_SANE_COST}) AS cost, "
        f"SUM({_count('i')}) AS input, SUM({_count('o')}) AS output, "
        f"SUM({_count('r1')} + {_count('r2')}) AS cache_read, COUNT(*) AS turns, "
        f"COUNT(DISTINCT sid) AS sessions FROM t GROUP BY k "
        f"ORDER BY {'k' if group == 'day' else 'label, k'}"
    )
    sessions = text(f"SELECT COUNT(DISTINCT e.session_id) {source}")
    with engine.connect() as conn:
        rows = [_row(r) for r in conn.execute(grouped, params)]
        total_row = _total(rows, int(conn.execute(sessions, params).scalar_one()))
    return Usage(group, since, until, rows, total_row)


def _total(rows: list[UsageRow], sessions: int) -> UsageRow:
    """The groups added up (a session in several groups counts once: ``sessions``)."""
    costs = [r.cost_usd for r in rows if r.cost_usd is not None]
    return UsageRow(
        key="",
        label="total",
        cost_usd=round(sum(costs), 6) if costs else None,
        input_tokens=sum(r.input_tokens for r in rows),
        output_tokens=sum(r.output_tokens for r in rows),
        cache_read_tokens=sum(r.cache_read_tokens for r in rows),
        turns=sum(r.turns for r in rows),
        sessions=sessions,
    )


def _utc_bound(day: date, offset_minutes: int) -> str:
    start = datetime(day.year, day.month, day.day) - timedelta(minutes=offset_minutes)
    return start.isoformat(sep=" ")


def _row(r: Any) -> UsageRow:
    return UsageRow(
        key=str(r.k or ""),
        label=str(r.label or ""),
        cost_usd=None if r.cost is None else round(float(r.cost), 6),
        input_tokens=int(r.input or 0),
        output_tokens=int(r.output or 0),
        cache_read_tokens=int(r.cache_read or 0),
        turns=int(r.turns or 0),
        sessions=int(r.sessions or 0),
    )
