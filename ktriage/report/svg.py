"""Small inline-SVG line charts for the HTML report: categorical x (the sweep's inputs), linear or
log y, several series, optional CI whiskers, a shaded band (the verdict gate) and cliff markers.

Hand-written rather than matplotlib: a few kilobytes of SVG per chart, no heavy dependency, and
every mark carries a class and a <title> (hover text; tests find cliffs and whiskers in the DOM).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

from markupsafe import escape

PALETTE = ("#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#17becf", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22")
VERDICT_COLOURS = {"regression": "#d62728", "improvement": "#2ca02c", "same": "#7f7f7f", "unsure": "#ff7f0e"}


@dataclass
class Series:
    name: str
    points: list[tuple[int, float]]  # (x index, y)
    colour: str = ""
    dashed: bool = False
    whiskers: list[tuple[int, float, float]] = field(default_factory=list)  # (x index, low, high)
    point_colours: dict[int, str] = field(default_factory=dict)  # per x index, e.g. by verdict
    point_titles: dict[int, str] = field(default_factory=dict)


@dataclass
class Marker:
    """A vertical marker between inputs ``index - 1`` and ``index`` (a cliff)."""

    index: int
    label: str
    title: str
    css_class: str = "cliff-marker"


def _nice_step(span: float, target: int = 5) -> float:
    raw = span / max(target, 1)
    mag = 10 ** math.floor(math.log10(raw)) if raw > 0 else 1.0
    for m in (1, 2, 2.5, 5, 10):
        if raw <= m * mag:
            return m * mag
    return 10 * mag


def _ticks(lo: float, hi: float, log: bool) -> list[float]:
    if log:
        a, b = math.floor(math.log10(lo)), math.ceil(math.log10(hi))
        out = [m * 10**e for e in range(a, b + 1) for m in ((1, 2, 5) if b - a <= 3 else (1,))]
        ticks = [t for t in out if lo <= t <= hi]
        if len(ticks) >= 4:
            return ticks
        # less than a decade: evenly spaced round values read better than two lonely ticks
    if hi <= lo:
        return [lo]
    step = _nice_step(hi - lo)
    start = math.ceil(lo / step) * step
    return [start + k * step for k in range(int((hi - start) / step) + 1)]


def _fmt(v: float) -> str:
    return f"{v:.3g}"


# Text metrics the layout assumes: the widest a character of the 10.5 px tick and legend font gets on
# average (digits, lower case; a wider guess only wastes a little room), and how the x labels lean.
CHAR_PX = 6.7  # DejaVu Sans, a wide common default, has 6.7 px digits at 10.5 px
_SIN, _COS = math.sin(math.radians(50)), math.cos(math.radians(50))
X_LABEL_CHARS = 28  # the most of an x label shown; the rest is in its hover text
# the 13 px bold chart title's widest average character (DejaVu Sans Bold digits, 8.3 px, and some room):
# a title is cut in the middle to the chart's width (history's titles of a recorded input ran off the SVG)
TITLE_CHAR_PX = 9.0


def shorten(text: str, chars: int) -> str:
    """``text`` cut to ``chars`` characters in the middle, with an ellipsis: recorded inputs and
    toolchain-qualified backends differ at both ends (``K0:...@triton-3.3.1...``, ``2x4096x...,8 T=4096``),
    so both ends stay. The full text goes into the element's <title>."""
    if len(text) <= chars:
        return text
    head = chars // 2
    tail = chars - 1 - head
    return text[:head] + "\u2026" + (text[-tail:] if tail > 0 else "")


