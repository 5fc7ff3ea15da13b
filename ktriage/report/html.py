"""The comparison as ONE self-contained HTML file: inline CSS and SVG, no script, no network.

Per (op, mode) three charts: latency vs input for every backend/toolchain on both sides; the new/ref
ratio per backend with its confidence-interval whiskers, the gate as a band and verdict colours;
each backend's ratio to the baseline along the sweep with the cliffs marked (a chart with nothing to
draw is left out). Tables repeat the ranked regressions, cliffs and errors so the page reads without the
charts too, and list the improvements and, folded, the pairs within the gate, as the markdown does. The cells not compared
are summarised, a count per reason with the first few cells (``ktriage.compare.not_compared``, as the
table and the markdown group them), and listed in full in a folded ``<details>`` (no script needed to open it).
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
from jinja2 import Environment, FileSystemLoader, select_autoescape
from markupsafe import Markup

from ktriage.atomic import write_atomic
from ktriage.compare.not_compared import group_not_compared
from ktriage.compare.pairing import Comparison, PairResult
from ktriage.compare.quote import comparison_quotes
from ktriage.compare.report import CompareReport
from ktriage.measure.cells import Cell
from ktriage.measure.provenance import run_date_gpu
from ktriage.order import natural_key
from ktriage.report.markdown import (
    COLUMNS_TEXT,
    fmt_ci,
    fmt_ms,
    headline,
    pairs_ms_decimals,
    quoted,
)
from ktriage.report.svg import VERDICT_COLOURS, Marker, Series, line_chart
from ktriage.stats.gate import gate_band
from ktriage.wording import fmt_pct


def _env() -> Environment:
    # The template sits beside this module: pyproject's package-data ships "*.j2" of each package.
    env = Environment(loader=FileSystemLoader(Path(__file__).parent), autoescape=select_autoescape(["html", "j2"]))
    env.filters["gate"] = gate_band  # the gate as the user gave it ("±2.5%"), as every report writes it
    return env


def _inputs(cells: Sequence[Cell], op: str, mode: str) -> list[tuple[int, str]]:
    seen = {(c.key.input_id, c.key.input_label) for c in cells if c.key.op == op and c.key.mode == mode}
    return sorted(dict(seen).items())


def _latency_chart(c: Comparison, op: str, mode: str, xs: list[tuple[int, str]]) -> str:
    pos = {i: k for k, (i, _) in enumerate(xs)}
    series: list[Series] = []
    shared = c.baseline.status == "shared"
    seen_native: set[str] = set()
    for side, cells, dashed in (("new", c.new_cells, False), ("ref", c.ref_cells, True)):
        groups: dict[str, list[tuple[int, float]]] = defaultdict(list)
        for cell in cells:
            k = cell.key
            if k.op != op or k.mode != mode or cell.status != "ok" or not cell.samples_ms:
                continue
            name = k.backend + (f"@{k.toolchain}" if k.toolchain else "")
            groups[name].append((pos[k.input_id], float(np.median(cell.samples_ms))))
        for name, pts in sorted(groups.items(), key=lambda kv: natural_key(kv[0])):
            if shared and "@" not in name:
                if name in seen_native:
                    continue
                seen_native.add(name)
                label = name
            else:
                label = f"{name} ({c.new_label if side == 'new' else c.ref_label})" if not shared else name
            series.append(Series(label, pts, dashed=dashed and not (shared and "@" not in name)))
    return line_chart(
        [lab for _, lab in xs],
        series,
        title=f"{op} {mode}: latency (median ms) vs input",
        y_label="ms (log)",
        log_y=True,
        css_class="chart latency-chart",
    )


def _ratio_chart(c: Comparison, op: str, mode: str, xs: list[tuple[int, str]]) -> str | None:
    """The new/ref ratios with their CIs; None where no pair of the sweep got a verdict (a side that
    failed every kernel drew an empty frame: the errors table above says why there is nothing)."""
    pos = {i: k for k, (i, _) in enumerate(xs)}
    groups: dict[str, list[PairResult]] = defaultdict(list)
    for p in c.pairs:
        if p.op == op and p.mode == mode and p.verdict is not None and math.isfinite(p.verdict.ratio):
            groups[c.row_backend(p)].append(p)
    series = []
    for name, ps in sorted(groups.items(), key=lambda kv: natural_key(kv[0])):
        s = Series(name, [(pos[p.input_id], p.verdict.ratio) for p in ps])  # type: ignore[union-attr]
        for p in ps:
            v = p.verdict
            assert v is not None
            s.whiskers.append((pos[p.input_id], v.ci_low, v.ci_high))
            s.point_colours[pos[p.input_id]] = VERDICT_COLOURS.get(v.verdict, "#000")
            s.point_titles[pos[p.input_id]] = f"{name} {p.input_label}: {v.verdict} {fmt_pct(v.ratio)} CI {fmt_ci(p)}"
        series.append(s)
    if not series:
        return None
    g = c.config.gate
    markers = [
        Marker(pos_of(xs, f.cliff.x_after), f"x{f.cliff.factor:.2f}", f.describe())
        for f in c.cliffs
        if f.op == op and f.mode == mode and f.kind == "new_vs_ref"
    ]
    return line_chart(
        [lab for _, lab in xs],
        series,
        title=f"{op} {mode}: new/ref latency ratio, {c.config.confidence:.0%} CI (band: {gate_band(c.config.threshold)} gate)",
        y_label="new / ref",
        log_y=True,
        band=(1 / g, g),
        ref_line=1.0,
        markers=markers,
        css_class="chart ratio-chart",
    )


def pos_of(xs: list[tuple[int, str]], label: str) -> int:
    for k, (_, lab) in enumerate(xs):
        if lab == label:
            return k
    return 0


def _baseline_chart(c: Comparison, op: str, mode: str, xs: list[tuple[int, str]]) -> str | None:
    base = c.baseline.per_op.get(op)
    pos = {i: k for k, (i, _) in enumerate(xs)}
    series: list[Series] = []
    names = set()
    for side, cells, dashed in (("new", c.new_cells, False), ("ref", c.ref_cells, True)):
        med: dict[tuple[int, str, str | None], float] = {}
        for cell in cells:
            k = cell.key
            if k.op == op and k.mode == mode and cell.status == "ok" and cell.samples_ms:
                med[(k.input_id, k.backend, k.toolchain)] = float(np.median(cell.samples_ms))
        bases = {i: v for (i, be, tc), v in med.items() if be == base and tc is None}
        groups: dict[str, list[tuple[int, float]]] = defaultdict(list)
        for (i, be, tc), v in med.items():
            if be == base or i not in bases:
                continue
            groups[be + (f"@{tc}" if tc else "")].append((pos[i], v / bases[i]))
        for name, pts in sorted(groups.items(), key=lambda kv: natural_key(kv[0])):
            label = f"{name} ({c.new_label if side == 'new' else c.ref_label})"
            if c.baseline.status == "shared" and "@" not in name:
                if name in names:
                    continue
                label = name
            names.add(name)
            series.append(Series(label, pts, dashed=dashed))
    if not series:
        return None
    markers = [
        Marker(pos_of(xs, f.cliff.x_after), f"cliff x{f.cliff.factor:.2f}", f.describe())
        for f in c.cliffs
        if f.op == op and f.mode == mode and f.kind == "vs_baseline"
    ]
    return line_chart(
        [lab for _, lab in xs],
        series,
        title=f"{op} {mode}: latency / {base} (cliffs marked)",
        y_label=f"x {base}",
        log_y=True,
        ref_line=1.0,
        markers=markers,
        css_class="chart baseline-chart",
    )


def _rows(c: Comparison, pairs: Sequence[PairResult]) -> list[dict[str, str]]:
    """One table's rows, its times with the table's decimal places (``pairs_ms_decimals``), as the markdown's
    and the terminal's: right-aligned, their decimal points line up."""
    decimals = pairs_ms_decimals(pairs)
    return [_row(c, p, decimals) for p in pairs]


