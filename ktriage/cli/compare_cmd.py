"""`ktriage compare`: regressions, improvements and cliffs between two runs (or a run's toolchains).

Thin: loading sides and writing outputs here, statistics in ktriage.stats.compare, rendering in
ktriage.report. Exit status for CI: 1 when regressions are found, 0 otherwise, 2 for bad input.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.markup import escape

from ktriage.cli import exit_codes
from ktriage.cli.console import make_console, print_error
from ktriage.cli.options import Db, Format, Mode, mode_option, check_format, check_outputs, format_option, merge_outputs, output_option, write_outputs
from ktriage.errors import KtriageError

if TYPE_CHECKING:  # the statistics import scipy: loaded when compare runs, not for `ktriage compare --help`
    from ktriage.measure.cells import Cell, RunInfo
    from ktriage.stats.compare import Comparison
    from ktriage.stats.verdict import VerdictConfig


FORMATS = ("table", "markdown", "json", "csv")
WRITERS = (".md", ".json", ".html", ".csv")


def load_side(ref: str, db: str | None = None, *, op: str | None = None, mode: str | None = None) -> tuple[RunInfo, list[Cell], str]:
    """A results file if ``ref`` is a path (ktriage's JSON, or TritonBench's CSV or JSON: ``op``/``mode``
    for a CSV whose name does not say them), else a run id (or unique prefix) in the store."""
    path = Path(ref)
    if path.suffix in (".json", ".csv") or path.exists():
        from ktriage.measure.tritonbench_format import read_run_file

        run, cells = read_run_file(path, op=op, mode=mode)
        _check_cells(cells, str(path))
        return run, cells, path.stem
    try:
        from ktriage.store import open_store
    except ImportError as exc:  # the store is optional for file comparisons
        raise KtriageError(f"{ref!r} is not a results file, and the results store is not available ({exc})",
                           "pass result JSON files written by `ktriage bench --output-json`") from exc  # fmt: skip
    store = open_store(db)
    try:
        run, cells = store.load_run(ref)
    finally:
        store.close()
    _check_cells(cells, f"run {run.run_id}")
    return run, cells, run.run_id


def _check_cells(cells: list[Cell], what: str) -> None:
    """A side without cells compares to nothing: refused, not an empty table that exits 0."""
    if not cells:
        raise KtriageError(f"{what} has no cells: there is nothing to compare",
                           "give a results file or run that measured something (ktriage runs show RUN lists its cells)")


def _check_baseline(baseline: str | None, *sides: list[Cell]) -> None:
    """``--baseline`` must name a backend of the results: an unknown one would silently check nothing."""
    if baseline is None:
        return
    backends = sorted({c.key.backend for cells in sides for c in cells})
    if baseline not in backends:
        raise KtriageError(f"--baseline {baseline!r} is not a backend of these results",
                           f"use one of: {', '.join(backends)}")


def build_comparisons(
    a: str, b: str | None, *, toolchains: bool, baseline: str | None, config: VerdictConfig, db: str | None = None,
    op: str | None = None, mode: str | None = None,
) -> list[Comparison]:
    from ktriage.ops.registry import default_baselines
    from ktriage.stats.compare import compare_cells, compare_toolchains, run_toolchains

    if toolchains:
        if b is not None:
            raise KtriageError("--toolchains compares the toolchains of ONE run, but two were given", "drop the second argument or --toolchains")
        run, cells, _ = load_side(a, db)
        _check_baseline(baseline, cells)
        tcs = run_toolchains(run, cells)
        if len(tcs) < 2:
            raise KtriageError(f"run {run.run_id} has {len(tcs)} toolchain(s) with cells; --toolchains needs two or more",
                               "measure with several --toolchain options, or compare two runs: ktriage compare A B")  # fmt: skip
        return compare_toolchains(cells, run=run, baseline=baseline, config=config, default_baselines=default_baselines())
    if b is None:
        raise KtriageError("compare needs two runs or result files (or one run with --toolchains)", "e.g. ktriage compare old.json new.json")
    run_a, cells_a, label_a = load_side(a, db, op=op, mode=mode)
    run_b, cells_b, label_b = load_side(b, db, op=op, mode=mode)
    _check_baseline(baseline, cells_a, cells_b)
    if label_a == label_b:
        label_a, label_b = f"{label_a} (A)", f"{label_b} (B)"
    return [compare_cells(cells_a, cells_b, ref_label=label_a, new_label=label_b, ref_run=run_a, new_run=run_b, baseline=baseline, config=config,
                          default_baselines=default_baselines())]


def compare(
    a: Annotated[str, typer.Argument(help="Reference: a results JSON file, a TritonBench CSV or JSON, or a run id (prefix) in the store.")],
    b: Annotated[str | None, typer.Argument(help="New: a results JSON file or a run id. Omit with --toolchains.")] = None,
    toolchains: Annotated[bool, typer.Option("--toolchains", help="Compare the toolchains within run A, the first one being the reference.")] = False,
    threshold: Annotated[float, typer.Option("--threshold", help="Magnitude gate: changes smaller than this fraction are 'same' (0.05 = 5%).")] = 0.05,
    confidence: Annotated[float, typer.Option("--confidence", help="Confidence level of the intervals and the U test (0.99: p < 0.01).")] = 0.99,
    fmt: Annotated[Format, format_option(FORMATS)] = Format.table,
    output: Annotated[list[Path] | None, output_option(WRITERS, "The markdown summary is also appended to $GITHUB_STEP_SUMMARY when set; .html is self-contained with plots.")] = None,
    markdown: Annotated[Path | None, typer.Option("--markdown", help="Older spelling of -o PATH.md.")] = None,
    html: Annotated[Path | None, typer.Option("--html", help="Older spelling of -o PATH.html.")] = None,
    baseline: Annotated[str | None, typer.Option("--baseline", help="The baseline backend (default: the run's, else TritonBench's for the op).")] = None,
    db: Db = None,
    op: Annotated[str | None, typer.Option("--op", help="The operator of a TritonBench CSV whose file name does not say it.")] = None,
    mode: Annotated[Mode | None, mode_option("For a TritonBench CSV whose file name does not say it.")] = None,
    show_same: Annotated[bool, typer.Option("--all", help="Table: list 'same' pairs too.")] = False,
) -> None:
    """Compare two runs (or the toolchains of one): per input and backend a ratio with a confidence
    interval and a verdict (regression, improvement, same, unsure), the baseline check, cliffs along
    input sweeps. Exit 1 when regressions are found (for CI), 2 for bad input."""
    from ktriage.stats.compare import exit_status
    from ktriage.stats.verdict import VerdictConfig

    try:
        if not 0 < threshold < 10:
            raise KtriageError(f"--threshold {threshold} is not a fraction", "give e.g. 0.05 for a 5% gate")
        if not 0.5 <= confidence < 1:
            raise KtriageError(f"--confidence {confidence} is outside [0.5, 1)", "give e.g. 0.99")
        check_format(fmt, FORMATS)
        outputs = merge_outputs(output, markdown, html)
        check_outputs(outputs, WRITERS)
        config = VerdictConfig(threshold=threshold, confidence=confidence)
        comps = build_comparisons(a, b, toolchains=toolchains, baseline=baseline, config=config, db=db, op=op,
                                  mode=mode.value if mode else None)
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
    from ktriage.report.tabular import print_table, to_csv, to_json

    out = make_console()
    if fmt == Format.table:
        print_table(out, comps, show_same=show_same)
    elif fmt == Format.markdown:
        print(to_markdown(comps), end="")
    elif fmt == Format.json:
        print(to_json(comps))
    else:
        print(to_csv(comps), end="")
    write_outputs(outputs, {
        ".md": lambda: to_markdown(comps), ".json": lambda: to_json(comps) + "\n", ".csv": lambda: to_csv(comps),
        ".html": lambda: to_html(comps),
    }, make_console(stderr=True))
    summary = os.environ.get("GITHUB_STEP_SUMMARY")
    if summary:
        with open(summary, "a", encoding="utf-8") as fh:  # GitHub concatenates steps' summaries
            fh.write(to_markdown(comps) + "\n")
