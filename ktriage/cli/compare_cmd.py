"""`ktriage compare`: regressions, improvements and cliffs between two runs (or a run's toolchains).

Thin: options here; the compare itself is one call, :func:`ktriage.api.compare` (loading the sides,
pairing them, the statistics), rendered by :class:`ktriage.api.CompareView`. Exit status for CI
(``ktriage.exit_status``): 4 when a cell was not compared (a partial result, as triage and explain
exit; ``--allow-failures`` gives the status of the rest), else 1 when regressions are found, 0 otherwise,
2 for bad input.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from ktriage.cli import exit_codes
from ktriage.cli.console import make_console, print_error
from ktriage.cli.options import (
    AllowFailures,
    AllowPrecisionMismatch,
    Db,
    Format,
    Mode,
    append_step_summary,
    check_format,
    check_outputs,
    emit,
    format_option,
    merge_outputs,
    mode_option,
    output_option,
    step_summary,
)
from ktriage.errors import KtriageError
from ktriage.wording import plural

if TYPE_CHECKING:  # the statistics import scipy: loaded when compare runs, not for `ktriage compare --help`
    from ktriage.api import CompareReport


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
        str | None,
        typer.Argument(
            help="New: as the reference (a results JSON file, a TritonBench CSV or JSON, or a run id). Omit with --toolchains."
        ),
    ] = None,
    toolchains: Annotated[
        bool,
        typer.Option("--toolchains", help="Compare the toolchains within run A, the first one being the reference."),
    ] = False,
    reference: Annotated[
        str | None,
        typer.Option(
            "--reference",
            help="With --toolchains: the reference toolchain (its id as compare prints it, or a unique part"
            " of one, e.g. triton==3.4.0) instead of the first.",
        ),
    ] = None,
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
    allow_precision_mismatch: AllowPrecisionMismatch = False,
    allow_failures: AllowFailures = False,
) -> None:
    """Compare two runs (or the toolchains of one): per input and backend a ratio with a confidence
    interval and a verdict (regression, improvement, same, unsure), the baseline check, cliffs along
    input sweeps. Exit 1 when regressions are found (for CI), 4 when some cells were not compared
    (before 1; --allow-failures gives 0/1 then), 2 for bad input."""
    from ktriage.api import compare as compare_api

    try:
        check_format(fmt, FORMATS)
        outputs = merge_outputs(output, md=markdown, html=html)
        check_outputs(outputs, WRITERS, inputs=[a, b])
        summary = step_summary()  # before the work: a summary it cannot append to would turn exit 1 into 2
        report = compare_api(
            old=a,
            new=b,
            toolchains=toolchains,
            reference=reference,
            baseline=baseline,
            threshold=threshold,
            confidence=confidence,
            db=db,
            op=op,
            mode=mode.value if mode else None,
            allow_precision_mismatch=allow_precision_mismatch,
        )
        show_and_write(report, fmt, outputs, summary, show_same=show_same)
    except KtriageError as exc:  # as main() would; kept so that compare exits 2 when driven without main()
        print_error(exc)
        raise typer.Exit(exit_codes.USAGE) from exc
    say_incomplete(report, fmt, allow_failures=allow_failures)
    raise typer.Exit(report.exit_code(allow_failures))


def say_incomplete(report: CompareReport, fmt: Format, *, allow_failures: bool) -> None:
    """The last line, after every output is written: why the exit status is 4 (or, allowed, is not),
    and which status the regressions alone give, so a CI log says what the number means.
    On stderr unless the table is printed, so that json, csv and markdown on stdout stay whole."""
    if report.complete:
        return
    found = f"{plural(report.regression_count, 'regression')} found"
    rest = exit_codes.outcome(finding=report.has_regressions)
    if allow_failures:
        then = f"exit code {rest.value} ({found}; --allow-failures)"
    else:
        then = f"exit code {exit_codes.INCOMPLETE.value} (pass --allow-failures for {rest.value}: {found})"
    make_console(stderr=fmt != Format.table).print(
        f"[red]incomplete:[/] {plural(report.not_compared_count, 'cell')} not compared (each is listed with its reason:"
        f" every one in --format json, per comparison: not_compared as lines, not_compared_cells as objects with"
        f" cell, reason and side apart); the other verdicts are complete; {then}."
    )


def show_and_write(
    report: CompareReport, fmt: Format, outputs: list[Path], summary: str | None, *, show_same: bool = False
) -> None:
    """Print the report on stdout in ``fmt``, write each ``-o`` file by its suffix, and append the
    markdown summary to ``summary`` (``$GITHUB_STEP_SUMMARY``, checked before the work) when it is set."""
    from ktriage.api import CompareView

    view = CompareView(report)
    writers = {".md": view.to_markdown, ".json": view.json_text, ".csv": view.to_csv, ".html": view.to_html}
    emit(
        fmt, writers, lambda: view.print_table(make_console(), show_same=show_same), outputs, make_console(stderr=True)
    )
    append_step_summary(summary, view.to_markdown())
