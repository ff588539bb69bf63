"""Charts as plotly figures: the JSON that plotly.js (shipped inside the plotly package, so
nothing is fetched) draws with hover, zoom and a PNG download. The same lines, shaded spans and
benchmark levels as results.presentation.svg_charts draws in SVG for the static report."""

from __future__ import annotations

import csv
import html
import io
from collections.abc import Sequence
from typing import Any

from results.presentation.svg_charts import Band, Level, Series

# A span's fill by its kind (a scenario event's kind, a price window's, a deviation probe's days).
BAND_FILLS = {
    "demand": "rgba(42, 157, 111, 0.13)",
    "cost": "rgba(224, 123, 33, 0.15)",
    "supra_competitive": "rgba(168, 50, 60, 0.08)",
    "price_war": "rgba(47, 109, 176, 0.10)",
    "deviation": "rgba(200, 140, 20, 0.16)",
    "intervention": "rgba(120, 70, 170, 0.13)",
}
OTHER_FILL = "rgba(102, 112, 124, 0.10)"
LEVEL_COLORS = {"nash": "#4d5863", "monopoly": "#a8323c"}


def line_figure(
    series: Sequence[Series],
    *,
    title: str,
    bands: Sequence[Band] = (),
    levels: Sequence[Level] = (),
    percent: bool = False,
    y_from_zero: bool = False,
    x_label: str = "day",
) -> dict[str, Any]:
    """Lines over a shared x axis (one trace each, hovering together), with labelled spans
    shaded behind them and labelled levels across them. plotly.js reads a few HTML tags in
    names and labels (links, bold): every text is escaped, so a name shows as it is."""
    data = [
        {
            "type": "scatter",
            "mode": "lines",
            "name": _shown(s.name),
            "x": [x for x, _ in s.points],
            "y": [y for _, y in s.points],
            "line": {"color": s.color, "width": 1.6, **({"dash": "dash"} if s.dashed else {})},
        }
        for s in series
    ]
    marks = [*map(_band_marks, bands), *map(_level_marks, levels)]
    shapes = [shape for shape, _ in marks]
    annotations = [annotation for _, annotation in marks]
    y_axis: dict[str, Any] = {"zeroline": False, "gridcolor": "#e3e6ea"}
    if percent:
        y_axis["tickformat"] = ".0%"
    if y_from_zero:
        y_axis["rangemode"] = "tozero"
    return {
        "data": data,
        "layout": {
            "title": {"text": _shown(title), "font": {"size": 14}, "x": 0, "xanchor": "left"},
            "xaxis": {"title": {"text": _shown(x_label)}, "gridcolor": "#e3e6ea", "zeroline": False},
            "yaxis": y_axis,
            "shapes": shapes,
            "annotations": annotations,
            "hovermode": "x unified",
            "legend": {"orientation": "h", "y": -0.25},
            "margin": {"l": 56, "r": 16, "t": 48, "b": 40},
            "height": 320,
            "plot_bgcolor": "#fff",
        },
    }


def _band_marks(band: Band) -> tuple[dict[str, Any], dict[str, Any]]:
    """A span's shading and its label at its start, above the plot."""
    shape = {
        "type": "rect",
        "xref": "x",
        "yref": "paper",
        "x0": band.start,
        "x1": band.end,
        "y0": 0,
        "y1": 1,
        "fillcolor": BAND_FILLS.get(band.kind, OTHER_FILL),
        "line": {"width": 0},
        "layer": "below",
        "name": _shown(band.label),
    }
    annotation = {
        "x": band.start,
        "xref": "x",
        "xanchor": "left",
        "y": 1,
        "yref": "paper",
        "yanchor": "bottom",
        "text": _shown(band.label),
        "showarrow": False,
        "font": {"size": 10, "color": "#66707c"},
    }
    return shape, annotation


def _level_marks(level: Level) -> tuple[dict[str, Any], dict[str, Any]]:
    """A level's dotted line across the plot and its label at the right end."""
    color = LEVEL_COLORS.get(level.kind, "#66707c")
    shape = {
        "type": "line",
        "xref": "paper",
        "x0": 0,
        "x1": 1,
        "y0": level.value,
        "y1": level.value,
        "line": {"color": color, "width": 1, "dash": "dot"},
        "name": _shown(level.label),
    }
    annotation = {
        "x": 1,
        "xref": "paper",
        "xanchor": "right",
        "y": level.value,
        "yanchor": "bottom",
        "text": _shown(level.label),
        "showarrow": False,
        "font": {"size": 10, "color": color},
    }
    return shape, annotation


def _shown(text: str) -> str:
    """Text as plotly.js shows it: its tags escaped (plotly decodes &lt; and the like, though
    not every entity html.escape writes for quotes, which are harmless once no tag can open)."""
    return html.escape(text, quote=False)


def figure_csv(figure: dict[str, Any]) -> str:
    """A figure's data as CSV, one row per x and one column per line (empty where a line has
    no point at that x), its names as they were before they were escaped for plotly."""
    traces = figure["data"]
    xs = sorted({x for trace in traces for x in trace["x"]})
    by_trace = [dict(zip(trace["x"], trace["y"], strict=True)) for trace in traces]
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    names = [figure["layout"]["xaxis"]["title"]["text"], *(trace["name"] for trace in traces)]
    writer.writerow([html.unescape(name) for name in names])
    for x in xs:
        writer.writerow([_number(x), *(_number(points[x]) if x in points else "" for points in by_trace)])
    return out.getvalue()


def _number(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else repr(float(value))
