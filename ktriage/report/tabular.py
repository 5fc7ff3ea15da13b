"""A compare as a terminal table (with the counters quoted under it) or CSV (one row per pair).

Its JSON is made in one place, ``ktriage.compare.report.CompareReport.to_json``."""

from __future__ import annotations

import csv
import io
import math

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from ktriage.compare.not_compared import NotComparedGroups, group_not_compared
from ktriage.compare.pairing import BaselineCheck, Comparison, PairResult
from ktriage.compare.quote import comparison_quotes
from ktriage.compare.report import CompareReport
from ktriage.report.markdown import (
    NO_BASELINE_CHECK,
    fmt_ci,
    fmt_ms,
    headline,
    method_text,
    pairs_ms_decimals,
    quoted,
    run_lines,
)
from ktriage.report.rich_table import add_columns
from ktriage.wording import fmt_pct, plural

CSV_COLUMNS = (
    "ref",
    "new",
    "op",
    "mode",
    "input_id",
    "input",
    "backend",
    "ref_toolchain",
    "new_toolchain",
    "is_baseline",
    "verdict",
    "ratio",
    "ci_low",
    "ci_high",
    "p_value",
    "ref_median_ms",
    "new_median_ms",
    "n_ref",
    "n_new",
    "reason",
    # last, so a reader of the columns above by position reads what it did (docs/compare.md#outputs)
    "missing_side",
    "missing_toolchain",
    # after those, for the same reason: what the JSON's pairs carry and the CSV did not (1/0 as is_baseline)
    "failed_side",
    "one_turn",
)

_STYLE = {
    "regression": "bold red",
    "improvement": "green",
    "same": "dim",
    "unsure": "yellow",
}


def _num(v: float) -> str:
    return repr(v) if math.isfinite(v) else ""


def to_csv(report: CompareReport) -> str:
    out = io.StringIO()
    w = csv.writer(out, lineterminator="\n")
    w.writerow(CSV_COLUMNS)
    for c in report.comparisons:
        for p in c.pairs:
            v = p.verdict
            w.writerow(
                [
                    c.ref_label,
                    c.new_label,
                    p.op,
                    p.mode,
                    p.input_id,
                    p.input_label,
                    p.backend,
                    p.ref_toolchain or "",
                    p.new_toolchain or "",
                    int(p.is_baseline),
                    p.kind,
                    *(
                        (
                            _num(v.ratio),
                            _num(v.ci_low),
                            _num(v.ci_high),
                            _num(v.p_value),
                            _num(v.median_ref),
                            _num(v.median_new),
                            v.n_ref,
                            v.n_new,
                            v.reason,
                        )
                        if v
                        else ("", "", "", "", "", "", "", "", p.problem or "")
                    ),
                    p.missing_side or "",
                    p.missing_toolchain or "",
                    p.failed_side or "",
                    int(p.one_turn),
                ]
            )
    return out.getvalue()


def _row(c: Comparison, p: PairResult, decimals: int) -> list[str]:
    v = p.verdict
    assert v is not None  # the pairs not compared are listed under the table, not in it
    style = _STYLE.get(p.kind, "")
    kind = f"[{style}]{p.kind}[/]" if style else p.kind
    return [
        escape(f"{p.op}.{p.mode}"),
        escape(p.input_label),
        escape(c.row_backend(p)),
        fmt_ms(v.median_ref, decimals),
        fmt_ms(v.median_new, decimals),
        fmt_pct(v.ratio),
        fmt_ci(p),
        kind,
        escape(v.why() if p.kind == "unsure" else ""),
    ]


# A terminal table past this many rows is unreadable, and rich takes ~1.5 ms a row to lay it out
# (20,000 regressions: 30 s); the full list is in --format csv/json and -o FILE.csv/.json/.md.
MAX_TABLE_ROWS = 500


