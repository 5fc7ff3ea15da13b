"""The two sides of a compare: results files or store runs, loaded and paired into comparisons.

What ``ktriage compare`` does between parsing its options and rendering: a path is a results file
(ktriage's own results file or TritonBench's CSV/JSON: ``ktriage.measure.tritonbench_format``), anything else a run id (or unique prefix) in the store; one run
with ``toolchains=True`` compares its toolchains against the first. The statistics are
``ktriage.stats.compare``; the default baselines come from the operators (``ktriage.ops``).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from ktriage.errors import KtriageError

if TYPE_CHECKING:  # the statistics import scipy: loaded when a compare runs
    from ktriage.measure.cells import Cell, RunInfo
    from ktriage.stats.compare import Comparison
    from ktriage.stats.verdict import VerdictConfig


def load_side(
    ref: str, db: str | None = None, *, op: str | None = None, mode: str | None = None
) -> tuple[RunInfo, list[Cell], str]:
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
        raise KtriageError(
            f"{ref!r} is not a results file, and the results store is not available ({exc})",
            "pass result JSON files written by `ktriage bench --output-json`",
        ) from exc
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
        raise KtriageError(
            f"{what} has no cells: there is nothing to compare",
            "give a results file or run that measured something (ktriage runs show RUN lists its cells)",
        )


def _check_baseline(baseline: str | None, *sides: list[Cell]) -> None:
    """``--baseline`` must name a backend of the results: an unknown one would silently check nothing."""
    if baseline is None:
        return
    backends = sorted({c.key.backend for cells in sides for c in cells})
    if baseline not in backends:
        raise KtriageError(
            f"--baseline {baseline!r} is not a backend of these results", f"use one of: {', '.join(backends)}"
        )


def build_comparisons(
    a: str,
    b: str | None,
    *,
    toolchains: bool,
    baseline: str | None,
    config: VerdictConfig,
    db: str | None = None,
    op: str | None = None,
    mode: str | None = None,
) -> list[Comparison]:
    """``a`` against ``b`` (files or run ids), or the toolchains of run ``a`` against its first."""
    from ktriage.ops.registry import default_baselines
    from ktriage.stats.compare import compare_cells, compare_toolchains, run_toolchains

    if toolchains:
        if b is not None:
            raise KtriageError(
                "--toolchains compares the toolchains of ONE run, but two were given",
                "drop the second argument or --toolchains",
            )
        run, cells, _ = load_side(a, db)
        _check_baseline(baseline, cells)
        tcs = run_toolchains(run, cells)
        if len(tcs) < 2:
            raise KtriageError(
                f"run {run.run_id} has {len(tcs)} toolchain(s) with cells; --toolchains needs two or more",
                "measure with several --toolchain options, or compare two runs: ktriage compare A B",
            )
        return compare_toolchains(
            cells, run=run, baseline=baseline, config=config, default_baselines=default_baselines()
        )
    if b is None:
        raise KtriageError(
            "compare needs two runs or result files (or one run with --toolchains)",
            "e.g. ktriage compare old.json new.json",
        )
    run_a, cells_a, label_a = load_side(a, db, op=op, mode=mode)
    run_b, cells_b, label_b = load_side(b, db, op=op, mode=mode)
    _check_baseline(baseline, cells_a, cells_b)
    if label_a == label_b:
        label_a, label_b = f"{label_a} (A)", f"{label_b} (B)"
    return [
        compare_cells(
            cells_a,
            cells_b,
            ref_label=label_a,
            new_label=label_b,
            ref_run=run_a,
            new_run=run_b,
            baseline=baseline,
            config=config,
            default_baselines=default_baselines(),
        )
    ]
