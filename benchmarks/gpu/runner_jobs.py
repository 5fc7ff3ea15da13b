"""Job handler for the runner's GPU isolation test (runs inside ktriage.measure.isolate workers).

``handle(payload, emit)`` measures one bundle kernel as a Cell: ``vector_add`` (checked against
torch, then timed), ``poke`` (stores through an address nobody allocated: CUDA_ERROR_ILLEGAL_ADDRESS)
or ``spin`` (a kernel that does not finish in time: the parent's timeout).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ktriage.measure.cells import Cell, CellKey
from ktriage.measure.correctness import check_run
from ktriage.measure.driver import synchronize
from ktriage.measure.launch import LoadedKernel
from ktriage.measure.loader import load_for_runner
from ktriage.measure.timing import TimingOptions, measure_interleaved
from ktriage.workload.bundles.named_kernels import NamedKernel, read_kernel_bundle

_LOADED: dict[tuple[str, str], tuple[NamedKernel, LoadedKernel]] = {}

#: An address inside no allocation (user space, page aligned, far above anything torch maps).
FAULT_ADDRESS = 0x7E57_0000_0000


def _kernel(bundle: str, name: str) -> tuple[NamedKernel, LoadedKernel]:
    key = (bundle, name)
    if key not in _LOADED:
        entry = read_kernel_bundle(Path(bundle))[0][name]
        _LOADED[key] = (entry, load_for_runner(entry.artifact))
    return _LOADED[key]


def init() -> None:
    """Worker start: import torch and create the CUDA context before the worker reports ready, so a
    job's timeout counts the job, not the interpreter's start."""
    from ktriage.measure.driver import ensure_context

    ensure_context(0)


def handle(payload: dict[str, Any], emit: Any) -> None:
    import torch

    key = CellKey(**payload["key"])
    entry, kernel = _kernel(payload["bundle"], payload["kernel"])
    case = payload["case"]
    if case == "vector_add":
        n = 1 << 20
        x, y = torch.randn(n, device="cuda"), torch.randn(n, device="cuda")
        out = torch.empty_like(x)
        launch = kernel.prepare(entry.grid, [x, y, out, n])
        acc = check_run(launch, {"out": out}, lambda: {"out": x + y})
        if not acc.passed:
            emit(Cell(key=key, status="wrong", error=acc.reason, accuracy=acc.to_cell()))
            return
        res = measure_interleaved(
            {"v": launch},
            min_samples=20,
            max_time_s=0.5,
            stop=lambda s: len(s["v"]) >= 20,
            options=TimingOptions(calls_per_round=10),
        )
        emit(
            Cell(
                key=key,
                status="ok",
                samples_ms=res.samples["v"],
                accuracy=acc.to_cell(),
                extra={"pid": __import__("os").getpid()},
            )
        )
    elif case == "poke":
        kernel.launch((1,), [FAULT_ADDRESS, 1.0])
        synchronize()  # the fault surfaces here as CudaError(CUDA_ERROR_ILLEGAL_ADDRESS)
        emit(Cell(key=key, status="ok"))  # never reached on a GPU that checks addresses
    elif case == "spin":
        flag = torch.zeros(2, dtype=torch.int32, device="cuda")
        kernel.launch((1,), [flag, int(payload.get("max_iters", 50_000_000))])
        synchronize()
        emit(Cell(key=key, status="ok", extra={"spins": int(flag[1].item())}))
    else:
        raise ValueError(f"unknown case {case!r}")
