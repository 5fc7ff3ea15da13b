"""Synthetic (fake) timing data with known truth, for tests of the statistics, the accuracy
benchmark and report demos. Nothing here is a measurement; every generator is seeded."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from ktriage.measure.model import Cell, CellKey, RunInfo


def lognormal(rng: np.random.Generator, n: int, median: float, cv: float) -> list[float]:
    """Multiplicative noise, as GPU timings have: log-normal around ``median`` with CV ~ ``cv``."""
    return list(median * np.exp(rng.normal(0.0, cv, n)))


def bimodal(rng: np.random.Generator, n: int, median: float, cv: float, gap: float = 0.3, slow_share: float = 0.4) -> list[float]:
    """Two modes ``gap`` apart (e.g. a clock that drops for part of a run), ``slow_share`` slow."""
    k = int(round(n * slow_share))
    return lognormal(rng, n - k, median, cv) + lognormal(rng, k, median * (1 + gap), cv)


def fake_sweep_run(
    *,
    seed: int,
    op: str = "layer_norm",
    mode: str = "bwd",
    n_inputs: int = 30,
    samples: int = 40,
    cv: float = 0.01,
    baseline: str = "torch_layer_norm",
    backend: str = "liger_layer_norm",
    toolchains: Sequence[str] = ("triton-3.3.1", "triton-3.4.0"),
    baseline_ms: Callable[[int], float] = lambda i: 0.05 + 0.01 * i,
    speed: Callable[[str, int], float] = lambda tc, i: 0.8,
    baseline_factor: float = 1.0,
    broken: dict[tuple[str, int], str] | None = None,
) -> tuple[RunInfo, list[Cell]]:
    """A fake run shaped like TritonBench's layer_norm sweep: a native baseline and one Triton
    backend per toolchain; ``speed(tc, i)`` is the backend's latency as a multiple of the baseline.
    ``broken``: (toolchain, input index) -> "wrong" or "error" cells."""
    rng = np.random.default_rng(seed)
    run = RunInfo(command=f"fake sweep seed={seed}", host="synthetic", gpu={"name": "FAKE-GPU", "driver": "0"},
                  toolchains=[{"id": t, "spec": t} for t in toolchains], settings={"baseline": baseline})  # fmt: skip
    cells: list[Cell] = []
    for i in range(n_inputs):
        label = f"N={1024 + 512 * i}"
        base = baseline_ms(i) * baseline_factor
        cells.append(Cell(CellKey(op, mode, i, label, baseline, None), "ok", lognormal(rng, samples, base, cv)))
        for tc in toolchains:
            status = (broken or {}).get((tc, i))
            key = CellKey(op, mode, i, label, backend, tc)
            if status == "wrong":
                cells.append(Cell(key, "wrong", [], "max_abs_err 0.5 > atol 1e-05", {"passed": False, "max_abs_err": 0.5}))
            elif status:
                cells.append(Cell(key, "error", [], "CUDA_ERROR_ILLEGAL_ADDRESS"))
            else:
                cells.append(Cell(key, "ok", lognormal(rng, samples, base * speed(tc, i), cv)))
    return run, cells
