"""Run a bench plan on the GPU host: provenance, isolation, the store, the results file.

Inputs are measured one after another, each in the isolated worker (ktriage.bench.worker); every
cell is written to the store the moment it arrives and the results file is rewritten after each
input, so a crash or Ctrl-C keeps everything measured so far.

The worker is spawned first, before the parent records the GPU and opens the store: its start-up
(torch, CUDA, reading the bundle: ``ktriage.bench.worker.prepare_worker``) runs meanwhile.

With several GPUs (``gpus``, ``--gpus``): one isolated worker per GPU, pinned to it
(``ktriage.measure.gpus.worker_env``), each taking the next job from one queue; a job is every
variant of one input, so each input's comparison and its reference run on one GPU. Each cell
records the GPU it was measured on and that GPU's clocks when its job began (``extra["gpu"]``). A
fault replaces only that GPU's worker; the other GPUs go on.
"""

from __future__ import annotations

import functools
import platform
import shlex
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import Any

from ktriage.bench.plan import BenchPlan
from ktriage.measure.cells import Cell, CellKey, RunInfo
from ktriage.measure.isolate import IsolatedRunner, Job
from ktriage.schema.jsontypes import JSONObject

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


@dataclass
class JobSpec:
    """One isolated job of a run: its id (reported to ``on_done``), the cells it should produce, its payload."""

    id: Any
    keys: list[CellKey]
    payload: Any


def run_bench(
    plan: BenchPlan,
    *,
    store_url: str | None,
    results_path: Path | None,
    toolchains: list[JSONObject],
    on_cell: Callable[[Cell], None] | None = None,
    on_input_done: Callable[[int], None] | None = None,
    timeout_s: float = 60.0,
    gpus: Sequence[int] | None = None,
) -> tuple[RunInfo, list[Cell]]:
    """Measure an op's bench plan: one job per input (every variant of it, interleaved)."""
    from ktriage.bench.worker import prepare_worker

    def jobs() -> Iterator[JobSpec]:
        from ktriage.workload.ops.opdef import bench_op  # imported while the worker starts

        op = bench_op(plan.op)
        cases = {c.id: c for c in op.inputs()}
        for input_id in plan.input_ids:
            yield JobSpec(
                input_id,
                plan.variant_keys(input_id, op.x_val_text(cases[input_id])),
                {"plan": plan.to_json(), "input_id": input_id},
            )

    return run_jobs(
        "ktriage.bench.worker:measure_input",
        jobs,
        settings={"plan": plan.to_json()},
        init=functools.partial(prepare_worker, plan.to_json()),
        store_url=store_url,
        results_path=results_path,
        toolchains=toolchains,
        on_cell=on_cell,
        on_done=on_input_done,
        timeout_s=timeout_s,
        gpus=gpus,
    )


def run_jobs(
    handler: str | Callable[..., Any],
    jobs: Callable[[], Iterable[JobSpec]],
    *,
    settings: JSONObject,
    store_url: str | None,
    results_path: Path | None,
    toolchains: list[JSONObject],
    init: Callable[[], Any] | None = None,
    on_cell: Callable[[Cell], None] | None = None,
    on_done: Callable[[Any], None] | None = None,
    timeout_s: float = 60.0,
    gpus: Sequence[int] | None = None,
) -> tuple[RunInfo, list[Cell]]:
    """The one way a bench run goes, for ops and recorded workloads alike: the isolated worker(s)
    (``handler``, ``init`` run once in each) spawned first, the run's provenance recorded meanwhile,
    each job's cells stored as they arrive, the results file rewritten after each job, and where the
    wall time went kept in ``settings["timeline"]``. ``gpus``: one worker per GPU (module docstring);
    None: one worker on the default GPU, as before."""
    from ktriage.measure.gpus import worker_env

    t0 = time.perf_counter()
    placed: list[tuple[int | None, IsolatedRunner]] = [
        (g, IsolatedRunner(handler, timeout_s=timeout_s, init=init, env=worker_env(g) if g is not None else None))
        for g in (list(gpus) if gpus else [None])
    ]
    for _, runner in placed:
        runner.start()  # their start-up overlaps the parent's own below
    try:
        settings = {**settings, **({"gpus": list(gpus)} if gpus else {})}
        return _run(
            placed,
            jobs,
            t0,
            settings=settings,
            store_url=store_url,
            results_path=results_path,
            toolchains=toolchains,
            on_cell=on_cell,
            on_done=on_done,
        )
    finally:
        for _, runner in placed:
            runner.close()


