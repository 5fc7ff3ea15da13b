"""The triage report: markdown (a CI job summary), one self-contained HTML file, JSON, a terminal table.

Texts made in the library that name options (notes, what needs a GPU, the pricing's line) are
:class:`~ktriage.errors.Worded`: the terminal, the markdown and the HTML (what the command prints and
writes) name each by its flag (``in_flags``), the JSON keeps the library's words, keyword and flag.

Order, in every form: real/likely regressions with cause, culprit and fix first; then what is
not the compiler's (no compile-side change: noise, the baseline, the environment; unsure without a
GPU re-run; not explained); then improvements; then what could not be decided without a GPU and
what failed. Computing is in ``ktriage.triage``; this module only lays it out.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from ktriage.compare.not_compared import group_not_compared
from ktriage.errors import in_flags
from ktriage.mdsafe import markdown_writer, md_code, md_text
from ktriage.order import natural_key
from ktriage.report.html import _env
from ktriage.report.markdown import baseline_markdown, fmt_ms, ms_decimals, not_compared_rows
from ktriage.report.rich_table import add_columns
from ktriage.report.svg import Series, line_chart
from ktriage.report.tabular import print_baseline, print_not_compared_groups
from ktriage.stats.gate import gate_band
from ktriage.triage.model import CHANGES_PREFIX, CellTriage, SweepRow, TriageReport, changes_said
from ktriage.wording import fmt_pct, plural

SECTIONS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("Regressions (compile-side, or measured side by side), worst first", ("regression", "measured_regression")),
    (
        "Not the compiler: can't reproduce compile-side, noise, the baseline or the environment",
        ("noise", "not_compile_side", "unsure_measured", "unsure_no_gpu", "unsure_no_replay", "unexplained"),
    ),
    ("Improvements", ("improvement",)),
)
REGRESSION_KINDS = SECTIONS[0][1]


def _esc(text: str) -> str:
    """Text from the input (labels, notes, error messages): inert in a table cell or list item."""
    return md_text(text)


def _ms_places(cells: list[CellTriage]) -> int:
    """One table's decimal places for its old and new ms, as compare's tables (``ms_decimals``). Why: triage
    wrote every time with four places ("0.0748" above "0.2291"), compare the same pair with the column's
    four significant digits ("0.07480"): one cell read differently in the two reports of one pair of runs."""
    return ms_decimals(x for c in cells for x in (c.old_ms, c.new_ms))


def _fix_text(c: CellTriage) -> str:
    """The cell's fixes in a table cell: the recommended ones, verified first (at most 3); those the
    cost model predicts slower than the kernel as compiled are counted, not offered (explain --fixes
    and the JSON list them)."""
    recommended = [f for f in c.fixes if f.recommended]
    shown = [f for f in recommended if f.verified] or recommended
    slower = len(c.fixes) - len(recommended)
    tried = f"{plural(slower, 'fix', 'fixes')} tried, predicted slower: not recommended" if slower else ""
    return "; ".join(
        [f"{f.description}{' (verified by compiling)' if f.verified else ' (not verified)'}" for f in shown[:3]]
        + ([tried] if tried else [])
    )


def _culprit_text(c: CellTriage) -> str:
    if c.culprit is None:
        return ""
    if c.culprit.error:
        return f"bisect failed: {c.culprit.error}"
    return c.culprit.summary or ""


def _counters_markdown(cells: list[CellTriage]) -> list[str]:
    """The Nsight Compute counters of the cells that carry them, next to each one's compile-side finding."""
    rows = [c for c in cells if c.counters]
    if not rows:
        return []
    out = ["Counters (Nsight Compute), next to the compile-side finding:", ""]
    out += [
        f"- {_esc(c.label())} ({_esc(c.cause.text if c.cause else c.verdict_text)}): {_esc(c.counters or '')}"
        for c in rows
    ]
    return out + [""]


