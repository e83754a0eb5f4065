"""The small formatters the templates use: durations, costs, labels, output, days."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

from app.web.formatting import (
    credential_label,
    day_label,
    day_name,
    decision_text,
    format_cost,
    format_duration,
    format_tokens,
    home_path,
    relative_time,
    split_output,
)


def test_filters() -> None:
    assert format_duration(2800) == "2.8 s"
    assert format_duration(850) == "850 ms"
    assert format_duration(185_000) == "3 min 5 s"
    assert format_duration(None) == ""
    assert format_cost(0.0123) == "$0.0123"
    assert format_cost(0.42) == "$0.42"
    assert format_cost(0) == "$0.00"
    assert format_cost(12.5) == "$12.50"
    assert format_cost(None) == ""
    assert format_tokens(310) == "310"
    assert format_tokens(1234) == "1.2k"
    assert decision_text("allow_once", "user") == "Allowed once by you"
    assert decision_text("expired", "timeout") == "Expired after waiting too long"


def test_long_output_splits_into_head_and_rest() -> None:
    output = "\n".join(f"line {i}" for i in range(2000))
    head, rest = split_output(output)
    assert head.count("\n") == 199 and head.endswith("line 199")
    assert rest.startswith("line 200\n") and rest.endswith("line 1999")
    assert head + "\n" + rest == output
    assert split_output("short") == ("short", "")
    # A few enormous lines are capped by size, not only by count.
    head, rest = split_output("x" * 50_000)
    assert len(head) == 20_000 and len(rest) == 30_000


def test_credentials_and_home() -> None:
    assert credential_label("ANTHROPIC_API_KEY") == "API key from ANTHROPIC_API_KEY"
    assert credential_label("none") == "login (no API key)"
    assert credential_label("something new") == "something new"
    assert credential_label(None) == ""
    home = str(Path.home())
    if home not in ("", "/"):
        assert home_path(home + "/src/app") == "~/src/app"
        assert home_path(home + "x/src") == home + "x/src"
    assert home_path("/elsewhere") == "/elsewhere"


def test_day_labels() -> None:
    today = datetime(2026, 12, 2, 12, 0).astimezone().date()
    local = datetime(2026, 12, 2, 12, 0).astimezone()
    assert day_label(local, today) == "Today"
    assert day_label(local - timedelta(days=1), today) == "Yesterday"
    assert day_label(local - timedelta(days=3), today) == "Sun 29 Nov"
    assert day_label(local - timedelta(days=400), today) == "Tue 28 Oct 2025"
    assert day_name(today - timedelta(days=3), today, long=True) == "Sunday, 29 November"


def test_relative_time_says_how_long_ago_or_how_soon() -> None:
    now = datetime(2026, 12, 2, 14, 0, tzinfo=UTC)
    assert relative_time(now - timedelta(seconds=20), now) == "just now"
    assert relative_time(now - timedelta(minutes=1, seconds=5), now) == "1 minute ago"
    assert relative_time(now - timedelta(hours=3, minutes=59), now) == "3 hours ago"
    assert relative_time(now - timedelta(days=2), now) == "2 days ago"
    assert relative_time(now + timedelta(days=29, hours=23), now) == "in 29 days"
    # Stored times are naive UTC.
    assert relative_time((now - timedelta(minutes=5)).replace(tzinfo=None), now) == "5 minutes ago"
    assert relative_time(None, now) == ""
