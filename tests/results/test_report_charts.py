"""The report's SVG charts: axis ticks and labels, series, event bands."""

from __future__ import annotations

import re

import pytest

from results.presentation.svg_charts import (
    Band,
    Interval,
    Level,
    Series,
    forest_plot,
    line_chart,
    nice_ticks,
    number,
    percent,
)


@pytest.mark.parametrize(
    "low, high, expected",
    [
        (0, 6000, [0, 2000, 4000, 6000]),
        (15.6, 19.6, [14, 16, 18, 20]),
        (10, 20, [10, 12.5, 15, 17.5, 20]),
        (5, 5, [4, 4.5, 5, 5.5, 6]),
    ],
)
def test_ticks_are_round_and_cover_the_range(low, high, expected):
    assert nice_ticks(low, high) == expected


def test_labels_tell_close_ticks_apart():
    ticks = nice_ticks(1024.5, 1026.2)
    step = ticks[1] - ticks[0]
    labels = [number(t, step) for t in ticks]
    assert labels == ["1,024.5", "1,025.0", "1,025.5", "1,026.0", "1,026.5"]
    assert [number(v, 10_000) for v in (0, 20_000)] == ["0", "20k"] and number(3_000_000, 500_000) == "3.0M"
    assert [percent(v, 0.2) for v in (0, 0.4)] == ["0%", "40%"] and percent(0.025, 0.025) == "2.5%"


def test_a_line_per_series_and_a_dot_for_a_single_point():
    svg = line_chart(
        [
            Series("a", "#111111", [(1, 2.0), (2, 3.0), (3, 1.0)]),
            Series("b", "#222222", [(2, 5.0)], dashed=True),
        ],
        title="t",
    )
    assert re.findall(r'data-series="(\w)"', svg) == ["a", "b"]
    assert svg.count("<polyline") == 1 and svg.count("<circle") == 1


def test_an_empty_chart_says_so():
    assert "no data" in line_chart([Series("a", "#111111", [])], title="t")


def test_bands_outside_the_days_are_left_out_and_overlapping_labels_take_separate_rows():
    series = [Series("a", "#111111", [(day, float(day)) for day in range(1, 31)])]
    peak, shortage = "holiday peak (demand ×2.2)", "wool shortage (cost ×1.6)"
    bands = [
        Band(19.5, 26.5, peak, "demand"),
        Band(22.5, 25.5, shortage, "cost"),
        Band(40.5, 45.5, "later", "demand"),
    ]
    svg = line_chart(series, title="t", bands=bands)
    assert re.findall(r'data-band="([^"]+)"', svg) == [peak, shortage]
    label_rows = re.findall(r'<text x="[\d.]+" y="([\d.]+)">(?:holiday|wool)', svg)
    assert len(set(label_rows)) == 2
    far_apart = line_chart(
        series, title="t", bands=[Band(1.5, 2.5, "a", "cost"), Band(20.5, 22.5, "b", "cost")]
    )
    assert len(set(re.findall(r'<text x="[\d.]+" y="([\d.]+)">[ab]</text>', far_apart))) == 1


def test_forest_plot_draws_each_interval_between_its_ends():
    svg = forest_plot(
        [Interval("a", "#111111", 1100, 1050, 1150), Interval("b", "#222222", 900, 800, 950)],
        title="t",
        x_label="r",
    )
    assert re.findall(r'data-series="(\w)"', svg) == ["a", "b"]
    lines = re.findall(r'<line x1="([\d.]+)" x2="([\d.]+)" y1="[\d.]+" y2="[\d.]+" stroke="#', svg)
    widths = [float(x2) - float(x1) for x1, x2 in lines]
    assert widths[0] > 0 and widths[1] == pytest.approx(widths[0] * 1.5)


def test_levels_are_drawn_across_the_plot_at_their_values_and_widen_the_axis():
    series = [Series("a", "#111111", [(1, 0.0), (3, 10.0)])]
    svg = line_chart(
        series, title="t", levels=[Level(5.0, "Nash 5.00", "nash"), Level(20.0, "monopoly 20.00", "monopoly")]
    )
    grid = {
        float(label): float(y)
        for y, label in re.findall(
            r'<text class="tick" x="[\d.]+" y="([\d.]+)" text-anchor="end">([\d.]+)</text>', svg
        )
    }
    levels = re.findall(
        r'<g class="level level-(\w+)" data-level="([^"]+)" data-value="([\d.]+)">'
        r'<title>[^<]*</title><line x1="[\d.]+" x2="[\d.]+" y1="([\d.]+)"',
        svg,
    )
    assert [(kind, label, float(value)) for kind, label, value, _ in levels] == [
        ("nash", "Nash 5.00", 5.0),
        ("monopoly", "monopoly 20.00", 20.0),
    ]
    assert max(grid) >= 20  # the axis reaches the level above every point
    for _, _, value, y in levels:
        assert float(y) == pytest.approx(
            grid[float(value)] - 4, abs=0.11
        )  # on the grid line of its value (labels sit 4 px below)