def setup_line(report: TriageReport, code: Callable[[str], str] = str, text: Callable[[str], str] = str) -> str:
    """``Toolchains: triton==3.3.1 -> triton==3.4.0; gate ±10%; target sm_90.``: what the verdicts were
    judged with, said under the headline in the terminal and the markdown (``code``/``text`` mark the
    toolchains and the target up for the format). The target too: the compile-side causes, culprits
    and fixes are that GPU's (--arch); and the SMs its predictions were priced for, and why that count
    (``--sm-count``, the results' GPU or the target's usual part: ``ktriage.triage.pricing``), as
    explain's ``Compiled for: sm_90; priced for 114 SMs`` says it."""
    old, new = code(report.old_toolchain or "unknown"), code(report.new_toolchain or "unknown")
    pricing = f"; {text(in_flags(report.pricing.text))}" if report.pricing is not None and report.pricing.text else ""
    return (
        f"Toolchains: {old} -> {new}; gate {gate_band(report.options.threshold)}; "
        f"target {text(report.options.arch)}{pricing}."
    )


def baseline_moves(report: TriageReport, leads: bool) -> list[str]:
    """Where the baseline itself moved past the gate (``BaselineMoves``): with ``leads``, the moves at the inputs of
    other flagged cells, which every form says right under the headline (the strongest evidence a pair has that the
    machine or the environment changed); else the others, said next to the baseline check."""
    return [m.text for m in report.baseline_moves if m.leads == leads]


def changes_refs(report: TriageReport) -> dict[str, int]:
    """Each distinct compile-side-changes sentence's number in the report ([1], [2] ...): said once, under the
    table of its first cells, and referred to by number from every row it concerns (as the causes are said once)."""
    return {x: k for k, x in enumerate(changes_said(report.cells), 1)}


def notes_text(c: CellTriage, refs: dict[str, int]) -> str:
    """A row's notes, its compile-side changes by their number (the sentence is under the table)."""
    ref = [f"{CHANGES_PREFIX} [{refs[f'{CHANGES_PREFIX}: {c.changes}']}]"] if c.changes else []
    return "; ".join([*map(in_flags, c.notes), *ref])


def changes_lines(cells: list[CellTriage], refs: dict[str, int], said: set[str]) -> list[str]:
    """The compile-side-changes sentences that ``cells`` (a section's rows) refer to and no section before said
    (``said``, which it adds them to), numbered: each once in the whole report."""
    new = [x for x in changes_said(cells) if x not in said]
    said.update(new)
    return [f"[{refs[x]}] {x}" for x in new]


def _capital(text: str) -> str:
    """A sentence that starts a paragraph of its own."""
    return text[:1].upper() + text[1:]


def _is_measured(report: TriageReport) -> bool:
    return report.measured is not None and report.measured.remeasured


def _measured_text(c: CellTriage) -> str:
    """The measured column: the side-by-side verdict with its interval, or why there is none."""
    from ktriage.triage.measure_read import describe

    return in_flags(describe(c.measured)) if c.measured is not None else ""


def _gpu_lines(report: TriageReport) -> list[str]:
    """The GPU step's own lines: the bundle and its command, the results read, the baseline."""
    m = report.measured
    if not m:
        return []
    out = []
    if m.note:
        out.append(in_flags(m.note))
    if m.results:
        out.append(
            "re-measured on the GPU, both toolchains side by side in one process: "
            + ", ".join(Path(x).name for x in m.results)
        )
    # a bundle written, not yet benched: its command is said once, in what needs a GPU (``gpu_needed``)
    out += m.baseline
    return out


def _decided(report: TriageReport) -> str:
    if _is_measured(report):
        return "every flagged cell was decided, by the side-by-side GPU re-run or compile-side"
    return "every flagged cell was decided compile-side"


def undecided_lines(report: TriageReport) -> list[str]:
    """What only a GPU re-run can decide, or the one line saying nothing is left: the markdown's section
    and the terminal's lines, one home so the two say the same."""
    return [in_flags(x) for x in report.gpu_needed] or [f"nothing: {_decided(report)}"]


def cause_summaries(cells: list[CellTriage]) -> list[str]:
    """The regressions' causes in explain's words, each said once (cells of one cause share it): under
    the regressions' table in the markdown and in the terminal."""
    return list(dict.fromkeys(c.cause.summary for c in cells if c.cause))


