"""The two sides of a compare: results files or store runs, loaded and paired into comparisons.

What ``ktriage compare`` does between parsing its options and rendering: a path is a results file
(``ktriage.measure.results_file``), anything else a run id (or unique prefix) in the store; one run
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


def load_side(ref: str, db: str | None = None) -> tuple[RunInfo, list[Cell], str]:
    """A results file (JSON) if ``ref`` is a path, else a run id (or unique prefix) in the store."""
    path = Path(ref)
    if path.suffix == ".json" or path.exists():
        from ktriage.measure.results_file import read_results

        run, cells = read_results(path)
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
    return run, cells, run.run_id


def build_comparisons(
    a: str, b: str | None, *, toolchains: bool, baseline: str | None, config: VerdictConfig, db: str | None = None
) -> list[Comparison]:
    """``a`` against ``b`` (files or run ids), or the toolchains of run ``a`` against its first."""
    from ktriage.ops.registry import default_baselines
    from ktriage.stats.compare import compare_cells, compare_toolchains, run_toolchains

    if toolchains:
        if b is not None:
            raise KtriageError("--toolchains compares the toolchains of ONE run, but two were given", "drop the second argument or --toolchains")
        run, cells, _ = load_side(a, db)
        tcs = run_toolchains(run, cells)
        if len(tcs) < 2:
            raise KtriageError(f"run {run.run_id} has {len(tcs)} toolchain(s) with cells; --toolchains needs two or more",
                               "measure with several --toolchain options, or compare two runs: ktriage compare A B")  # fmt: skip
        return compare_toolchains(cells, run=run, baseline=baseline, config=config, default_baselines=default_baselines())
    if b is None:
        raise KtriageError("compare needs two runs or result files (or one run with --toolchains)", "e.g. ktriage compare old.json new.json")
    run_a, cells_a, label_a = load_side(a, db)
    run_b, cells_b, label_b = load_side(b, db)
    if label_a == label_b:
        label_a, label_b = f"{label_a} (A)", f"{label_b} (B)"
    return [compare_cells(cells_a, cells_b, ref_label=label_a, new_label=label_b, ref_run=run_a, new_run=run_b, baseline=baseline, config=config,
                          default_baselines=default_baselines())]
