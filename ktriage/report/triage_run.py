"""The report of ``ktriage triage --run``: the steps with their wall times, one row per benched
kernel input (measured side by side, predicted by the cost model), then the triage of the two sides,
and the same steps as separate commands. Markdown, JSON and the terminal; computing is in
``ktriage.triage.program``.
"""

from __future__ import annotations

import json
import math

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from ktriage.errors import in_flags
from ktriage.mdsafe import markdown_writer, md_code, md_text
from ktriage.report import triage as triage_report
from ktriage.report.markdown import fmt_ms, ms_decimals
from ktriage.report.rich_table import add_columns
from ktriage.triage.program import ProgramReport, RunCell, split_commands
from ktriage.wording import fmt_pct


def to_json(report: ProgramReport) -> str:
    return json.dumps(report.to_json(), indent=1)


def _secs(value: float | None) -> str:
    return "-" if value is None else f"{value:.1f}"


def _pct(ratio: float | None) -> str:
    """A ratio as compare writes its change (``fmt_pct``); "-" where there is none (a kernel that cannot launch)."""
    return "-" if ratio is None or not math.isfinite(ratio) or ratio <= 0 else fmt_pct(ratio)


def _places(cells: list[RunCell]) -> int:
    """The table's decimal places for its old and new ms, as compare's and triage's tables (``ms_decimals``)."""
    return ms_decimals(x for r in cells for x in (r.old_ms, r.new_ms) if x is not None)


def _ms(value: float | None, places: int) -> str:
    return "-" if value is None else fmt_ms(value, places)


def _predicted(row: RunCell) -> str:
    p = row.predicted
    if p is None:
        return "-"
    if p.identical:
        return "identical kernels"
    # as the JSON rounds them (4 places; a kernel that cannot launch has no ratio)
    low, high, ratio = (round(x, 4) if math.isfinite(x) else None for x in (p.low, p.high, p.ratio))
    interval = f" [{_pct(low)}, {_pct(high)}]" if low is not None else ""
    return f"{_pct(ratio)}{interval} ({p.kind})"


def _compile_side(row: RunCell) -> str:
    if row.compile_failed:
        return "compile failed: " + "; ".join(row.compile_failed)
    if row.compile_change is None:
        return "-"
    return f"changed ({row.attribution or '?'})" if row.compile_change else "no change"


def _measured(row: RunCell) -> str:
    if row.measured_verdict is None:
        return f"not timed: {row.measured_problem or '?'}"
    return f"{_pct(row.measured_ratio)} ({row.measured_verdict})"


@markdown_writer
def to_markdown(report: ProgramReport) -> str:
    out = [f"# ktriage triage --run: {md_code(report.command)}", "", f"**{md_text(report.headline())}**", ""]
    for t in report.toolchains:
        out.append(
            f"- {md_text(t.side)}: {md_code(t.spec)}: Triton {md_text(t.triton)}, ptxas "
            f"{md_text(t.ptxas)} ({md_code(t.id)})"
        )
    out += [
        "",
        f"Work folder: {md_code(report.workdir)} ({md_code(report.workload)}, bundle/, results.json).",
        "",
        "## Steps",
        "",
        "| step | status | wall s | what |",
        "|---|---|---|---|",
    ]
    for s in report.steps:
        out.append(f"| {md_text(s.name)} | {md_text(s.status)} | {_secs(s.wall_s)} | {md_text(in_flags(s.detail))} |")
    out += [f"| total | | {_secs(report.total_s)} | |", ""]
    if report.cells:
        out += [
            "## Every kernel input: measured side by side, predicted by the cost model",
            "",
            "| entry | kernel | input | launches | old ms | new ms | measured | predicted | compile-side |",
            "|---|---|---|---|---:|---:|---|---|---|",  # the times right-aligned: their points line up
        ]
        places = _places(report.cells)
        for r in report.cells:
            row = [
                str(r.entry),
                f"{r.kernel}:{r.function}",
                str(r.input),
                str(r.launches),
                _ms(r.old_ms, places),
                _ms(r.new_ms, places),
                _measured(r),
                _predicted(r),
                _compile_side(r),
            ]
            out.append("| " + " | ".join(md_text(x) for x in row) + " |")
        out.append("")
    if report.failures:
        out += (
            ["## Failed (the report is incomplete)", ""] + [f"- {md_text(in_flags(x))}" for x in report.failures] + [""]
        )
    if report.triage is not None:
        out += [triage_report.to_markdown(report.triage, level=2), ""]
    out += ["## The same steps, split across machines", ""]
    out += [f"- {md_text(s['where'])} ({md_text(s['step'])}): {md_code(s['command'])}" for s in _split(report)] + [""]
    return "\n".join(out)


def _split(report: ProgramReport) -> list[dict[str, str]]:
    return split_commands(report.command, report.old_toolchain, report.new_toolchain)


def print_table(report: ProgramReport, console: Console) -> None:
    console.print(f"[bold]{escape(report.headline())}[/]")
    for t in report.toolchains:
        console.print(
            f"{escape(t.side)}: {escape(t.spec)} (Triton {escape(t.triton)}, ptxas {escape(t.ptxas)}, {escape(t.id)})"
        )
    steps = Table(title="steps", title_justify="left")
    add_columns(steps, ("step", "status", "wall s", "what"))
    for s in report.steps:
        color = {"ok": "green", "partial": "yellow", "failed": "red"}.get(s.status, "dim")
        steps.add_row(escape(s.name), f"[{color}]{escape(s.status)}[/]", _secs(s.wall_s), escape(in_flags(s.detail)))
    steps.add_row("total", "", _secs(report.total_s), "")
    console.print(steps)
    if report.cells:
        cells = Table(
            title="every kernel input: measured side by side, predicted by the cost model", title_justify="left"
        )
        add_columns(cells, ("entry", "kernel", "input"))
        add_columns(cells, ("old ms", "new ms"), justify="right")
        add_columns(cells, ("measured", "predicted", "compile-side"))
        places = _places(report.cells)
        for r in report.cells:
            cells.add_row(
                str(r.entry),
                escape(f"{r.kernel}:{r.function}"),
                escape(str(r.input)),
                _ms(r.old_ms, places),
                _ms(r.new_ms, places),
                escape(_measured(r)),
                escape(_predicted(r)),
                escape(_compile_side(r)),
            )
        console.print(cells)
    for x in report.failures:
        console.print(f"[red]failed:[/] {escape(in_flags(x))}")
    if report.triage is not None:
        triage_report.print_table(report.triage, console)
