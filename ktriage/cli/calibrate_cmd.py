"""`ktriage calibrate`: refit the cost model on your own GPU measurements (docs/model.md).

Every team's bench runs improve its model: the GPU verdicts of toolchains timed side by side
(results files, or runs in a store) are paired with the explain report of the same kernels and
toolchains (``ktriage explain ... --format json -o E.json``: the compile-side facts), the model's
free parameters are fitted, and the fit is scored holding out one operator at a time. The
parameters file it writes is what ``explain --model FILE`` (or ``KTRIAGE_MODEL=FILE``) uses.
``--score-only`` fits nothing: it sets the model's predictions (``--model``, else the shipped fit) next to
the GPU's verdicts (:func:`ktriage.api.score_model`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer
from rich.markup import escape

from ktriage.api import DEFAULT_LEVEL, DEFAULT_THRESHOLD, score_model
from ktriage.api import calibrate as calibrate_api
from ktriage.api.paths import check_replaceable, check_writable
from ktriage.atomic import write_atomic
from ktriage.cli.console import make_console
from ktriage.cli.options import Db, Model
from ktriage.errors import KtriageError


def calibrate(
    from_cells: Annotated[
        list[Path] | None,
        typer.Option(
            "--from", help="A calibration dataset (cells.jsonl, e.g. benchmarks/calibration/cells.jsonl), repeatable."
        ),
    ] = None,
    results: Annotated[
        list[Path] | None,
        typer.Option(
            "--results",
            help="A bench results file whose toolchains were timed side by side, repeatable; each pairs with the --explain of the same position.",
        ),
    ] = None,
    run: Annotated[
        list[str] | None,
        typer.Option(
            "--run",
            help="A bench run in the store (--db), repeatable; pairs with the --explain after the --results ones.",
        ),
    ] = None,
    explain: Annotated[
        list[Path] | None,
        typer.Option(
            "--explain",
            help="The explain JSON report of the same kernels and toolchains, one per --results/--run, in order.",
        ),
    ] = None,
    operator: Annotated[
        list[str] | None,
        typer.Option(
            "--operator",
            help="The operator name of each --results/--run (cross-validation holds out operators); default: the run's op.",
        ),
    ] = None,
    backend: Annotated[
        list[str] | None,
        typer.Option(
            "--backend",
            help="For a catalog op's results: the artifact backend the report compiled (e.g. liger_layer_norm), one per source or one for all.",
        ),
    ] = None,
    db: Db = None,
    output: Annotated[
        Path | None,
        typer.Option("-o", "--output", help="Write the fitted parameters here (for explain --model / KTRIAGE_MODEL)."),
    ] = None,
    cells_out: Annotated[
        Path | None, typer.Option("--cells-out", help="Write the dataset used (cells.jsonl) here.")
    ] = None,
    threshold: Annotated[
        float, typer.Option("--threshold", help="The gate of the confusion matrix, a fraction (0.05 = 5%).")
    ] = DEFAULT_THRESHOLD,
    level: Annotated[float, typer.Option("--level", help="Coverage asked of the prediction interval.")] = DEFAULT_LEVEL,
    no_cv: Annotated[
        bool, typer.Option("--no-cv", help="Fit only; skip the leave-one-operator-out evaluation.")
    ] = False,
    score_only: Annotated[
        bool,
        typer.Option(
            "--score-only",
            help="Fit nothing: predict every cell with the model (--model, else $KTRIAGE_MODEL, else the shipped fit) as explain does, next to the GPU's verdict; prints the matrix and the cells where they disagree.",
        ),
    ] = False,
    model: Model = None,
    scores_out: Annotated[
        Path | None,
        typer.Option(
            "--scores-out",
            help="With --score-only: also write every cell's prediction next to its measurement, JSON (.json) or markdown tables (.md).",
        ),
    ] = None,
) -> None:
    """Fit the cost model that explain's verdicts come from on GPU-measured cells (a dataset, bench
    results files or store runs, each with the explain report of its kernels) and score it
    leave-one-operator-out; -o writes the parameters for explain --model / KTRIAGE_MODEL.

    Prints the confusion matrix of predicted regression/neutral/improvement against the GPU verdicts
    (docs/model.md). --score-only fits nothing: the model you run (--model, else the shipped fit) next to
    the GPU on every cell, and where they disagree. Exit codes: 0 done, 2 bad input (unpaired results and reports, a file that is
    not what it should be)."""
    console = make_console(stderr=True)
    # the cells, read alike by a fit and by --score-only (say: a path or kernel name may hold [brackets])
    cells: dict[str, Any] = {
        "from_cells": from_cells or (),
        "results": results or (),
        "runs": run or (),
        "explain": explain or (),
        "operators": operator or (),
        "backends": backend or (),
        "db": db,
        "cells_out": cells_out,
        "threshold": threshold,
        "say": lambda m: console.print(escape(m), highlight=False),
    }
    if score_only:
        _refuse_fit_options(output=output, no_cv=no_cv, level=level)
        typer.echo(score_model(**cells, scores_out=scores_out, model=model).summary_text(), nl=False)
        return
    if model is not None:
        raise KtriageError(
            "--model names a model to score, and a fit makes its own",
            "add --score-only to score that model on these cells, or drop --model to fit one",
        )
    if scores_out is not None:
        raise KtriageError(
            "--scores-out writes the scores of --score-only, and a fit prints its own",
            "add --score-only to score the model as it is, or drop --scores-out (a fit's data: --cells-out)",
        )
    if output is not None:  # before the fit: -o over the results or the report replaced a GPU run with the model
        check_writable(output, "-o", example="model.json")
        check_replaceable(output, "-o", b'"params"', "a ktriage model file")
    report = calibrate_api(**cells, level=level, cross_validate=not no_cv)
    typer.echo(report.summary_text(), nl=False)
    if output is not None:
        output.parent.mkdir(parents=True, exist_ok=True)
        write_atomic(output, report.model_json())
        console.print(
            escape(f"model: {output} (use it with explain --model {output} or KTRIAGE_MODEL={output})"), highlight=False
        )


def _refuse_fit_options(*, output: Path | None, no_cv: bool, level: float) -> None:
    """The options of a fit, given to --score-only, which fits nothing: refused rather than ignored."""
    given = [
        name for name, on in (("-o", output is not None), ("--no-cv", no_cv), ("--level", level != DEFAULT_LEVEL)) if on
    ]
    if given:
        raise KtriageError(
            f"{' and '.join(given)} {'belongs' if len(given) == 1 else 'belong'} to a fit, and --score-only fits nothing",
            "drop them (the scored model keeps its own interval); for the scores in a file: --scores-out scores.json",
        )
