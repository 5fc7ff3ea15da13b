"""Rendering of ``ktriage history``: each series' runs as a table (rich, markdown), the whole report
as JSON, and one self-contained HTML page with each series plotted (inline SVG, no script, no
network) and its change points marked. Computing is in ``ktriage.history``."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from markupsafe import escape

from ktriage.history.analysis import HistoryReport, RunChange, SeriesHistory, when
from ktriage.mdsafe import markdown_writer, md_code, md_text
from ktriage.report import records
from ktriage.report.svg import Marker, Series, line_chart
from ktriage.schema.jsontypes import JSONObject
from ktriage.store.history import HistoryPoint
from ktriage.store.samples import format_ms
from ktriage.wording import plural

if TYPE_CHECKING:
    from rich.console import Console

COLUMNS = ("#", "run", "date", "toolchain", "status", "median ms", "p20-p80 ms", "change")
NUMERIC = frozenset({"#", "median ms", "p20-p80 ms"})  # right-aligned in markdown and HTML, so digits line up
FORMAT = "ktriage-history"
VERSION = 1


def _pvalue(p: float) -> str:
    return f"{p:.1e}" if p < 0.001 else f"{p:.4f}"


def change_text(c: RunChange) -> str:
    return f"{c.change.step_pct:+.1f}% {c.direction} (p={_pvalue(c.change.pvalue)})" + (" RECENT" if c.recent else "")


def _rows(s: SeriesHistory) -> list[JSONObject]:
    at = {c.position: c for c in s.changes}
    rows: list[JSONObject] = []
    for k, p in enumerate(s.points):
        c = at.get(k)
        rows.append(
            {
                "#": str(k),
                "run": p.run_id,
                "date": when(p),
                "toolchain": p.toolchain or "(host)",
                "status": p.status,
                "median ms": format_ms(p.median_ms),
                "p20-p80 ms": "-" if p.p20_ms is None else f"{format_ms(p.p20_ms)}-{format_ms(p.p80_ms)}",
                "change": change_text(c) if c else "",
            }
        )
    return rows


def _run_line(p: HistoryPoint) -> str:
    return f"{p.run_id} ({when(p)}, {p.toolchain or 'host'}, {format_ms(p.median_ms)} ms)"


def change_lines(c: RunChange) -> list[str]:
    """A change point in words: the two runs, the step, the significance, and what to bisect."""
    cp = c.change
    lines = [
        f"change point: {cp.step_pct:+.1f}% ({c.direction}), mean {format_ms(cp.mean_before)} -> {format_ms(cp.mean_after)} ms, "
        f"p={_pvalue(cp.pvalue)}" + ("; within the latest runs watched (--fail-on-recent)" if c.recent else ""),
        f"  last run before: {_run_line(c.before)}",
        f"  first run after: {_run_line(c.after)}",
        f"  range to bisect: {c.bisect.reason}",
    ]
    if c.bisect.argv:
        lines.append(f"  suggested: {c.bisect.command}")
    return lines


def method_text(r: HistoryReport) -> str:
    """How the change points were found, said once for every report form (the markdown left it to the HTML)."""
    return f"Apache Otava (E-divisive split, t-test merge), p \u2264 {r.detection.max_pvalue}"


def _headline(r: HistoryReport) -> str:
    n = sum(len(s.changes) for s in r.series)
    text = f"{len(r.series)} series, {plural(n, 'change point')}"
    if r.fail_on_recent is not None:
        text += f"; {len(r.recent_changes)} in the latest {plural(r.fail_on_recent, 'run')}"
    return text


def print_report(r: HistoryReport, console: Console) -> None:
    from rich.markup import escape as rich_escape

    console.print(
        f"[bold]history[/] of {rich_escape(r.query.op)} {rich_escape(r.query.backend)} in {rich_escape(r.store_url)}: "
        f"{rich_escape(_headline(r))}"
    )
    for s in r.series:
        records.print_rows(console, s.key.label, COLUMNS, _rows(s))
        if s.note:
            console.print(f"  {rich_escape(s.note)}")
        for c in s.changes:
            style = "red" if c.direction == "slower" else "green"
            first, *rest = change_lines(c)
            console.print(f"[{style}]{rich_escape(first)}[/]")
            for line in rest:
                console.print(rich_escape(line), highlight=False, soft_wrap=True)
        if not s.changes and not s.note:
            console.print("  no change point")
    for note in r.notes:
        console.print(f"[yellow]note:[/] {rich_escape(note)}")


@markdown_writer
def to_markdown(r: HistoryReport) -> str:
    lines = [
        f"# ktriage history: {md_text(r.query.op)} {md_text(r.query.backend)}",
        "",
        f"{md_text(_headline(r))} (store: {md_code(r.store_url)}). Change points: {md_text(method_text(r))}.",
        "",
    ]
    for s in r.series:
        lines += [f"## {md_text(s.key.label)}", ""]
        for c in s.changes:
            first, *rest = change_lines(c)
            lines.append(f"- **{md_text(first)}**")
            lines += [
                f"  - {md_text(line.strip())}"
                if not line.strip().startswith("suggested:")
                else f"  - suggested: {md_code(c.bisect.command)}"
                for line in rest
            ]
        if s.changes:
            lines.append("")
        elif s.note:
            lines += [md_text(s.note), ""]
        else:
            lines += ["No change point.", ""]
        lines += [*records.markdown_table(COLUMNS, _rows(s), right=NUMERIC), ""]
    lines += [f"note: {md_text(n)}" for n in r.notes]
    return "\n".join(lines).rstrip("\n") + "\n"


def _point_json(p: HistoryPoint) -> JSONObject:
    return {
        "run_id": p.run_id,
        "created": p.created,
        "run_status": p.run_status,
        "gpu": p.gpu,
        "toolchain": p.toolchain or None,
        "triton": p.toolchain_info.get("triton_version"),
        "ptxas": p.toolchain_info.get("ptxas_version"),
        "status": p.status,
        "median_ms": p.median_ms,
        "p20_ms": p.p20_ms,
        "p80_ms": p.p80_ms,
        "n_samples": p.n_samples,
    }


def _finite(v: float) -> float | None:
    return v if math.isfinite(v) else None


def _change_json(c: RunChange) -> JSONObject:
    cp = c.change
    return {
        "index": c.position,
        "step_pct": _finite(cp.step_pct),
        "direction": c.direction,
        "pvalue": cp.pvalue,
        "mean_before_ms": cp.mean_before,
        "mean_after_ms": cp.mean_after,
        "std_before_ms": cp.std_before,
        "std_after_ms": cp.std_after,
        "recent": c.recent,
        "before": _point_json(c.before),
        "after": _point_json(c.after),
        "bisect": {"reason": c.bisect.reason, "argv": list(c.bisect.argv) or None, "command": c.bisect.command or None},
    }


def to_json(r: HistoryReport) -> str:
    q, d = r.query, r.detection
    return records.to_json(
        {
            "format": FORMAT,
            "format_version": VERSION,
            "store": r.store_url,
            "query": {
                "op": q.op,
                "backend": q.backend,
                "inputs": list(q.inputs),
                "mode": q.mode,
                "toolchain": q.toolchain,
                "gpu": q.gpu,
            },
            "detection": {
                "method": "apache-otava compute_change_points (E-divisive split, t-test merge)",
                "max_pvalue": d.max_pvalue,
                "min_step_pct": d.min_step_pct,
                "window_len": d.window_len,
                "min_segment": d.min_segment,
            },
            "fail_on_recent": r.fail_on_recent,
            "recent_change_points": len(r.recent_changes),
            "series": [
                {
                    "op": s.key.op,
                    "mode": s.key.mode,
                    "input_id": s.key.input_id,
                    "input_label": s.key.input_label,
                    "backend": s.key.backend,
                    "note": s.note or None,
                    "points": [_point_json(p) for p in s.points],
                    "change_points": [_change_json(c) for c in s.changes],
                }
                for s in r.series
            ],
            "notes": r.notes,
        }
    )


_CSS = """
body{font-family:system-ui,-apple-system,Segoe UI,sans-serif;margin:24px;color:#222;max-width:1180px}
h1{font-size:22px} h2{font-size:17px;margin-top:30px} table{border-collapse:collapse;font-size:12px;margin:8px 0}
td,th{border:1px solid #ddd;padding:2px 6px;text-align:left} th{background:#f3f3f3} td.num,th.num{text-align:right} tr.change td{background:#fdecea}
tr.change.faster td{background:#e8f5e9} code{background:#f5f5f5;padding:1px 3px;font-size:12px}
.chart{display:block;margin:8px 0} .plot-area{fill:#fcfcfc;stroke:#ccc} .grid{stroke:#eee} .tick{font-size:10px;fill:#555}
.chart-title{font-size:13px;font-weight:600} .axis-label{font-size:11px;fill:#444} .legend{font-size:11px}
.marker-label{font-size:10px;fill:#b00020} .ci-whisker line{stroke-width:1;opacity:.6}
.changes li{margin:4px 0} .recent{color:#b00020;font-weight:600}
"""


def x_labels(points: list[HistoryPoint]) -> list[str]:
    """Each run's x label: its date, or its date and time where two runs share a date (replicate runs
    of one day had identical labels, the table showing their times)."""
    days = [when(p)[:10] for p in points]
    return [when(p) for p in points] if len(set(days)) < len(days) else days


def _chart(s: SeriesHistory) -> str:
    xs = x_labels(s.points)
    pts = [(k, p.median_ms) for k, p in enumerate(s.points) if p.median_ms is not None]
    line = Series(f"{s.key.backend} median", [(k, float(v)) for k, v in pts])
    for k, p in enumerate(s.points):
        if p.p20_ms is not None and p.p80_ms is not None:
            line.whiskers.append((k, float(p.p20_ms), float(p.p80_ms)))
        if p.median_ms is not None:
            line.point_titles[k] = f"{p.run_id} {when(p)} {p.toolchain or 'host'}: {format_ms(p.median_ms)} ms"
    series = [line]
    if s.changes:  # the levels Otava's segments have: the mean between neighbouring change points
        levels = [s.changes[0].change.mean_before, *(c.change.mean_after for c in s.changes)]
        starts = [c.position for c in s.changes]
        level_of = [sum(k >= at for at in starts) for k in range(len(s.points))]
        series.append(
            Series("level (segment mean)", [(k, levels[level_of[k]]) for k, _ in pts], colour="#7f7f7f", dashed=True)
        )
    markers = [
        Marker(c.position, f"{c.change.step_pct:+.1f}%", " ".join(change_lines(c)), css_class="changepoint-marker")
        for c in s.changes
    ]
    return line_chart(
        xs,
        series,
        title=f"{s.key.label}: median latency per run (whiskers p20-p80)",
        y_label="ms",
        markers=markers,
        css_class="chart history-chart",
    )


def to_html(r: HistoryReport) -> str:
    e = escape
    out = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        f"<title>ktriage history {e(r.query.op)} {e(r.query.backend)}</title>",
        f"<style>{_CSS}</style></head><body>",
        f"<h1>ktriage history: {e(r.query.op)} {e(r.query.backend)}</h1>",
        f"<p>{e(_headline(r))}. Store: <code>{e(r.store_url)}</code>. Change points: {e(method_text(r))}.</p>",
    ]
    for note in r.notes:
        out.append(f"<p><b>note:</b> {e(note)}</p>")
    for s in r.series:
        out.append(f'<section class="series"><h2>{e(s.key.label)}</h2>')
        out.append(_chart(s))
        if s.changes:
            out.append('<ul class="changes">')
            for c in s.changes:
                first, *rest = change_lines(c)
                cls = ' class="recent"' if c.recent else ""
                out.append(
                    f"<li><span{cls}>{e(first)}</span><br>"
                    + "<br>".join(
                        f"<code>{e(c.bisect.command)}</code>"
                        if line.strip().startswith("suggested:")
                        else e(line.strip())
                        for line in rest
                    )
                    + "</li>"
                )
            out.append("</ul>")
        else:
            out.append(f"<p>{e(s.note or 'No change point.')}</p>")
        at = {c.position: c for c in s.changes}
        num = {c: ' class="num"' if c in NUMERIC else "" for c in COLUMNS}
        out.append("<table><tr>" + "".join(f"<th{num[c]}>{e(c)}</th>" for c in COLUMNS) + "</tr>")
        for k, row in enumerate(_rows(s)):
            hit = at.get(k)
            cls = f' class="change {hit.direction}"' if hit else ""
            out.append(f"<tr{cls}>" + "".join(f"<td{num[col]}>{e(row[col])}</td>" for col in COLUMNS) + "</tr>")
        out.append("</table></section>")
    out.append("</body></html>")
    return "\n".join(out) + "\n"
