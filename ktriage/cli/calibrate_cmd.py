"""`ktriage calibrate`: refit the cost model on your own GPU measurements (docs/model.md).

Every team's bench runs improve its model: the GPU verdicts of toolchains timed side by side
(results files, or runs in a store) are paired with the explain report of the same kernels and
toolchains (``ktriage explain ... --format json -o E.json``: the compile-side facts), the model's
free parameters are fitted, and the fit is scored holding out one operator at a time. The
parameters file it writes is what ``explain --model FILE`` (or ``KTRIAGE_MODEL=FILE``) uses.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

from ktriage.atomic import write_atomic
from ktriage.cli.console import make_console
from ktriage.cli.options import Db
from ktriage.errors import FormatError, KtriageError
from ktriage.predict.calibration import DEFAULT_LEVEL
from ktriage.predict.calibration import calibrate as fit_cells
from ktriage.predict.dataset import CalibrationCell, cells_from_results, read_cells, write_cells
from ktriage.predict.model import DEFAULT_THRESHOLD


def _explain_report(path: Path) -> dict[str, object]:
    try:
        data = json.loads(path.read_text())
    except OSError as exc:
        raise KtriageError(
            f"cannot read the explain report {path}: {exc.strerror}",
            "write it with `ktriage explain TARGET -t ... --format json -o FILE`",
        ) from exc
    except ValueError as exc:
        raise FormatError(
            f"{path} is not JSON ({exc})", "pass the JSON report of `ktriage explain -o FILE.json`"
        ) from exc
    if not isinstance(data, dict) or data.get("tool") != "ktriage explain":
        raise FormatError(
            f'{path} is not an explain report (no "tool": "ktriage explain")',
            "pass the JSON report of `ktriage explain -o FILE.json`",
        )
    return data


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
        float, typer.Option("--threshold", help="The gate of the confusion matrix.")
    ] = DEFAULT_THRESHOLD,
    level: Annotated[float, typer.Option("--level", help="Coverage asked of the prediction interval.")] = DEFAULT_LEVEL,
    no_cv: Annotated[
        bool, typer.Option("--no-cv", help="Fit only; skip the leave-one-operator-out evaluation.")
    ] = False,
) -> None:
    """Fit the cost model that explain's verdicts come from on GPU-measured cells (a dataset, bench
    results files or store runs, each with the explain report of its kernels) and score it
    leave-one-operator-out; -o writes the parameters for explain --model / KTRIAGE_MODEL.

    Prints the confusion matrix of predicted regression/neutral/improvement against the GPU verdicts
    (docs/model.md). Exit codes: 0 done, 2 bad input (unpaired results and reports, a file that is
    not what it should be)."""
    console = make_console(stderr=True)
    cells: list[CalibrationCell] = []
    for path in from_cells or []:
        cells += read_cells(path)
    sources: list[tuple[str, object]] = [(str(p), p) for p in results or []] + [(f"run {r}", r) for r in run or []]
    reports = list(explain or [])
    if len(reports) != len(sources):
        raise KtriageError(
            f"{len(sources)} results/runs but {len(reports)} --explain reports",
            "pass one --explain REPORT.json per --results/--run, in the same order",
        )
    if operator and len(operator) != len(sources):
        raise KtriageError(
            f"{len(operator)} --operator names for {len(sources)} results/runs",
            "pass one --operator per --results/--run, or none",
        )
    if backend and len(backend) not in (1, len(sources)):
        raise KtriageError(
            f"{len(backend)} --backend names for {len(sources)} results/runs", "pass one, or one per source"
        )
    if run and db is None:
        raise KtriageError("--run needs a store", "pass --db URL (or set KTRIAGE_DB)")
    store = None
    for i, ((label, src), report_path) in enumerate(zip(sources, reports)):
        if isinstance(src, Path):
            from ktriage.measure.results_file import read_results

            info, measured = read_results(src)
        else:
            from ktriage.store.store import open_store

            store = store or open_store(db)
            info, measured = store.load_run(str(src))
        name = operator[i] if operator else (measured[0].key.op if measured else label)
        be = (backend[i] if len(backend) > 1 else backend[0]) if backend else None
        made, notes = cells_from_results(
            info, measured, _explain_report(report_path), operator=name, backend=be, source=label
        )
        for note in dict.fromkeys(notes):
            console.print(f"note: {note}")
        console.print(f"{label}: {len(made)} cells ({name})")
        cells += made
    if not cells:
        raise KtriageError("no calibration cells", "pass --from cells.jsonl, or --results R.json --explain E.json")
    if cells_out is not None:
        write_cells(cells_out, cells)
        console.print(f"dataset: {cells_out}")
    cal = fit_cells(cells, threshold=threshold, level=level, cross_validate=not no_cv)
    if cal.scores is not None:
        typer.echo(
            f"leave-one-operator-out over {len({c.operator for c in cells})} operators, {len(cal.cv_cells)} cells "
            f"(gate +-{threshold:.0%}):\n"
        )
        typer.echo(cal.scores.markdown())
    typer.echo(
        "\nparameters: "
        + json.dumps(
            {k: round(v, 4) if isinstance(v, float) else v for k, v in cal.params.to_json().items() if k != "cv"}
        )
    )
    if output is not None:
        output.parent.mkdir(parents=True, exist_ok=True)
        write_atomic(output, json.dumps(cal.to_json(), indent=1) + "\n")
        console.print(f"model: {output} (use it with explain --model {output} or KTRIAGE_MODEL={output})")
