"""Charts as inline SVG, drawn in Python: a report needs no script, font or request to show them.

Each chart is a function of plain data that returns one `<svg>` element as markupsafe.Markup:
markup made here, in which every value put in (a name, a label, a colour, a number) is escaped
as it is formatted in (Markup.format), so a page's template inserts it as it is. Every drawn
series is an element with class `series` and a `data-series` attribute holding its name, so
readers can hover it and tests can count it; every level (a benchmark line) one with class
`level`, its label in `data-level` and its value in `data-value`. Colours come from the
caller, so a contestant keeps one colour across all the charts of a report. Styling (fonts,
grid colours) is left to the page's CSS through class names.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from markupsafe import Markup

Format = Callable[[float, float], str]  # (tick value, step between ticks) -> label


@dataclass(frozen=True)
class Series:
    """One line: (x, y) points in x order."""

    name: str
    color: str
    points: Sequence[tuple[float, float]]
    dashed: bool = False


@dataclass(frozen=True)
class Band:
    """A labelled span of the x axis, shaded behind the lines: a scenario event, or a
    supra-competitive or price-war window.

    `kind` becomes a CSS class (`band-demand`, `band-cost`, `band-supra_competitive`, `band-price_war`,
    `band-deviation`: the days a deviation probe forces, `band-intervention`: a regulator's
    act's)."""

    start: float
    end: float
    label: str
    kind: str


@dataclass(frozen=True)
class Level:
    """A labelled horizontal line across the plot at y = `value`: a benchmark.

    `kind` becomes a CSS class (`level-nash`, `level-monopoly`)."""

    value: float
    label: str
    kind: str


@dataclass(frozen=True)
class Interval:
    """One row of a forest plot: an estimate with its interval."""

    label: str
    color: str
    estimate: float
    low: float
    high: float


def nice_ticks(low: float, high: float, count: int = 5) -> list[float]:
    """Round tick values (steps of 1, 2, 2.5 or 5 times a power of ten) covering [low, high]."""
    if not (math.isfinite(low) and math.isfinite(high)):
        return [0.0]
    if high <= low:
        low, high = low - 1.0, high + 1.0
    raw = (high - low) / max(count - 1, 1)
    power = 10.0 ** math.floor(math.log10(raw))
    step = next(m * power for m in (1, 2, 2.5, 5, 10) if m * power >= raw)
    first = math.floor(low / step) * step
    ticks = []
    value = first
    while value < high + step * 0.5:
        ticks.append(round(value, 10))
        value += step
    if ticks[-1] < high:
        ticks.append(round(value, 10))
    return ticks


def number(value: float, step: float) -> str:
    """A compact axis label (1,250 · 12.5k · 3.2M · 0.25) with as many decimals as tell apart
    ticks `step` apart: 1,025.5 and 1,026.0 rather than 1,026 twice."""
    scale, suffix = (1e6, "M") if abs(value) >= 1e6 else (1e3, "k") if abs(value) >= 1e4 else (1.0, "")
    return f"{value / scale:,.{_decimals(step / scale)}f}{suffix}"


def percent(value: float, step: float) -> str:
    return f"{value * 100:.{_decimals(step * 100)}f}%"


def _decimals(step: float) -> int:
    return next((d for d in range(7) if abs(round(step * 10**d) - step * 10**d) < 1e-6), 6)


class _Frame:
    """The plotting area of a chart and the linear maps from data to pixels."""

    def __init__(
        self,
        width: int,
        height: int,
        x_range: tuple[float, float],
        y_range: tuple[float, float],
        margin: tuple[int, int, int, int] = (22, 14, 30, 54),
    ):
        self.width, self.height = width, height
        self.top, self.right, self.bottom, self.left = margin
        self.x0, self.x1 = x_range
        self.y0, self.y1 = y_range

    def x(self, value: float) -> float:
        span = (self.x1 - self.x0) or 1.0
        return self.left + (value - self.x0) / span * (self.width - self.left - self.right)

    def y(self, value: float) -> float:
        span = (self.y1 - self.y0) or 1.0
        return self.height - self.bottom - (value - self.y0) / span * (self.height - self.top - self.bottom)


def line_chart(
    series: Sequence[Series],
    *,
    title: str,
    bands: Sequence[Band] = (),
    levels: Sequence[Level] = (),
    y_format: Format = number,
    y_from_zero: bool = False,
    x_label: str = "day",
    width: int = 560,
    height: int = 230,
) -> Markup:
    """Lines over a shared x axis, with labelled bands behind them and labelled levels across
    them (the y axis reaches them too); an empty chart says so."""
    xs = [x for s in series for x, _ in s.points]
    ys = [y for s in series for _, y in s.points] + [level.value for level in levels]
    if not xs:
        return _empty(width, title)
    y_low, y_high = min(ys), max(ys)
    if y_from_zero:
        y_low, y_high = min(y_low, 0.0), max(y_high, 0.0)
    y_ticks = nice_ticks(y_low, y_high)
    x_ticks = [t for t in nice_ticks(min(xs), max(xs), 7) if t == int(t) and min(xs) <= t <= max(xs)]
    x_range = (min(xs), max(xs))
    shown = [b for b in bands if b.end >= x_range[0] and b.start <= x_range[1]]
    lanes = _label_lanes(_Frame(width, height, x_range, (0, 1)), shown)
    top = 10 + 13 * (max(lanes, default=0) + 1)
    frame = _Frame(width, height + top, x_range, (y_ticks[0], y_ticks[-1]), margin=(top, 14, 30, 54))
    parts = [_bands(frame, shown, lanes), _y_axis(frame, y_ticks, y_format), _x_axis(frame, x_ticks, x_label)]
    parts.append(_levels(frame, levels))
    parts += [_line(frame, s) for s in series]
    return _svg(width, height + top, title, Markup("").join(parts))


def forest_plot(
    rows: Sequence[Interval], *, title: str, x_label: str, reference: float | None = None, width: int = 760
) -> Markup:
    """One row per estimate: a dot on a horizontal interval, labels on the left, best first."""
    if not rows:
        return _empty(width, title)
    row_height = 30
    label_width = min(240, 28 + 8 * max(len(r.label) for r in rows))
    height = 24 + row_height * len(rows) + 36
    values = [v for r in rows for v in (r.low, r.high, r.estimate)] + (
        [reference] if reference is not None else []
    )
    ticks = nice_ticks(min(values), max(values), 6)
    frame = _Frame(width, height, (ticks[0], ticks[-1]), (0.0, 1.0), margin=(16, 24, 36, label_width))
    parts = [_vertical_grid(frame, ticks, x_label)]
    if reference is not None:
        parts.append(
            Markup('<line class="reference" x1="{x:.1f}" x2="{x:.1f}" y1="{top}" y2="{bottom}"/>').format(
                x=frame.x(reference), top=frame.top, bottom=height - frame.bottom
            )
        )
    for i, row in enumerate(rows):
        parts.append(
            Markup(
                '<g class="series" data-series="{label}"><title>{tip}</title>'
                '<text class="label" x="{label_x}" y="{text_y:.1f}" text-anchor="end">{label}</text>'
                '<line x1="{low:.1f}" x2="{high:.1f}" y1="{y:.1f}" y2="{y:.1f}" '
                'stroke="{color}" stroke-width="3" stroke-linecap="round"/>'
                '<circle cx="{estimate:.1f}" cy="{y:.1f}" r="5.5" fill="{color}" '
                'stroke="#fff" stroke-width="1.5"/>'
                "</g>"
            ).format(
                label=row.label,
                tip=f"{row.label}: {row.estimate:.0f} [{row.low:.0f}, {row.high:.0f}]",
                label_x=frame.left - 10,
                y=frame.top + row_height * (i + 0.5),
                text_y=frame.top + row_height * (i + 0.5) + 4,
                low=frame.x(row.low),
                high=frame.x(row.high),
                estimate=frame.x(row.estimate),
                color=row.color,
            )
        )
    return _svg(width, height, title, Markup("").join(parts))


@dataclass(frozen=True)
class Point:
    """One contestant of a cost plot: its cost per match and its rating, on the front or not."""

    label: str
    color: str
    cost: float
    rating: float
    front: bool


def cost_plot(points: Sequence[Point], *, title: str, width: int = 760, height: int = 320) -> Markup:
    """Rating against cost per match, a dot per contestant; the front (those no other beats on
    both) joined by a line and ringed."""
    if not points:
        return _empty(width, title)
    x_ticks = nice_ticks(0.0, max(p.cost for p in points), 6)
    y_ticks = nice_ticks(min(p.rating for p in points), max(p.rating for p in points), 5)
    frame = _Frame(width, height, (x_ticks[0], x_ticks[-1]), (y_ticks[0], y_ticks[-1]))
    parts = [_vertical_grid(frame, x_ticks, "USD per match"), _y_axis(frame, y_ticks, number)]
    front = sorted((p for p in points if p.front), key=lambda p: p.cost)
    if len(front) > 1:
        path = " ".join(f"{frame.x(p.cost):.1f},{frame.y(p.rating):.1f}" for p in front)
        parts.append(Markup('<polyline class="front" points="{path}" fill="none"/>').format(path=path))
    for p in points:
        parts.append(
            Markup(
                '<g class="series{front}" data-series="{label}"><title>{tip}</title>'
                '<circle cx="{x:.1f}" cy="{y:.1f}" r="{r}" fill="{color}" stroke="#fff" stroke-width="1.5"/>'
                '<text class="label" x="{text_x:.1f}" y="{text_y:.1f}">{label}</text></g>'
            ).format(
                front=" on-front" if p.front else "",
                label=p.label,
                tip=f"{p.label}: rating {p.rating:.0f} at ${p.cost:.4f} a match"
                + (", on the front" if p.front else ""),
                x=frame.x(p.cost),
                y=frame.y(p.rating),
                r=7 if p.front else 5,
                color=p.color,
                text_x=frame.x(p.cost) + 9,
                text_y=frame.y(p.rating) + 4,
            )
        )
    return _svg(width, height, title, Markup("").join(parts))


def _svg(width: int, height: int, title: str, body: Markup) -> Markup:
    return Markup(
        '<svg class="chart" viewBox="0 0 {width} {height}" width="{width}" height="{height}" role="img" '
        'aria-label="{title}"><title>{title}</title>{body}</svg>'
    ).format(width=width, height=height, title=title, body=body)


def _empty(width: int, title: str) -> Markup:
    """A chart with nothing to draw, saying so."""
    return _svg(
        width,
        60,
        title,
        Markup('<text class="empty" x="{x}" y="36" text-anchor="middle">no data</text>').format(x=width / 2),
    )


def _label_lanes(frame: _Frame, bands: Sequence[Band]) -> list[int]:
    """A text line above the plot for each band's label, so that overlapping events' labels
    do not overprint: each label takes the first line that is free where it starts."""
    ends: list[float] = []
    lanes = []
    for band in bands:
        x = frame.x(max(band.start, frame.x0))
        lane = next((i for i, end in enumerate(ends) if end < x), len(ends))
        if lane == len(ends):
            ends.append(0.0)
        ends[lane] = x + 5.6 * len(band.label) + 8
        lanes.append(lane)
    return lanes


def _bands(frame: _Frame, bands: Sequence[Band], lanes: Sequence[int]) -> Markup:
    parts = []
    for band, lane in zip(bands, lanes):
        x0, x1 = frame.x(max(band.start, frame.x0)), frame.x(min(band.end, frame.x1))
        label_y = frame.top - 6 - 13 * lane
        parts.append(
            Markup(
                '<g class="band band-{kind}" data-band="{label}"><title>{label}</title>'
                '<rect x="{x0:.1f}" y="{top}" width="{width:.1f}" height="{height}"/>'
                '<line x1="{x0:.1f}" x2="{x0:.1f}" y1="{line_y}" y2="{top}"/>'
                '<text x="{text_x:.1f}" y="{label_y}">{label}</text></g>'
            ).format(
                kind=band.kind,
                label=band.label,
                x0=x0,
                top=frame.top,
                width=max(x1 - x0, 2),
                height=frame.height - frame.top - frame.bottom,
                line_y=label_y + 3,
                text_x=x0 + 3,
                label_y=label_y,
            )
        )
    return Markup("").join(parts)


def _levels(frame: _Frame, levels: Sequence[Level]) -> Markup:
    """Each level a line across the plot, its label at the right end, above the line."""
    parts = []
    for level in levels:
        y = frame.y(level.value)
        parts.append(
            Markup(
                '<g class="level level-{kind}" data-level="{label}" data-value="{value!r}">'
                "<title>{label}</title>"
                '<line x1="{left}" x2="{right}" y1="{y:.1f}" y2="{y:.1f}"/>'
                '<text x="{text_x}" y="{text_y:.1f}" text-anchor="end">{label}</text></g>'
            ).format(
                kind=level.kind,
                label=level.label,
                value=level.value,
                left=frame.left,
                right=frame.width - frame.right,
                y=y,
                text_x=frame.width - frame.right - 3,
                text_y=y - 3,
            )
        )
    return Markup("").join(parts)


def _y_axis(frame: _Frame, ticks: Sequence[float], fmt: Format) -> Markup:
    parts = []
    step = _step(ticks)
    for tick in ticks:
        y = frame.y(tick)
        parts.append(
            Markup(
                '<line class="grid" x1="{left}" x2="{right}" y1="{y:.1f}" y2="{y:.1f}"/>'
                '<text class="tick" x="{text_x}" y="{text_y:.1f}" text-anchor="end">{label}</text>'
            ).format(
                left=frame.left,
                right=frame.width - frame.right,
                y=y,
                text_x=frame.left - 6,
                text_y=y + 4,
                label=fmt(tick, step),
            )
        )
    return Markup("").join(parts)


def _x_axis(frame: _Frame, ticks: Sequence[float], label: str) -> Markup:
    base = frame.height - frame.bottom
    parts = [
        Markup('<line class="axis" x1="{left}" x2="{right}" y1="{base}" y2="{base}"/>').format(
            left=frame.left, right=frame.width - frame.right, base=base
        )
    ]
    for tick in ticks:
        parts.append(
            Markup('<text class="tick" x="{x:.1f}" y="{y}" text-anchor="middle">{label}</text>').format(
                x=frame.x(tick), y=base + 15, label=number(tick, 1.0)
            )
        )
    parts.append(_axis_label(frame, label))
    return Markup("").join(parts)


def _vertical_grid(frame: _Frame, ticks: Sequence[float], label: str) -> Markup:
    base = frame.height - frame.bottom
    parts = []
    step = _step(ticks)
    for tick in ticks:
        parts.append(
            Markup(
                '<line class="grid" x1="{x:.1f}" x2="{x:.1f}" y1="{top}" y2="{base}"/>'
                '<text class="tick" x="{x:.1f}" y="{y}" text-anchor="middle">{label}</text>'
            ).format(x=frame.x(tick), top=frame.top, base=base, y=base + 15, label=number(tick, step))
        )
    parts.append(_axis_label(frame, label))
    return Markup("").join(parts)


def _axis_label(frame: _Frame, label: str) -> Markup:
    return Markup('<text class="axis-label" x="{x}" y="{y}" text-anchor="end">{label}</text>').format(
        x=frame.width - frame.right, y=frame.height - 2, label=label
    )


def _step(ticks: Sequence[float]) -> float:
    return ticks[1] - ticks[0] if len(ticks) > 1 else 1.0


def _line(frame: _Frame, series: Series) -> Markup:
    head = Markup('<g class="series" data-series="{name}"><title>{name}</title>').format(name=series.name)
    if not series.points:
        return head + Markup("</g>")
    if len(series.points) == 1:
        ((x, y),) = series.points
        return head + Markup('<circle cx="{x:.1f}" cy="{y:.1f}" r="3" fill="{color}"/></g>').format(
            x=frame.x(x), y=frame.y(y), color=series.color
        )
    return head + Markup(
        '<polyline points="{points}" fill="none" stroke="{color}" stroke-width="2" '
        'stroke-linejoin="round"{dash}/></g>'
    ).format(
        points=" ".join(f"{frame.x(x):.1f},{frame.y(y):.1f}" for x, y in series.points),
        color=series.color,
        dash=Markup(' stroke-dasharray="6 4"') if series.dashed else "",
    )
