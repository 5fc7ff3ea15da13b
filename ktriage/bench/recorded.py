"""Bench a recorded workload (``ktriage bench W.json -t A -t B``) on the GPU host, from its bundle.

Every (kernel, recorded input) of the workload is one cell group: its kernel compiled by each
toolchain (``ktriage.workload.recorded_bundle``), replayed on the recorded argument shapes
(``ktriage.workload.recorded_replay``), checked against the reference toolchain's results and
timed interleaved in one GPU process (``ktriage.bench.recorded_worker``). As for an op bench, each
entry runs in the isolated worker (``ktriage.measure.isolate``: a faulting kernel costs its cells
only), every cell goes to the store as it arrives, and the results file is rewritten after each
entry (``ktriage.measure.results_file.write_results``), so ``ktriage compare`` reads it.

Cells: op = the workload's name, mode ``recorded``, input = the entry (its number across the
workload, and a short label of its shapes), backend = ``K3:function``, toolchain per variant.
"""

from __future__ import annotations

import platform
import shlex
import sys
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from ktriage.measure.cells import Cell, CellKey, RunInfo
from ktriage.workload.recorded_bundle import RECORDED_MODE, Entry

WORKER = "ktriage.bench.recorded_worker:measure_entry"


@dataclass
class RecordedPlan:
    """What one recorded bench measures; plain data, because it crosses into the worker process."""

    bundle: str
    name: str  # the workload's name: the cells' op
    entries: list[int]
    toolchains: list[str]  # reference first
    timing: dict[str, Any] = field(default_factory=dict)  # TimingOptions fields
    min_samples: int = 20
    max_samples: int = 400
    max_time_s: float = 10.0  # per entry (all toolchains together)
    threshold: float = 0.05
    confidence: float = 0.99
    seed: int = 0

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> RecordedPlan:
        return cls(**data)

    def keys(self, entry: Entry) -> list[CellKey]:
        """The cells of one entry, one per toolchain, the reference first."""
        return [CellKey(self.name, RECORDED_MODE, entry.id, entry.label, entry.backend, tc) for tc in self.toolchains]


def run_recorded(
    plan: RecordedPlan,
    entries: list[Entry],
    *,
    store_url: str | None,
    results_path: Path | None,
    toolchains: list[dict[str, Any]],
    on_cell: Callable[[Cell], None] | None = None,
    on_entry_done: Callable[[Entry], None] | None = None,
    timeout_s: float = 120.0,
) -> tuple[RunInfo, list[Cell]]:
    """Measure ``entries`` (of ``plan.bundle``) one after another in the isolated worker."""
    from ktriage.bench.session import host_packages, workload_git_sha
    from ktriage.measure.env import GpuRecorder
    from ktriage.measure.isolate import IsolatedRunner, Job
    from ktriage.measure.results_file import write_results
    from ktriage.store import open_store

    recorder = GpuRecorder()
    run = RunInfo(command=" ".join(shlex.quote(a) for a in sys.argv), host=platform.node(), gpu=recorder.start(),
                  toolchains=toolchains, packages=host_packages(), workload_git_sha=workload_git_sha(),
                  settings={"recorded_plan": plan.to_json()})  # fmt: skip
    cells: list[Cell] = []

    def save_results() -> None:
        if results_path is not None:
            write_results(results_path, run, cells)

    with open_store(store_url) as store, store.recording(run) as rec:

        def deliver(cell: Cell) -> None:
            cells.append(cell)
            rec.add(cell)
            if on_cell is not None:
                on_cell(cell)

        with IsolatedRunner(WORKER, timeout_s=timeout_s, on_cell=deliver) as runner:
            for entry in entries:
                runner.run_job(Job(plan.keys(entry), {"plan": plan.to_json(), "entry": entry.id}))
                save_results()
                if on_entry_done is not None:
                    on_entry_done(entry)
        run.gpu["after"] = recorder.finish().get("after", {})
        rec.gpu_after = run.gpu["after"]
    run.status = "finished"
    save_results()
    return run, cells


def summary_rows(cells: list[Cell], reference: str | None) -> list[dict[str, str]]:
    """One row per (entry, toolchain): latency median, ratio to the reference toolchain's median,
    and the correctness verdict (bitwise equal / within tolerance / wrong), for the report tables."""
    import statistics

    medians = {(c.key.input_id, c.key.toolchain): statistics.median(c.samples_ms)
               for c in cells if c.status == "ok" and c.samples_ms}
    rows = []
    for c in sorted(cells, key=lambda c: (c.key.input_id, c.key.toolchain != reference)):
        median = medians.get((c.key.input_id, c.key.toolchain))
        ref = medians.get((c.key.input_id, reference))
        if c.accuracy.get("reference"):
            check = "reference" + ("" if c.accuracy.get("deterministic", True) else " (not deterministic)")
        else:
            check = str(c.accuracy.get("agreement") or "-")
        rows.append({
            "kernel": c.key.backend, "input": c.key.input_label, "toolchain": str(c.key.toolchain),
            "status": c.status, "latency_ms": f"{median:.4f}" if median is not None else "-",
            "vs_ref": f"{median / ref:.3f}x" if median is not None and ref and c.key.toolchain != reference else "-",
            "check": check if c.status in ("ok", "wrong") else (c.error or "-")[:80],
        })  # fmt: skip
    return rows