def _gpu_note(gpu: int) -> JSONObject:
    """What a cell records of the GPU it was measured on: its index and, from NVML, its clocks and
    temperature when the job began (absent where NVML is not installed)."""
    from ktriage.measure.env import gpu_state

    state = gpu_state(gpu)
    return {"index": gpu, **{k: state[k] for k in ("sm_clock_mhz", "mem_clock_mhz", "temperature_c") if k in state}}


def _run(
    placed: list[tuple[int | None, IsolatedRunner]],
    jobs: Callable[[], Iterable[JobSpec]],
    t0: float,
    *,
    settings: JSONObject,
    store_url: str | None,
    results_path: Path | None,
    toolchains: list[JSONObject],
    on_cell: Callable[[Cell], None] | None,
    on_done: Callable[[Any], None] | None,
) -> tuple[RunInfo, list[Cell]]:
    from ktriage.measure.env import GpuRecorder
    from ktriage.measure.results_file import write_results
    from ktriage.store import open_store  # imported while the workers start

    first = placed[0][0]
    recorder = GpuRecorder(first or 0)
    run = RunInfo(
        command=" ".join(shlex.quote(a) for a in sys.argv),
        host=platform.node(),
        gpu=recorder.start(),
        toolchains=toolchains,
        packages=host_packages(),
        workload_git_sha=workload_git_sha(),
        settings=dict(settings),
    )
    if len(placed) > 1:  # every GPU's identity (name, UUID, clocks): the run's gpu is the first one's
        from ktriage.measure.env import gpu_identity

        run.gpu["gpus"] = {str(g): gpu_identity(g or 0) for g, _ in placed}
    todo = list(jobs())
    cells: list[Cell] = []
    # Where the run's wall time goes (seconds since the run began), kept with the run's settings.
    timeline: JSONObject = {"parent_ready_s": round(time.perf_counter() - t0, 3)}
    for _, runner in placed:
        runner.wait_started()  # a worker that cannot start (no GPU) fails before the run enters the store
    timeline["worker_ready_s"] = round(time.perf_counter() - t0, 3)
    run.settings["timeline"] = timeline
    per_job: list[list[Any]] = []
    timeline["inputs"] = per_job
    lock = threading.Lock()  # the store, the results file and the callbacks, from one GPU's thread at a time

    def save_results() -> None:
        if results_path is not None:
            write_results(results_path, run, cells)

    with open_store(store_url) as store, store.recording(run) as rec:

        def deliver(cell: Cell, gpu: JSONObject | None = None) -> None:
            with lock:
                if gpu is not None:
                    cell.extra = {**cell.extra, "gpu": gpu}
                cells.append(cell)
                rec.add(cell)
                if on_cell is not None:
                    on_cell(cell)

        def measure(gpu: int | None, runner: IsolatedRunner, queue: list[JobSpec]) -> None:
            while True:
                with lock:
                    if not queue:
                        return
                    job = queue.pop(0)
                note = _gpu_note(gpu) if gpu is not None else None
                runner.on_cell = functools.partial(deliver, gpu=note)
                t_in = time.perf_counter()
                runner.run_job(Job(job.keys, job.payload))
                t_done = time.perf_counter()
                with lock:
                    save_results()
                    entry = [job.id, round(t_done - t_in, 4), round(time.perf_counter() - t_done, 4)]  # job, save
                    per_job.append([*entry, gpu] if gpu is not None else entry)
                    if on_done is not None:
                        on_done(job.id)

        queue = list(todo)
        if len(placed) == 1:
            measure(placed[0][0], placed[0][1], queue)
        else:
            threads = [
                threading.Thread(target=measure, args=(g, r, queue), name=f"ktriage-gpu{g}", daemon=True)
                for g, r in placed
            ]
            for t in threads:
                t.start()
            try:
                for t in threads:
                    t.join()
            except KeyboardInterrupt:  # Ctrl-C: no new job starts; the running ones end (their workers
                with lock:  # got the signal too) and are saved before the store closes
                    queue.clear()
                for t in threads:
                    t.join(timeout=30)
                raise
        for _, runner in placed:
            runner.close()
        timeline["measured_s"] = round(time.perf_counter() - t0, 3)
        run.gpu["after"] = recorder.finish().get("after", {})
        rec.gpu_after = run.gpu["after"]
    run.status = "finished"
    save_results()
    return run, cells