def _row(c: Comparison, p: PairResult, decimals: int) -> dict[str, str]:
    v = p.verdict
    assert v is not None
    return {
        "label": c.row_label(p),
        "op": f"{p.op}.{p.mode}",
        "input": p.input_label,
        "backend": c.row_backend(p),
        "ref": fmt_ms(v.median_ref, decimals),
        "new": fmt_ms(v.median_new, decimals),
        "change": fmt_pct(v.ratio),
        "ci": fmt_ci(p),
        "p": f"{v.p_value:.2g}",
        "verdict": p.kind,
        "reason": v.reason,
    }


def _runs(c: Comparison) -> list[tuple[str, object, str, str, str]]:
    """(side, run, its date, its GPU, its driver) per side, worded as the markdown's "Runs:" words them
    (``run_date_gpu``: a missing one says why, not "?")."""
    if c.ref_run is not None and c.new_run is not None and c.ref_run.run_id == c.new_run.run_id:
        return [("both", c.ref_run, *run_date_gpu(c.ref_run))]
    return [(side, r, *run_date_gpu(r)) for side, r in (("ref", c.ref_run), ("new", c.new_run)) if r is not None]


def _section(c: Comparison) -> dict[str, Any]:
    cells = [*c.ref_cells, *c.new_cells]
    sweeps = sorted({(x.key.op, x.key.mode) for x in cells})
    charts = []
    quotes = comparison_quotes(c)
    for op, mode in sweeps:
        xs = _inputs(cells, op, mode)
        items = [_latency_chart(c, op, mode, xs), _ratio_chart(c, op, mode, xs), _baseline_chart(c, op, mode, xs)]
        charts.append({"title": f"{op} {mode}", "svgs": [Markup(s) for s in items if s]})
    return {
        "ref": c.ref_label,
        "new": c.new_label,
        "headline": headline(c),
        "baseline": c.baseline,
        "settings": c.config,
        "regressions": _rows(c, c.regressions()),
        "improvements": _rows(c, c.improvements()),
        "unsure": _rows(c, c.unsure()),
        "same": _rows(c, c.same()),
        "cliffs": [f.describe() for f in c.cliffs],
        "not_compared": group_not_compared(c.not_compared_cells(rows=True)),
        "charts": charts,
        "runs": _runs(c),
        "counters": [{"head": q.head(), "label": q.label(), "text": q.text, "kind": q.verdict} for q in quotes],
        "profile_notes": [n for n in c.profile_notes() if not quoted(n, quotes)],
    }


def to_html(report: CompareReport, title: str = "ktriage compare") -> str:
    return (
        _env()
        .get_template("compare.html.j2")
        .render(
            title=title,
            sections=[_section(c) for c in report.comparisons],
            total=report.regression_count,
            not_compared=report.not_compared_count,
            columns=COLUMNS_TEXT,
        )
    )


def write_html(path: str | Path, report: CompareReport, title: str = "ktriage compare") -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(path, to_html(report, title))
    return path
