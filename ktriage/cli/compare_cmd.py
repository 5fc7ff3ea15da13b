"""`ktriage compare`: regressions, improvements and cliffs between two runs (or a run's toolchains).

Thin: options and outputs here; loading the sides and pairing them in ktriage.bench.compare_sides,
statistics in ktriage.stats.compare, rendering in ktriage.report. Exit status for CI: 1 when regressions are found, 0 otherwise, 2 for bad input.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.markup import escape

from ktriage.cli import exit_codes
from ktriage.cli.console import make_console, print_error
from ktriage.cli.options import (
    Db,
    Format,
    Mode,
    check_format,
    check_outputs,
    format_option,
    merge_outputs,
    mode_option,
    output_option,
    write_outputs,
)
from ktriage.errors import KtriageError

if TYPE_CHECKING:  # the statistics import scipy: loaded when compare runs, not for `ktriage compare --help`
    from rich.console import Console

    from ktriage.stats.compare import Comparison


FORMATS = ("table", "markdown", "json", "csv")
WRITERS = (".md", ".json", ".html", ".csv")


def compare(
    a: Annotated[
        str,
        typer.Argument(
            help="Reference: a results JSON file, a TritonBench CSV or JSON, or a run id (prefix) in the store."
        ),
    ],
    b: Annotated[
        str | None, typer.Argument(help="New: a results JSON file or a run id. Omit with --toolchains.")
    ] = None,
    toolchains: Annotated[
        bool,
        typer.Option("--toolchains", help="Compare the toolchains within run A, the first one being the reference."),
    ] = False,
    threshold: Annotated[
        float,
        typer.Option("--threshold", help="Magnitude gate: changes smaller than this fraction are 'same' (0.05 = 5%)."),
    ] = 0.05,
    confidence: Annotated[
        float, typer.Option("--confidence", help="Confidence level of the intervals and the U test (0.99: p < 0.01).")
    ] = 0.99,
    fmt: Annotated[Format, format_option(FORMATS)] = Format.table,
    output: Annotated[
        list[Path] | None,
        output_option(
            WRITERS,
            "The markdown summary is also appended to $GITHUB_STEP_SUMMARY when set; .html is self-contained with plots.",
        ),
    ] = None,
    markdown: Annotated[Path | None, typer.Option("--markdown", help="Older spelling of -o PATH.md.")] = None,
    html: Annotated[Path | None, typer.Option("--html", help="Older spelling of -o PATH.html.")] = None,
    baseline: Annotated[
        str | None,
        typer.Option("--baseline", help="The baseline backend (default: the run's, else TritonBench's for the op)."),
    ] = None,
    db: Db = None,
    op: Annotated[
        str | None, typer.Option("--op", help="The operator of a TritonBench CSV whose file name does not say it.")
    ] = None,
    mode: Annotated[Mode | None, mode_option("For a TritonBench CSV whose file name does not say it.")] = None,
    show_same: Annotated[bool, typer.Option("--all", help="Table: list 'same' pairs too.")] = False,
) -> None:
    """Compare two runs (or the toolchains of one): per input and backend a ratio with a confidence
    interval and a verdict (regression, improvement, same, unsure), the baseline check, cliffs along
    input sweeps. Exit 1 when regressions are found (for CI), 2 for bad input."""
    from ktriage.bench.compare_sides import build_comparisons
    from ktriage.stats.compare import exit_status
    from ktriage.stats.verdict import VerdictConfig

    try:
        if not 0 < threshold < 10:
            raise KtriageError(f"--threshold {threshold} is not a fraction", "give e.g. 0.05 for a 5% gate")
        if not 0.5 <= confidence < 1:
            raise KtriageError(f"--confidence {confidence} is outside [0.5, 1)", "give e.g. 0.99")
        check_format(fmt, FORMATS)
        outputs = merge_outputs(output, md=markdown, html=html)
        check_outputs(outputs, WRITERS)
        config = VerdictConfig(threshold=threshold, confidence=confidence)
        comps = build_comparisons(
            a,
            b,
            toolchains=toolchains,
            baseline=baseline,
            config=config,
            db=db,
            op=op,
            mode=mode.value if mode else None,
        )
        show_and_write(comps, fmt, outputs, show_same=show_same)
    except KtriageError as exc:  # as main() would; kept so that compare exits 2 when driven without main()
        print_error(exc)
        raise typer.Exit(exit_codes.USAGE) from exc
    raise typer.Exit(exit_status(comps))


def show_and_write(comps: list[Comparison], fmt: Format, outputs: list[Path], *, show_same: bool = False) -> None:
    """Print the comparisons on stdout in ``fmt``, write each ``-o`` file by its suffix, and append
    the markdown summary to ``$GITHUB_STEP_SUMMARY`` when it is set."""
    from ktriage.report.html import to_html
    from ktriage.report.markdown import to_markdown
    from ktriage.report.tabular import print_table, to_csv

    out = make_console()
    if fmt == Format.table:
        print_table(out, comps, show_same=show_same)
        print_counters(out, comps)
    elif fmt == Format.markdown:
        print(to_markdown(comps), end="")
    elif fmt == Format.json:
        print(to_json(comps))
    else:
        print(to_csv(comps), end="")
    write_outputs(
        outputs,
        {
            ".md": lambda: to_markdown(comps),
            ".json": lambda: to_json(comps) + "\n",
            ".csv": lambda: to_csv(comps),
            ".html": lambda: to_html(comps),
        },
        make_console(stderr=True),
    )
    summary = os.environ.get("GITHUB_STEP_SUMMARY")
    if summary:
        with open(summary, "a", encoding="utf-8") as fh:  # GitHub concatenates steps' summaries
            fh.write(to_markdown(comps) + "\n")


def print_counters(out: Console, comps: list[Comparison]) -> None:
    """Under the table: the Nsight Compute counters of each profiled pair, one line next to its verdict
    (the same lines as the markdown's ``Counters`` section)."""
    from ktriage.profile.quote import comparison_quotes
    from ktriage.report.markdown import profile_notes, quoted

    for c in comps:
        quotes = comparison_quotes(c)
        for q in quotes:
            out.print(
                f"[bold]counters[/] [{'red' if q.verdict == 'regression' else 'default'}]{escape(q.head())}[/] "
                f"{escape(q.label())}: {escape(q.text)}",
                soft_wrap=True,
            )
        for n in profile_notes(c):
            if not quoted(n, quotes):
                out.print(f"[yellow]not profiled:[/] {escape(n)}", soft_wrap=True)


def to_json(comps: list[Comparison]) -> str:
    """compare's JSON (``ktriage.report.tabular.to_json_doc``) with, per comparison, the counters
    quoted next to each profiled pair's verdict (``counters``) and the runs' profile notes."""
    import json

    from ktriage.profile.quote import comparison_quotes
    from ktriage.report.markdown import profile_notes
    from ktriage.report.tabular import to_json_doc

    doc = to_json_doc(comps)
    for entry, c in zip(doc["comparisons"], comps):
        entry["counters"] = [q.to_json() for q in comparison_quotes(c)]
        entry["profile_notes"] = profile_notes(c)
    return json.dumps(doc, indent=1)
