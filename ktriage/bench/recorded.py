"""Bench a recorded workload (``ktriage bench W.json -t A -t B``) on the GPU host, from its bundle.

Every (kernel, recorded input) of the workload is one cell group: its kernel compiled by each
toolchain (``ktriage.workload.recorded.bundle``), replayed on the recorded argument shapes
(``ktriage.workload.recorded.replay``), checked against the reference toolchain's results and
timed interleaved in one GPU process (``ktriage.bench.recorded_worker``). As for an op bench, each
entry runs in the isolated worker (``ktriage.measure.isolate``: a faulting kernel costs its cells
only), every cell goes to the store as it arrives, and the results file is rewritten after each
entry (``ktriage.measure.results_file.write_results``), so ``ktriage compare`` reads it.

Cells: op = the workload's name, mode ``recorded``, input = the entry (its number across the
workload, and a short label of its shapes), backend = ``K3:function``, toolchain per variant.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from pathlib import Path

from ktriage.bench.plan import RecordedPlan
from ktriage.measure.cells import Cell, RunInfo
from ktriage.schema.jsontypes import JSONObject
from ktriage.workload.recorded.bundle import Entry

WORKER = "ktriage.bench.recorded_worker:measure_entry"


def run_recorded(
    plan: RecordedPlan,
    entries: list[Entry],
    *,
    store_url: str | None,
    results_path: Path | None,
    toolchains: list[JSONObject],
    on_cell: Callable[[Cell], None] | None = None,
    on_entry_done: Callable[[Entry], None] | None = None,
    timeout_s: float = 120.0,
    gpus: Sequence[int] | None = None,
) -> tuple[RunInfo, list[Cell]]:
    """Measure ``entries`` (of ``plan.bundle``) one after another in the isolated worker."""
    from ktriage.bench.recorded_worker import prepare_recorded_worker
    from ktriage.bench.session import JobSpec, run_jobs

    by_id = {e.id: e for e in entries}

    def jobs() -> list[JobSpec]:
        return [JobSpec(e.id, plan.keys(e), {"plan": plan.to_json(), "entry": e.id}) for e in entries]

    done = None if on_entry_done is None else (lambda entry_id: on_entry_done(by_id[entry_id]))
    return run_jobs(
        WORKER,
        jobs,
        settings={"recorded_plan": plan.to_json()},
        init=functools.partial(prepare_recorded_worker, plan.to_json()),
        store_url=store_url,
        results_path=results_path,
        toolchains=toolchains,
        on_cell=on_cell,
        on_done=done,
        timeout_s=timeout_s,
        gpus=gpus,
    )


def summary_rows(cells: list[Cell], reference: str | None) -> list[dict[str, str]]:
    """One row per (entry, toolchain): latency median, ratio to the reference toolchain's median,
    and the correctness verdict (bitwise equal / within tolerance / wrong), for the report tables."""
    import statistics

    medians = {
        (c.key.input_id, c.key.toolchain): statistics.median(c.samples_ms)
        for c in cells
        if c.status == "ok" and c.samples_ms
    }
    rows = []
    for c in sorted(cells, key=lambda c: (c.key.input_id, c.key.toolchain != reference)):
        median = medians.get((c.key.input_id, c.key.toolchain))
        ref = medians.get((c.key.input_id, reference))
        if c.accuracy.get("reference"):
            check = "reference" + ("" if c.accuracy.get("deterministic", True) else " (not deterministic)")
        else:
            check = str(c.accuracy.get("agreement") or "-")
        rows.append(
            {
                "kernel": c.key.backend,
                "input": c.key.input_label,
                "toolchain": str(c.key.toolchain),
                "status": c.status,
                "latency_ms": f"{median:.4f}" if median is not None else "-",
                "vs_ref": f"{median / ref:.3f}x"
                if median is not None and ref and c.key.toolchain != reference
                else "-",
                "check": check if c.status in ("ok", "wrong") else (c.error or "-")[:80],
            }
        )
    return rows
