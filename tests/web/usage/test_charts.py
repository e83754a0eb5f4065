"""Bar chart geometry: round gridlines, stacked bars that add up, empty categories."""

from __future__ import annotations

import pytest

from app.web.usage.charts import nice_ticks, series_for, stacked_columns, stacked_rows


@pytest.mark.parametrize(
    ("top", "ticks"),
    [
        (0.73, [0.0, 0.2, 0.4, 0.6, 0.8]),
        (4.0, [0.0, 1.0, 2.0, 3.0, 4.0]),
        (1234.0, [0.0, 500.0, 1000.0, 1500.0]),
        (0.0, [0.0, 1.0]),
    ],
)
def test_ticks_are_round_and_reach_the_top(top: float, ticks: list[float]) -> None:
    assert nice_ticks(top) == pytest.approx(ticks)


def test_columns_stack_and_scale_to_the_top_tick() -> None:
    series = series_for([("a", "app"), ("d", "docs")])
    values = {("11-01", "a"): 0.6, ("11-01", "d"): 0.2, ("11-03", "d"): 0.4}
    chart = stacked_columns(["11-01", "11-02", "11-03"], series, values)
    first, second, third = chart.bars
    assert (first.css, second.css, third.css) == ("series-0", "series-1", "series-1")
    # The second piece sits on the first; a day with nothing has no bar.
    assert second.y + second.height == pytest.approx(first.y)
    height_per_unit = (chart.plot_bottom - chart.plot_top) / 0.8
    assert first.height + second.height == pytest.approx(0.8 * height_per_unit)
    assert third.x > second.x
    assert [t for _, t in chart.ticks][-1] == "0.80"
    assert first.title == "11-01 · app: 0.60"


def test_rows_put_each_category_on_its_own_line() -> None:
    series = series_for([("in", "input"), ("out", "output")])
    values = {("m1", "in"): 10.0, ("m1", "out"): 5.0, ("m2", "in"): 3.0}
    chart = stacked_rows([("m1", "model one"), ("m2", "model two")], series, values)
    assert [label for _, label in chart.labels] == ["model one", "model two"]
    m1_in, m1_out, m2_in = chart.bars
    assert m1_out.x == pytest.approx(m1_in.x + m1_in.width)
    assert m2_in.y > m1_in.y