def line_chart(
    x_labels: Sequence[str],
    series: Sequence[Series],
    *,
    title: str,
    y_label: str,
    log_y: bool = False,
    band: tuple[float, float] | None = None,
    ref_line: float | None = None,
    markers: Sequence[Marker] = (),
    width: int = 1120,
    height: int = 340,
    css_class: str = "chart",
) -> str:
    """The chart as an <svg> element (a string of trusted markup: every text is escaped)."""
    ml, mr, mt, mb = 64, 330, 28, 74
    pw, ph = width - ml - mr, height - mt - mb
    n = max(len(x_labels), 1)
    every = max(1, math.ceil(n / 30))
    # x labels lean 50 degrees down-left from their tick: each is cut to what fits left of its tick
    # (a glyph's height leans left too: 12 px) and within X_LABEL_CHARS, and the bottom margin grows to
    # the longest shown (a recorded input's label ran off the chart: "...28x128 T=4096", its shape cut away)
    shown = {
        i: shorten(lab, max(4, min(X_LABEL_CHARS, int((ml + (i + 0.5) * pw / n - 12) / (CHAR_PX * _COS)))))
        for i, lab in enumerate(x_labels)
        if not i % every
    }
    longest = max((len(t) for t in shown.values()), default=0)
    mb = max(mb, math.ceil(26 + longest * CHAR_PX * _SIN))  # 10 below the plot, a glyph's height
    # the legend is one line per series beside the plot: the chart grows to hold every line
    height = max(height - 74 + mb, mt + 16 * len(series) + 8)
    ph = height - mt - mb
    legend_chars = int((mr - 40) / CHAR_PX)
    ys = [y for s in series for _, y in s.points] + [
        v for s in series for _, lo, hi in s.whiskers for v in (lo, hi) if math.isfinite(v) and v > 0
    ]
    if band:
        ys += list(band)
    if ref_line is not None:
        ys.append(ref_line)
    ys = [y for y in ys if math.isfinite(y) and (y > 0 or not log_y)]
    lo, hi = (min(ys), max(ys)) if ys else (0.0, 1.0)
    if log_y:
        lo, hi = lo / 1.1, hi * 1.1
    else:
        pad = (hi - lo) * 0.08 or abs(hi) * 0.05 or 1.0
        lo, hi = lo - pad, hi + pad

    def px(i: float) -> float:
        return ml + (i + 0.5) * pw / n

    def py(y: float) -> float:
        y = min(max(y, lo), hi)
        f = (math.log(y) - math.log(lo)) / (math.log(hi) - math.log(lo)) if log_y else (y - lo) / (hi - lo)
        return mt + ph * (1 - f)

    e = escape
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" class="{e(css_class)}" width="{width}" height="{height}" viewBox="0 0 {width} {height}" role="img">',
        f"<title>{e(title)}</title>",
        f'<text x="{ml}" y="18" class="chart-title">{e(shorten(title, int((width - ml - 8) / TITLE_CHAR_PX)))}</text>',
        f'<rect x="{ml}" y="{mt}" width="{pw}" height="{ph}" class="plot-area"/>',
    ]
    if band:
        y0, y1 = py(band[1]), py(band[0])
        out.append(
            f'<rect x="{ml}" y="{y0:.1f}" width="{pw}" height="{max(y1 - y0, 0.5):.1f}" class="gate-band"><title>gate {e(_fmt(band[0]))}..{e(_fmt(band[1]))}</title></rect>'
        )
    for t in _ticks(lo, hi, log_y):
        y = py(t)
        out.append(f'<line x1="{ml}" x2="{ml + pw}" y1="{y:.1f}" y2="{y:.1f}" class="grid"/>')
        out.append(f'<text x="{ml - 6}" y="{y + 4:.1f}" class="tick" text-anchor="end">{e(_fmt(t))}</text>')
    if ref_line is not None:
        y = py(ref_line)
        out.append(f'<line x1="{ml}" x2="{ml + pw}" y1="{y:.1f}" y2="{y:.1f}" class="ref-line"/>')
    for i, lab in shown.items():
        tip = f"<title>{e(x_labels[i])}</title>" if lab != x_labels[i] else ""
        out.append(
            f'<text transform="translate({px(i):.1f},{mt + ph + 10}) rotate(-50)" class="tick" text-anchor="end">{tip}{e(lab)}</text>'
        )
    out.append(
        f'<text transform="translate(14,{mt + ph / 2:.1f}) rotate(-90)" class="axis-label" text-anchor="middle">{e(y_label)}</text>'
    )
    for k, s in enumerate(series):
        colour = s.colour or PALETTE[k % len(PALETTE)]
        for i, wlo, whi in s.whiskers:
            if not (math.isfinite(wlo) and math.isfinite(whi) and (wlo > 0 or not log_y)):
                continue
            x = px(i)
            out.append(
                f'<g class="ci-whisker" stroke="{colour}"><title>{e(s.name)} {e(x_labels[i])}: CI {e(_fmt(wlo))}..{e(_fmt(whi))}</title>'
                f'<line x1="{x:.1f}" x2="{x:.1f}" y1="{py(wlo):.1f}" y2="{py(whi):.1f}"/>'
                f'<line x1="{x - 3:.1f}" x2="{x + 3:.1f}" y1="{py(wlo):.1f}" y2="{py(wlo):.1f}"/>'
                f'<line x1="{x - 3:.1f}" x2="{x + 3:.1f}" y1="{py(whi):.1f}" y2="{py(whi):.1f}"/></g>'
            )
        pts = [(px(i), py(y)) for i, y in sorted(s.points) if math.isfinite(y) and (y > 0 or not log_y)]
        if len(pts) > 1:
            d = " ".join(f"{x:.1f},{y:.1f}" for x, y in pts)
            dash = ' stroke-dasharray="5,3"' if s.dashed else ""
            out.append(
                f'<polyline class="series-line" points="{d}" fill="none" stroke="{colour}" stroke-width="1.6"{dash}><title>{e(s.name)}</title></polyline>'
            )
        for i, y in sorted(s.points):
            if not math.isfinite(y) or (log_y and y <= 0):
                continue
            fill = s.point_colours.get(i, colour)
            tip = s.point_titles.get(i, f"{s.name} {x_labels[i]}: {_fmt(y)}")
            out.append(
                f'<circle class="point" cx="{px(i):.1f}" cy="{py(y):.1f}" r="3" fill="{fill}" stroke="{colour}"><title>{e(tip)}</title></circle>'
            )
        ly = mt + 6 + 16 * k
        dash = ' stroke-dasharray="5,3"' if s.dashed else ""
        name = shorten(s.name, legend_chars)
        tip = f"<title>{e(s.name)}</title>" if name != s.name else ""
        out.append(
            f'<g class="legend-item">{tip}<line x1="{ml + pw + 12}" x2="{ml + pw + 32}" y1="{ly}" y2="{ly}" stroke="{colour}" stroke-width="2"{dash}/>'
            f'<text x="{ml + pw + 36}" y="{ly + 4}" class="legend">{e(name)}</text></g>'
        )
    for m in markers:
        x = (px(m.index - 1) + px(m.index)) / 2 if m.index > 0 else px(0)
        out.append(
            f'<g class="{e(m.css_class)}"><title>{e(m.title)}</title>'
            f'<line x1="{x:.1f}" x2="{x:.1f}" y1="{mt}" y2="{mt + ph}" stroke="#b00020" stroke-width="2" stroke-dasharray="6,3"/>'
            f'<text x="{x + 3:.1f}" y="{mt + 12}" class="marker-label">{e(m.label)}</text></g>'
        )
    out.append("</svg>")
    return "".join(out)