# Above this many compared cells the JSON is written compact: Python's indenting encoder is pure
# Python, ten times slower than the compact one (200,000 rows took longer to write than to triage).
INDENT_UP_TO = 20_000


def to_json(report: TriageReport) -> str:
    return json.dumps(report.to_json(), indent=1 if len(report.sweep) <= INDENT_UP_TO else None)


@markdown_writer
def to_markdown(report: TriageReport, level: int = 2) -> str:
    h = "#" * level
    out = [
        f"{h} ktriage triage: {md_code(report.old)} -> {md_code(report.new)}",
        "",
        f"**{report.headline()}**",
        "",
        *[x for m in baseline_moves(report, leads=True) for x in (f"**{_esc(_capital(m))}**", "")],
        setup_line(report, code=md_code, text=_esc),
        "",
    ]
    if report.model is not None:  # which model priced the predictions, and what its intervals cover
        out += [_esc(report.model.line(coverage=True)), ""]
    # before the verdicts, as the HTML and the terminal: a moved baseline changes how every row is read
    out += [baseline_markdown(report.baseline), ""]
    out += [x for m in baseline_moves(report, leads=False) for x in (_esc(_capital(m)), "")]
    refs, said = changes_refs(report), set[str]()
    for title, kinds in SECTIONS:
        cells = [c for c in report.cells if c.verdict in kinds]
        if not cells:
            continue
        out += [f"{h}# {title}", ""]
        measured = _is_measured(report)
        if kinds == REGRESSION_KINDS:
            out.append(
                "| # | cell | old ms | new ms | change | cause | culprit | fix |"
                + (" measured side by side |" if measured else "")
            )
            # the numbers right-aligned, as compare's, so their decimal points line up
            out.append("|---|---|---:|---:|---:|---|---|---|" + ("---|" if measured else ""))
            places = _ms_places(cells)
            for k, c in enumerate(cells, 1):
                cause = (
                    f"**{_esc(c.cause.text)}**"
                    if c.cause
                    else ("no compile-side cause found" if c.verdict == "measured_regression" else "")
                )
                row = [_esc(x) for x in (str(k), c.label(), fmt_ms(c.old_ms, places), fmt_ms(c.new_ms, places))] + [
                    f"**{fmt_pct(c.ratio)}**",
                    cause,
                ]
                row += [_esc(x) for x in [_culprit_text(c), _fix_text(c)] + ([_measured_text(c)] if measured else [])]
                out.append("| " + " | ".join(row) + " |")
            out.append("")
            out += [f"- {_esc(s)}" for s in cause_summaries(cells)]
            out.append("")
            out += _counters_markdown(cells)
        else:
            out.append(
                "| cell | old ms | new ms | change | verdict |"
                + (" measured side by side |" if measured else "")
                + " notes |"
            )
            out.append("|---|---:|---:|---:|---|---|" + ("---|" if measured else ""))
            places = _ms_places(cells)
            for c in cells:
                row = [c.label(), fmt_ms(c.old_ms, places), fmt_ms(c.new_ms, places), fmt_pct(c.ratio), c.verdict_text]
                row += ([_measured_text(c)] if measured else []) + [notes_text(c, refs)]
                out.append("| " + " | ".join(_esc(x) for x in row) + " |")
            out.append("")
            lines = changes_lines(cells, refs, said)
            out += [f"- {_esc(x)}" for x in lines] + ([""] if lines else [])
            out += _counters_markdown(cells)
    gpu = _gpu_lines(report)
    if gpu:
        out += [f"{h}# The GPU re-run", ""] + [f"- {_esc(x)}" for x in gpu] + [""]
    out += [f"{h}# What this triage could not decide without a GPU", ""]
    out += [f"- {x}" for x in undecided_lines(report)]
    out.append("")
    if report.failures:
        out += [f"{h}# Failed (the report is incomplete)", ""] + [f"- {_esc(in_flags(x))}" for x in report.failures]
        out += [""]
    if report.notes:
        out += [f"- {_esc(in_flags(x))}" for x in report.notes] + [""]
    if report.not_compared:
        n = len(report.not_compared)
        out += [f"{h}# Not compared: {plural(n, 'cell')} (the report is incomplete)", ""]
        out += not_compared_rows(group_not_compared(report.not_compared))
    return "\n".join(out)


