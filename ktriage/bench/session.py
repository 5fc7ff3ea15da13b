"""Run a bench plan on the GPU host: provenance, isolation, the store, the results file.

Inputs are measured one after another, each in the isolated worker (ktriage.bench.worker); every
cell is written to the store the moment it arrives and the results file is rewritten after each
input, so a crash or Ctrl-C keeps everything measured so far.

The worker is spawned first, before the parent records the GPU and opens the store: its start-up
(torch, CUDA, reading the bundle: ``ktriage.bench.worker.prepare_worker``) runs meanwhile.
"""

from __future__ import annotations

import functools
import platform
import shlex
import subprocess
import sys
import time
from collections.abc import Callable
from importlib import metadata
from pathlib import Path
from typing import Any

from ktriage.bench.plan import BenchPlan
from ktriage.measure.cells import Cell, RunInfo
from ktriage.measure.isolate import IsolatedRunner, Job

HOST_PACKAGES = ("torch", "triton", "liger-kernel", "cuda-bindings", "nvidia-ml-py", "ktriage")


def host_packages() -> dict[str, str]:
    out: dict[str, str] = {}
    for name in HOST_PACKAGES:
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
    return out


def workload_git_sha() -> str | None:
    """The git sha of ktriage's own checkout (the workload definitions), when it is one."""
    root = Path(__file__).resolve().parents[2]
    try:
        proc = subprocess.run(["git", "-C", str(root), "rev-parse", "HEAD"], capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return proc.stdout.strip() or None if proc.returncode == 0 else None


def run_bench(
    plan: BenchPlan,
    *,
    store_url: str | None,
    results_path: Path | None,
    toolchains: list[dict[str, Any]],
    on_cell: Callable[[Cell], None] | None = None,
    on_input_done: Callable[[int], None] | None = None,
    timeout_s: float = 60.0,
) -> tuple[RunInfo, list[Cell]]:
    from ktriage.bench.worker import prepare_worker

    t0 = time.perf_counter()
    runner = IsolatedRunner("ktriage.bench.worker:measure_input", timeout_s=timeout_s,
                            init=functools.partial(prepare_worker, plan.to_json()))
    runner.start()  # its start-up overlaps the parent's own below
    try:
        return _run(plan, runner, t0, store_url=store_url, results_path=results_path, toolchains=toolchains,
                    on_cell=on_cell, on_input_done=on_input_done)
    finally:
        runner.close()


def _run(plan: BenchPlan, runner: IsolatedRunner, t0: float, *, store_url: str | None, results_path: Path | None,
         toolchains: list[dict[str, Any]], on_cell: Callable[[Cell], None] | None,
         on_input_done: Callable[[int], None] | None) -> tuple[RunInfo, list[Cell]]:  # fmt: skip
    from ktriage.measure.env import GpuRecorder
    from ktriage.measure.results_file import write_results
    from ktriage.store import open_store  # imported while the worker starts
    from ktriage.workload.ops import get_op

    op = get_op(plan.op)
    cases = {c.id: c for c in op.inputs()}
    recorder = GpuRecorder()
    run = RunInfo(
        command=" ".join(shlex.quote(a) for a in sys.argv),
        host=platform.node(),
        gpu=recorder.start(),
        toolchains=toolchains,
        packages=host_packages(),
        workload_git_sha=workload_git_sha(),
        settings={"plan": plan.to_json()},
    )
    cells: list[Cell] = []
    # Where the run's wall time goes (seconds since run_bench began), kept with the run's settings.
    timeline: dict[str, Any] = {"parent_ready_s": round(time.perf_counter() - t0, 3)}
    runner.wait_started()  # a worker that cannot start (no GPU) fails before the run enters the store
    timeline["worker_ready_s"] = round(time.perf_counter() - t0, 3)
    run.settings["timeline"] = timeline
    per_input: list[list[float]] = timeline.setdefault("inputs", [])

    def save_results() -> None:
        if results_path is not None:
            write_results(results_path, run, cells)

    with open_store(store_url) as store, store.recording(run) as rec:

        def deliver(cell: Cell) -> None:
            cells.append(cell)
            rec.add(cell)
            if on_cell is not None:
                on_cell(cell)

        runner.on_cell = deliver
        for input_id in plan.input_ids:
            keys = plan.variant_keys(input_id, op.x_val_text(cases[input_id]))
            t_in = time.perf_counter()
            runner.run_job(Job(keys, {"plan": plan.to_json(), "input_id": input_id}))
            t_done = time.perf_counter()
            save_results()
            per_input.append([input_id, round(t_done - t_in, 4), round(time.perf_counter() - t_done, 4)])  # job, save
            if on_input_done is not None:
                on_input_done(input_id)
        runner.close()
        timeline["measured_s"] = round(time.perf_counter() - t0, 3)
        run.gpu["after"] = recorder.finish().get("after", {})
        rec.gpu_after = run.gpu["after"]
    run.status = "finished"
    save_results()
    return run, cells