def print_table(
    console: Console, report: CompareReport, show_same: bool = False, max_rows: int = MAX_TABLE_ROWS
) -> None:
    """Regressions first (worst first), then improvements and unsure; 'same' on request. At most
    ``max_rows`` rows per comparison, then a line saying how many more there are; under the table the
    cells not compared, counted per reason (:func:`print_not_compared_groups`)."""
    for c in report.comparisons:
        console.print(
            f"[bold]{escape(c.ref_label)} -> {escape(c.new_label)}[/]: {escape(headline(c))} ({escape(method_text(c))})"
        )
        print_baseline(console, c.baseline)
        t = Table(show_lines=False)
        add_columns(t, ("op", "input", "backend"), overflow="fold")
        # numbers right-aligned, so their decimal points and signs line up down a column ("0.0423" under "0.2828")
        add_columns(
            t, ("ref ms", "new ms", "change", f"{c.config.confidence:.0%} CI"), overflow="fold", justify="right"
        )
        add_columns(t, ("verdict", "why"), overflow="fold")
        rows = [*c.regressions(), *c.improvements(), *c.unsure(), *(c.same() if show_same else [])]
        shown = rows[:max_rows]
        # one number of decimal places for both ms columns of the rows shown: their points line up
        decimals = pairs_ms_decimals(shown)
        for p in shown:
            t.add_row(*_row(c, p, decimals))
        if rows:
            console.print(t)
        if len(rows) > max_rows:
            console.print(
                f"[dim]... and {len(rows) - max_rows} more rows, not shown: --format csv or json, or -o FILE.csv, lists them all[/]"
            )
        print_not_compared_groups(console, group_not_compared(c.not_compared_cells(rows=True)))
        for f in c.cliffs:
            console.print(f"[cyan]cliff[/] {escape(f.describe())}")
        for line in run_lines(c):  # which runs, GPU and driver the numbers are, as the markdown's "Runs:"
            console.print(f"[dim]{escape(line)}[/]", soft_wrap=True)
        console.print()


def print_baseline(console: Console, b: BaselineCheck | None) -> None:
    """The baseline check's message, red where the baseline moved, yellow where it needs reading (as
    the markdown marks WARNING and Note: ``baseline_markdown``); compare's and triage's terminal both.
    The message names the baseline in its first words: no "baseline: " label."""
    if b is None:
        console.print(f"[dim]{NO_BASELINE_CHECK}[/]")
        return
    style = "red" if b.status == "moved" else ("yellow" if b.status in ("unsure", "absent", "none") else "dim")
    console.print(f"[{style}]{escape(b.message)}[/]")


def print_not_compared_groups(console: Console, groups: NotComparedGroups) -> None:
    """The cells no verdict covers, under compare's and triage's table: per reason (most cells first) its count, its
    first cells and "and N more", as the markdown and the HTML group them (``group_not_compared``). One
    line per cell buried the verdicts under hundreds when a side lacked a whole operator."""
    for g in groups.reasons:
        console.print(f"[red]not compared:[/] {escape(plural(g.count, 'cell'))}: {escape(g.reason)}", soft_wrap=True)
        for label in g.labels:
            console.print(f"    {escape(label)}", soft_wrap=True)
        if g.more:
            console.print(f"    and {g.more} more")
    if groups.other_reasons:
        console.print(
            f"[red]not compared:[/] {plural(groups.other_cells, 'cell')} for {plural(groups.other_reasons, 'other reason')}"
            " (--format json lists every cell with its reason)"
        )
    elif any(g.more for g in groups.reasons):
        console.print("[dim](--format json lists every cell not compared, with its reason)[/]")


def print_counters(console: Console, report: CompareReport) -> None:
    """Under the table: the Nsight Compute counters of each profiled pair, one line next to its verdict
    (the same lines as the markdown's ``Counters`` section)."""
    for c in report.comparisons:
        quotes = comparison_quotes(c)
        for q in quotes:
            console.print(
                f"[bold]counters[/] [{'red' if q.verdict == 'regression' else 'default'}]{escape(q.head())}[/] "
                f"{escape(q.label())}: {escape(q.text)}",
                soft_wrap=True,
            )
        for n in c.profile_notes():
            if not quoted(n, quotes):
                console.print(f"[yellow]not profiled:[/] {escape(n)}", soft_wrap=True)
