"""The usage page: what the agents cost and used over a period, as charts and tables.

The figures are ``GET /api/usage``'s (``app/services/review/usage.py``); the charts are SVG drawn
on the server (``app/web/usage/charts.py``) with the numbers in a table under each, and every
table can be downloaded as CSV. A backend that reports no cost shows tokens only.
"""

from __future__ import annotations

from datetime import date, timedelta
from typing import Any
from urllib.parse import urlencode

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse

from app.errors import ValidationFailed
from app.services.review.usage import Usage, UsageRow, check_day, usage
from app.services.sessions.limits import newest_overall
from app.web.context import base_context
from app.web.deps import StateDep
from app.web.formatting import format_tokens
from app.web.usage.charts import Series, series_for, stacked_columns, stacked_rows

router = APIRouter(include_in_schema=False)

PRESETS = {"7": 7, "30": 30, "90": 90, "365": 365}
DEFAULT_DAYS = 30
# Above this many days a column chart is unreadable; longer periods start later.
MAX_CHART_DAYS = 370
TOKEN_SERIES = (
    ("input_tokens", "input"),
    ("output_tokens", "output"),
    ("cache_read_tokens", "cache read"),
)


def period(days: str, since: str, until: str, today: date) -> tuple[date | None, date, str]:
    """(since, until, error) from the form; a bad date falls back to the default period."""
    if days == "all":
        return None, today, ""
    if days in PRESETS:
        return today - timedelta(days=PRESETS[days] - 1), today, ""
    if since or until:
        try:
            start = date.fromisoformat(since) if since else None
            end = date.fromisoformat(until) if until else today
        except ValueError:
            return _default(today) + ("Dates are written YYYY-MM-DD; showing the last 30 days.",)
        try:
            check_day("since", start)
            check_day("until", end)
        except ValidationFailed as exc:
            return _default(today) + (f"{exc.message}; showing the last 30 days.",)
        if start is not None and start > end:
            return _default(today) + ("The first day is after the last; showing the last 30 days.",)
        return start, end, ""
    return _default(today) + ("",)


def _default(today: date) -> tuple[date, date]:
    return today - timedelta(days=DEFAULT_DAYS - 1), today


def _days(first: date, last: date) -> list[str]:
    first = max(first, last - timedelta(days=MAX_CHART_DAYS - 1))
    return [(first + timedelta(days=i)).isoformat() for i in range((last - first).days + 1)]


def cost_chart(split: Usage, by_profile: Usage, days: list[str]) -> dict[str, Any] | None:
    """Cost per day stacked by profile, or None when no turn in the period has a cost."""
    costed = [r for r in by_profile.groups if r.cost_usd]
    if not costed:
        return None
    costed.sort(key=lambda r: -(r.cost_usd or 0.0))
    series = series_for([(r.key, r.label) for r in costed])
    values = {}
    for row in split.groups:
        day, _, profile_id = row.key.partition("|")
        if row.cost_usd:
            values[(day, profile_id)] = row.cost_usd
    return {"chart": stacked_columns(days, series, values, "${:,.2f}".format), "series": series}


def token_chart(by_model: Usage) -> dict[str, Any] | None:
    rows = sorted(by_model.groups, key=lambda r: -_tokens(r))
    rows = [r for r in rows if _tokens(r)]
    if not rows:
        return None
    series = [Series(key, label, f"tokens-{key}") for key, label in TOKEN_SERIES]
    values = {(r.key, k): float(getattr(r, k)) for r in rows for k, _ in TOKEN_SERIES}
    categories = [(r.key, r.label or "model not reported") for r in rows]
    return {"chart": stacked_rows(categories, series, values, format_tokens), "series": series}


def _tokens(r: UsageRow) -> int:
    return r.input_tokens + r.output_tokens + r.cache_read_tokens


@router.get("/usage", response_class=HTMLResponse)
async def usage_page(
    request: Request,
    state: StateDep,
    days: str = "",
    since: str = "",
    until: str = "",
) -> HTMLResponse:
    today = date.today()
    start, end, error = period(days, since, until, today)
    by_day = usage(state.engine, group="day", since=start, until=end)
    split = usage(state.engine, group="day", since=start, until=end, split=True)
    by_profile = usage(state.engine, group="profile", since=start, until=end)
    by_model = usage(state.engine, group="model", since=start, until=end)
    first = start or (date.fromisoformat(by_day.groups[0].key) if by_day.groups else end)
    query = {"since": start.isoformat() if start else "", "until": end.isoformat()}
    context = base_context(request, state) | {
        "active_nav": "usage",
        "since": start,
        "until": end,
        "preset": days if days in (*PRESETS, "all") else "",
        "error": error,
        "total": by_day.total,
        "by_day": by_day.groups,
        "by_profile": by_profile.groups,
        "by_model": by_model.groups,
        "cost": cost_chart(split, by_profile, _days(first, end)),
        "tokens": token_chart(by_model),
        # The plan's limits belong to the account: the newest report of any session.
        "limits": newest_overall(state.engine),
        "uncosted": [r.label for r in by_profile.groups if r.cost_usd is None],
        "csv": {
            g: "/api/usage.csv?" + urlencode({"group": g, **{k: v for k, v in query.items() if v}})
            for g in ("day", "profile", "model", "backend")
        },
    }
    status = 422 if error else 200
    return state.templates.TemplateResponse(request, "usage.html", context, status_code=status)