def _row(c: CellTriage, refs: dict[str, int], places: int) -> dict[str, str]:
    return {
        "label": c.label(),
        "old": fmt_ms(c.old_ms, places),
        "new": fmt_ms(c.new_ms, places),
        "change": fmt_pct(c.ratio),
        "verdict": c.verdict_text,
        "kind": c.verdict,
        "cause": c.cause.text if c.cause else "",
        "summary": c.cause.summary if c.cause else "",
        "culprit": _culprit_text(c),
        "fix": _fix_text(c),
        "notes": notes_text(c, refs),
        "counters": c.counters or "",
        "measured": _measured_text(c),
    }


# triage verdict -> point colour on the sweep chart (grey: not flagged)
COLOURS = {
    "regression": "#b00020",
    "not_compile_side": "#c77700",
    "unsure_no_gpu": "#c77700",
    "unexplained": "#6a1b9a",
    "improvement": "#2e7d32",
    "measured_regression": "#b00020",
    "noise": "#777777",
    "unsure_measured": "#c77700",
    "unsure_no_replay": "#c77700",
}


MAX_CHART_INPUTS = 2_000  # a sweep chart's inputs at most: more are not readable, and the SVG grows without bound


def _thin(rows: list[SweepRow]) -> tuple[list[SweepRow], str]:
    """A sweep's rows for its chart: all when few; else every flagged input and evenly spaced others,
    and the words that say so in the chart's title."""
    ids = sorted({r.input_id for r in rows})
    if len(ids) <= MAX_CHART_INPUTS:
        return rows, ""
    step = -(-len(ids) // MAX_CHART_INPUTS)
    keep = set(ids[::step]) | {r.input_id for r in rows if r.verdict}
    return [r for r in rows if r.input_id in keep], f"; {len(keep)} of {len(ids)} inputs shown (every flagged one)"


def sweep_charts(report: TriageReport) -> list[str]:
    """Per (op, mode): new/old latency ratio along the inputs for every backend, the gate as a band,
    each point coloured by its triage verdict (grey when not flagged)."""
    charts = []
    gate = 1.0 + report.options.threshold
    groups: dict[tuple[str, str], list[SweepRow]] = {}
    for row in report.sweep:
        if row.ratio:
            groups.setdefault((row.op, row.mode), []).append(row)
    # a flagged cell's verdict in its own words (the baseline's are not "no compile-side change predicts it")
    words = {(c.op, c.mode, c.input_id, c.backend): c.verdict_text for c in report.cells}
    for (op, mode), rows in sorted(groups.items()):
        rows, thinned = _thin(rows)
        xs = sorted({(r.input_id, r.input) for r in rows})
        pos = {i: k for k, (i, _) in enumerate(xs)}
        series = []
        for backend in sorted({r.backend for r in rows}, key=natural_key):
            mine = sorted((r for r in rows if r.backend == backend), key=lambda r: r.input_id)
            s = Series(backend, [(pos[r.input_id], float(r.ratio or 0.0)) for r in mine])
            for r in mine:
                s.point_colours[pos[r.input_id]] = COLOURS.get(r.verdict or "", "#999")
                s.point_titles[pos[r.input_id]] = (
                    f"{backend} {r.input}: {r.ratio:.3f}x ({words.get((r.op, r.mode, r.input_id, r.backend), 'not flagged')})"
                )
            series.append(s)
        charts.append(
            line_chart(
                [lab for _, lab in xs],
                series,
                y_label="new / old",
                log_y=True,
                band=(1 / gate, gate),
                ref_line=1.0,
                title=f"{op} {mode}: new/old latency ratio (band: the {gate_band(report.options.threshold)} gate)"
                + thinned,
                css_class="chart ratio-chart",
            )
        )
    return charts


def to_html(report: TriageReport, title: str = "ktriage triage") -> str:
    from markupsafe import Markup

    refs, said = changes_refs(report), set[str]()
    sections = []
    for t, kinds in SECTIONS:
        cells = [c for c in report.cells if c.verdict in kinds]
        places = _ms_places(cells)
        sections.append(
            {
                "title": t,
                "regression": kinds == REGRESSION_KINDS,
                "rows": [_row(c, refs, places) for c in cells],
                # the regressions' table shows no notes (cause, culprit, fix): its cells' changes are not said there
                "changes": changes_lines(cells, refs, said) if kinds != REGRESSION_KINDS else [],
            }
        )
    return (
        _env()
        .get_template("triage.html.j2")
        .render(
            title=title,
            r=report,
            headline=report.headline(),
            sections=[s for s in sections if s["rows"]],
            measured=_is_measured(report),
            gpu_lines=_gpu_lines(report),
            gpu_needed=[in_flags(x) for x in report.gpu_needed],
            failures=[in_flags(x) for x in report.failures],
            notes=[in_flags(x) for x in report.notes],
            pricing=in_flags(report.pricing.text) if report.pricing is not None else "",
            leads=baseline_moves(report, leads=True),
            moves=baseline_moves(report, leads=False),
            decided=_decided(report),
            charts=[Markup(svg) for svg in sweep_charts(report)],
            not_compared=group_not_compared(report.not_compared),
        )
    )  # line_chart escapes its texts


def print_table(report: TriageReport, console: Console) -> None:
    console.print(f"[bold]{escape(report.headline())}[/]")
    for m in baseline_moves(report, leads=True):  # the strongest evidence of the machine or the environment: first
        console.print(f"[bold yellow]{escape(_capital(m))}[/]")
    console.print(escape(setup_line(report)))
    if report.model is not None:
        console.print(escape(report.model.line(coverage=True)))
    print_baseline(console, report.baseline)  # as the markdown and HTML: a moved one may be the cause
    for m in baseline_moves(report, leads=False):
        console.print(f"[yellow]{escape(_capital(m))}[/]")
    refs, said = changes_refs(report), set[str]()
    for title, kinds in SECTIONS:
        cells = [c for c in report.cells if c.verdict in kinds]
        if not cells:
            continue
        table = Table(title=title, title_justify="left")
        measured = _is_measured(report)
        add_columns(table, ("cell",))
        # the numbers right-aligned with one table's places, as compare's: their decimal points line up
        add_columns(table, ("old ms", "new ms", "change"), justify="right")
        add_columns(
            table, ("verdict", *(["measured side by side"] if measured else []), "cause / culprit / fix or notes")
        )
        places = _ms_places(cells)
        for c in cells:
            detail = " | ".join(
                x for x in [c.cause.text if c.cause else "", _culprit_text(c), _fix_text(c)] if x
            ) or notes_text(c, refs)
            if c.counters:
                detail += f" | counters: {c.counters}"
            table.add_row(
                escape(c.label()),
                fmt_ms(c.old_ms, places),
                fmt_ms(c.new_ms, places),
                fmt_pct(c.ratio),
                escape(c.verdict_text),
                *([escape(_measured_text(c))] if measured else []),
                escape(detail),
            )
        console.print(table)
        if kinds == REGRESSION_KINDS:
            for s in cause_summaries(cells):
                console.print(f"[bold]cause:[/] {escape(s)}")
        for x in changes_lines(cells, refs, said):  # said once here, referred to by number from the rows
            console.print(escape(x))
    for x in _gpu_lines(report):
        console.print(f"[cyan]GPU re-run:[/] {escape(x)}")
    style = "yellow" if report.gpu_needed else "green"  # "nothing: every flagged cell was decided ..." is good news
    for x in undecided_lines(report):
        console.print(f"[{style}]needs a GPU:[/] {escape(x)}")
    for x in report.notes:  # e.g. two dtypes compared on purpose (--allow-precision-mismatch)
        console.print(f"[yellow]note:[/] {escape(in_flags(x))}")
    for x in report.failures:
        console.print(f"[red]failed:[/] {escape(in_flags(x))}")
    print_not_compared_groups(console, group_not_compared(report.not_compared))
