"""A bench run over several GPUs (``run_jobs(gpus=...)``) on the CPU: real worker processes, each
pinned to its "GPU" by environment (no GPU is touched: the handler only reports what it saw), the
real store and results file. What must hold: each worker sees only its GPU, every job runs once on
one GPU with all its cells, cells say their GPU, and a fault on one GPU costs only its job."""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

from ktriage.bench.session import JobSpec, run_jobs
from ktriage.compare.pairing import compare_cells
from ktriage.measure.cells import Cell, CellKey
from ktriage.measure.results_file import read_results


def gpu_handler(payload: dict[str, Any], emit: Any) -> None:
    """Runs in a worker: one cell per key, tagged with the GPU the worker was pinned to."""
    if payload.get("crash") and os.environ.get("CUDA_VISIBLE_DEVICES") == "1":
        os._exit(9)
    if payload.get("slow"):
        time.sleep(float(payload["slow"]))
    for k in payload["keys"]:
        emit(
            Cell(
                CellKey(**k),
                "ok",
                samples_ms=[1.0, 1.01, 0.99],
                extra={
                    "seen": os.environ.get("CUDA_VISIBLE_DEVICES"),
                    "order": os.environ.get("CUDA_DEVICE_ORDER"),
                    "pid": os.getpid(),
                },
            )
        )


def _keys(i: int) -> list[CellKey]:
    return [CellKey("layer_norm", "bwd", i, f"x{i}", "liger_layer_norm", tc) for tc in ("old", "new")]


def _jobs(n: int, crash_at: int | None = None, slow: float | None = None) -> list[JobSpec]:
    return [
        JobSpec(i, _keys(i), {"keys": [k.__dict__ for k in _keys(i)], "crash": i == crash_at, "slow": slow})
        for i in range(n)
    ]


def test_jobs_spread_over_the_gpus_each_on_one(tmp_path: Path) -> None:
    results = tmp_path / "r.json"
    run, cells = run_jobs(
        gpu_handler,
        lambda: _jobs(8),
        settings={},
        store_url=f"sqlite:///{tmp_path}/s.db",
        results_path=results,
        toolchains=[],
        gpus=[0, 1],
        timeout_s=30,
    )
    assert len(cells) == 16 and all(c.status == "ok" for c in cells)
    for c in cells:  # the worker saw only its GPU, in PCI order, and the cell says which
        assert c.extra["seen"] == str(c.extra["gpu"]["index"]) and c.extra["order"] == "PCI_BUS_ID"
    by_input: dict[int, set[int]] = {}
    for c in cells:
        by_input.setdefault(c.key.input_id, set()).add(c.extra["gpu"]["index"])
    assert all(len(g) == 1 for g in by_input.values())  # both variants of an input: one GPU
    assert {g for gs in by_input.values() for g in gs} == {0, 1}  # and both GPUs worked
    assert run.settings["gpus"] == [0, 1] and set(run.gpu["gpus"]) == {"0", "1"}
    assert sorted(e[0] for e in run.settings["timeline"]["inputs"]) == list(range(8))
    _, saved = read_results(results)  # the results file has every cell, with its GPU
    assert len(saved) == 16 and all(c.extra["gpu"]["index"] in (0, 1) for c in saved)


def test_a_worker_fault_on_one_gpu_costs_only_its_job(tmp_path: Path) -> None:
    _, cells = run_jobs(
        gpu_handler,
        lambda: _jobs(6, crash_at=3),
        settings={},
        store_url=f"sqlite:///{tmp_path}/s.db",
        results_path=None,
        toolchains=[],
        gpus=[0, 1],
        timeout_s=30,
    )
    bad = [c for c in cells if c.status != "ok"]
    assert len(cells) == 12
    # job 3 crashes only if it landed on GPU 1; either way no other job lost a cell
    assert (
        all(c.key.input_id == 3 for c in bad)
        and len([c for c in cells if c.key.input_id != 3 and c.status == "ok"]) == 10
    )


def test_a_verdict_never_compares_samples_of_two_gpus() -> None:
    def cell(gpu: int, tc: str) -> Cell:
        return Cell(
            CellKey("layer_norm", "bwd", 0, "x0", "liger_layer_norm", tc),
            "ok",
            samples_ms=[1.0 + 0.001 * i for i in range(20)],
            extra={"gpu": {"index": gpu}},
        )

    same = compare_cells([cell(0, "a")], [cell(0, "a")], ref_label="r", new_label="n")
    two = compare_cells([cell(0, "a")], [cell(1, "a")], ref_label="r", new_label="n")
    assert [p.status for p in same.pairs] == ["compared"]
    (pair,) = two.pairs
    assert pair.status == "error" and pair.verdict is None and "GPU 0 (ref) and GPU 1 (new)" in (pair.problem or "")


def test_ctrl_c_starts_no_new_job_and_keeps_the_finished_ones(tmp_path: Path) -> None:
    """Ctrl-C (SIGINT to this process, sent when the third job is done, while the GPUs' threads work):
    no job starts after it, the jobs running finish and are saved, and the error reaches the caller."""
    import signal

    import pytest

    results = tmp_path / "r.json"
    jobs = _jobs(12, slow=0.3)
    done: list[Any] = []

    def on_done(job_id: Any) -> None:
        done.append(job_id)
        if len(done) == 3:
            os.kill(os.getpid(), signal.SIGINT)

    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        with pytest.raises(KeyboardInterrupt):
            run_jobs(
                gpu_handler,
                lambda: jobs,
                settings={},
                store_url=f"sqlite:///{tmp_path}/s.db",
                results_path=results,
                toolchains=[],
                gpus=[0, 1],
                timeout_s=30,
                on_done=on_done,
            )
    finally:
        signal.signal(signal.SIGINT, previous)
    _, saved = read_results(results)
    per_input: dict[int, int] = {}
    for c in saved:
        per_input[c.key.input_id] = per_input.get(c.key.input_id, 0) + 1
    assert 3 <= len(per_input) < 12  # stopped early, with what was measured kept
    assert set(per_input.values()) == {2}  # every started job finished whole: no input lost half its cells
