"""Bar charts as plain geometry for server-rendered SVG (``templates/_charts.html``).

No script draws them, so they print, work without JavaScript and cannot run anything a
label contains (labels are text in the template, escaped like every other). Colours are
classes (``series-<n>``) that the stylesheet sets for the light and the dark theme.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

__all__ = ["Bar", "Chart", "Series", "nice_ticks", "stacked_columns", "stacked_rows"]

SERIES_COLOURS = 8


@dataclass(frozen=True)
class Series:
    key: str
    label: str
    css: str


@dataclass(frozen=True)
class Bar:
    x: float
    y: float
    width: float
    height: float
    css: str
    title: str


@dataclass
class Chart:
    width: int
    height: int
    bars: list[Bar] = field(default_factory=list)
    # (position, text): value gridlines on the value axis, labels on the category axis.
    ticks: list[tuple[float, str]] = field(default_factory=list)
    labels: list[tuple[float, str]] = field(default_factory=list)
    series: list[Series] = field(default_factory=list)
    plot_left: float = 0
    plot_top: float = 0
    plot_right: float = 0
    plot_bottom: float = 0


def series_for(keys_labels: Sequence[tuple[str, str]]) -> list[Series]:
    """One colour class per series, in order, reused past the palette's length."""
    return [
        Series(key, label, f"series-{i % SERIES_COLOURS}")
        for i, (key, label) in enumerate(keys_labels)
    ]


def nice_ticks(top: float, count: int = 4) -> list[float]:
    """Round values from 0 to at least ``top`` for gridlines (1, 2 or 5 times a power of 10)."""
    if top <= 0:
        return [0.0, 1.0]
    raw = top / count
    power = 10 ** math.floor(math.log10(raw))
    step = next(m * power for m in (1, 2, 5, 10) if m * power >= raw)
    return [step * i for i in range(math.ceil(top / step - 1e-9) + 1)]


def stacked_columns(
    categories: Sequence[str],
    series: Sequence[Series],
    values: dict[tuple[str, str], float],
    fmt: Callable[[float], str] = "{:,.2f}".format,
    *,
    width: int = 720,
    height: int = 240,
) -> Chart:
    """Columns per category (e.g. days), each stacked by series; ``values[(cat, key)]``."""
    left, right, top, bottom = 56.0, width - 8.0, 8.0, height - 28.0
    ticks, scale = _scale(categories, series, values, bottom - top)
    chart = _frame(width, height, series, (left, top, right, bottom))
    chart.ticks = [(bottom - t * scale, fmt(t)) for t in ticks]
    slot = (right - left) / max(len(categories), 1)
    bar_w = max(min(slot * 0.7, 40.0), 1.0)
    every = max(1, math.ceil(len(categories) / 8))
    for i, cat in enumerate(categories):
        x = left + slot * i + (slot - bar_w) / 2
        y = bottom
        for s in series:
            v = values.get((cat, s.key), 0.0)
            if v <= 0:
                continue
            h = v * scale
            y -= h
            chart.bars.append(Bar(x, y, bar_w, h, s.css, f"{cat} · {s.label}: {fmt(v)}"))
        if i % every == 0:
            chart.labels.append((x + bar_w / 2, cat))
    return chart


def stacked_rows(
    categories: Sequence[tuple[str, str]],
    series: Sequence[Series],
    values: dict[tuple[str, str], float],
    fmt: Callable[[float], str] = "{:,.0f}".format,
    *,
    width: int = 720,
    row_height: int = 28,
) -> Chart:
    """Horizontal bars per category ``(key, label)``, stacked by series (e.g. token kinds)."""
    left, right, top = 160.0, width - 8.0, 8.0
    height = int(top + row_height * max(len(categories), 1) + 24)
    bottom = height - 24.0
    ticks, scale = _scale([k for k, _ in categories], series, values, right - left)
    chart = _frame(width, height, series, (left, top, right, bottom))
    chart.ticks = [(left + t * scale, fmt(t)) for t in ticks]
    for i, (key, label) in enumerate(categories):
        y = top + row_height * i + row_height * 0.15
        x = left
        for s in series:
            v = values.get((key, s.key), 0.0)
            if v <= 0:
                continue
            w = v * scale
            chart.bars.append(
                Bar(x, y, w, row_height * 0.7, s.css, f"{label} · {s.label}: {fmt(v)}")
            )
            x += w
        chart.labels.append((y + row_height * 0.35, label))
    return chart


def _scale(
    keys: Sequence[str],
    series: Sequence[Series],
    values: dict[tuple[str, str], float],
    span: float,
) -> tuple[list[float], float]:
    """Gridline values up to the tallest stack, and pixels per unit over ``span``."""
    totals = [sum(values.get((k, s.key), 0.0) for s in series) for k in keys]
    ticks = nice_ticks(max(totals, default=0.0))
    return ticks, span / ticks[-1]


def _frame(
    width: int, height: int, series: Sequence[Series], plot: tuple[float, float, float, float]
) -> Chart:
    chart = Chart(width, height, series=list(series))
    chart.plot_left, chart.plot_top, chart.plot_right, chart.plot_bottom = plot
    return chart
