"""Fakes for tests and benchmarks, in one place: synthetic data and measurements with a known truth.

Nothing here is a measurement, and library code never imports this module (the import-linter
layers put it at the top, next to ``cli``). Every generator is seeded.

- :func:`lognormal`, :func:`bimodal`: synthetic timing samples (the statistics' tests, the verdict
  accuracy benchmark);
- :func:`fake_sweep_run`: a fake TritonBench-shaped run (compare, reports);
- :func:`fake_nightly_runs`: a month of fake nightly runs with a planted step (``ktriage history``'s
  tests and ``examples/ci/nightly_local.sh``);
- :class:`FakeNoisyTimings`, :func:`fake_candidates`: a fake GPU measurement with a known culprit
  for the time bisect (its tests and ``benchmarks/bisect/noisy_bisect.py``);
- :func:`fake_timing_job`: a fake GPU timing job (the cluster tests' placement checks);
- :func:`fake_unfit_job`: a fake job that finds some cluster nodes unfit for it (the cluster tests);
- :func:`fake_raising_job`: a fake job that raises the error it is given (the cluster tests: errors pickled back).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ktriage.bisect.candidate import Candidate
from ktriage.bisect.decide import Variant, variant_key
from ktriage.measure.cells import Cell, CellKey, RunInfo
from ktriage.schema.jsontypes import JSONObject


def lognormal(rng: np.random.Generator, n: int, median: float, cv: float) -> list[float]:
    """Multiplicative noise, as GPU timings have: log-normal around ``median`` with CV ~ ``cv``."""
    return list(median * np.exp(rng.normal(0.0, cv, n)))


def bimodal(
    rng: np.random.Generator, n: int, median: float, cv: float, gap: float = 0.3, slow_share: float = 0.4
) -> list[float]:
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
    run = RunInfo(
        command=f"fake sweep seed={seed}",
        host="synthetic",
        gpu={"name": "FAKE-GPU", "driver": "0"},
        toolchains=[{"id": t, "spec": t} for t in toolchains],
        settings={"baseline": baseline},
    )
    cells: list[Cell] = []
    for i in range(n_inputs):
        label = f"N={1024 + 512 * i}"
        base = baseline_ms(i) * baseline_factor
        cells.append(Cell(CellKey(op, mode, i, label, baseline, None), "ok", lognormal(rng, samples, base, cv)))
        for tc in toolchains:
            status = (broken or {}).get((tc, i))
            key = CellKey(op, mode, i, label, backend, tc)
            if status == "wrong":
                cells.append(
                    Cell(key, "wrong", [], "max_abs_err 0.5 > atol 1e-05", {"passed": False, "max_abs_err": 0.5})
                )
            elif status:
                cells.append(Cell(key, "error", [], "CUDA_ERROR_ILLEGAL_ADDRESS"))
            else:
                cells.append(Cell(key, "ok", lognormal(rng, samples, base * speed(tc, i), cv)))
    return run, cells


# ----------------------------------------------------------------------------------- nightly runs (history)
def _nightly_toolchain(version: str) -> JSONObject:
    return {
        "id": f"triton-{version}",
        "spec": f"triton=={version}",
        "triton_version": version,
        "ptxas_version": "12.8.93",
        "ptxas_options": [],
    }


def fake_nightly_runs(
    *,
    seed: int,
    n_runs: int = 30,
    step_at: int | None = 18,
    step: float = 0.15,
    op: str = "layer_norm",
    mode: str = "bwd",
    backend: str = "liger_layer_norm",
    baseline: str = "torch_layer_norm",
    inputs: Sequence[tuple[int, str, float]] = ((7, "N=4608", 0.412), (8, "N=5120", 0.455)),
    stepped_inputs: Sequence[int] = (7,),
    toolchain_at: Sequence[tuple[int, str]] = ((0, "3.3.0"), (10, "3.3.1"), (18, "3.4.0")),
    run_cv: float = 0.015,
    sample_cv: float = 0.01,
    samples: int = 50,
    start: str = "2026-10-01T02:00:00+00:00",
) -> list[tuple[RunInfo, list[Cell]]]:
    """``n_runs`` nightly runs, one a day from ``start``: per input a native ``baseline`` cell and a
    Triton ``backend`` cell, whose median drifts from night to night (log-normal, CV ``run_cv``: the
    GPU's clocks and neighbours) around each input's latency (ms). From run ``step_at`` on (None: never)
    the backend's cells of ``stepped_inputs`` are ``step`` slower. The Triton release of run k is
    the last ``toolchain_at`` entry at or before k (by default it moves 3.3.1 -> 3.4.0 with the step)."""
    import datetime as dt

    rng = np.random.default_rng(seed)
    t0 = dt.datetime.fromisoformat(start)
    out: list[tuple[RunInfo, list[Cell]]] = []
    for k in range(n_runs):
        version = [v for at, v in toolchain_at if at <= k][-1]
        tc = _nightly_toolchain(version)
        run = RunInfo(
            run_id=f"night{k:02d}{seed:05d}"[:12],
            created=(t0 + dt.timedelta(days=k)).isoformat(timespec="seconds"),
            command=f"ktriage bench --op {op} --{mode} -t triton=={version}",
            host="gpu-nightly-1",
            gpu={"name": "NVIDIA H200", "driver": "570.124.06", "sm_count": 132},
            toolchains=[tc],
            settings={"timing": "cuda_events", "synthetic": True, "seed": seed},
            status="finished",
        )
        cells: list[Cell] = []
        for input_id, label, ms in inputs:
            night = float(np.exp(rng.normal(0.0, run_cv)))
            base_ms = ms * 1.3 * float(np.exp(rng.normal(0.0, run_cv)))
            cells.append(
                Cell(
                    CellKey(op, mode, input_id, label, baseline, None),
                    "ok",
                    lognormal(rng, samples, base_ms, sample_cv),
                )
            )
            slow = 1.0 + step if step_at is not None and k >= step_at and input_id in stepped_inputs else 1.0
            cells.append(
                Cell(
                    CellKey(op, mode, input_id, label, backend, str(tc["id"])),
                    "ok",
                    lognormal(rng, samples, ms * night * slow, sample_cv),
                )
            )
        out.append((run, cells))
    return out


# ----------------------------------------------------------------------------------- the time bisect's fake
@dataclass
class FakeNoisyTimings:
    """FAKE measurement (synthetic latencies with a known culprit) for tests and the noise benchmark.

    Candidate ``i`` has median ``base_ms`` before ``culprit`` and ``base_ms * (1 + effect)`` from it
    on (``steps`` adds further ``{index: factor}`` changes). Each sample is log-normal around it with
    CV ``cv``; with ``bimodal=(share, gap)`` a sample of a variant at index >= ``bimodal_from``
    (and < ``bimodal_to`` when given) is ``1 + gap`` slower with probability ``share``. ``drift`` is
    a relative slowdown added per ``measure`` call (time passes between sessions while candidates
    build: thermal creep, clocks); inside one call all variants are interleaved, as the GPU session
    measures them, so they share it. Variants are Candidates (their ``index``) or strings holding an
    index. ``fail``: indices that cannot be
    measured (absent from the result, with an ``errors`` entry). Counts ``samples_taken``/``calls``.
    """

    culprit: int
    effect: float
    cv: float
    base_ms: float = 1.0
    bimodal: tuple[float, float] | None = None
    bimodal_from: int = 0
    bimodal_to: int | None = None
    drift: float = 0.0
    steps: dict[int, float] = field(default_factory=dict)
    fail: frozenset[int] = frozenset()
    seed: int = 0
    samples_taken: int = 0
    calls: int = 0
    errors: dict[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.rng = np.random.default_rng(self.seed)

    def level(self, index: int) -> float:
        """The true median latency (ms) of candidate ``index``."""
        m = self.base_ms * ((1.0 + self.effect) if index >= self.culprit else 1.0)
        for at, factor in self.steps.items():
            if index >= at:
                m *= factor
        return m

    def __call__(self, variants: list[Variant], n: int) -> dict[str, list[float]]:
        self.calls += 1
        idx = [v.index if isinstance(v, Candidate) else int(v) for v in variants]
        live = [(variant_key(v), i) for v, i in zip(variants, idx) if i not in self.fail]
        for v, i in zip(variants, idx):
            if i in self.fail:
                self.errors[variant_key(v)] = "FAKE failure"
        if not live:
            return {}
        k = len(live)
        noise = np.exp(self.rng.normal(0.0, self.cv, (n, k)))
        levels = np.array([self.level(i) for _, i in live])
        x = levels[None, :] * noise * (1.0 + self.drift * (self.calls - 1))
        if self.bimodal is not None:
            share, gap = self.bimodal
            hit = [i >= self.bimodal_from and (self.bimodal_to is None or i < self.bimodal_to) for _, i in live]
            slow = (self.rng.random((n, k)) < share) & np.array(hit)[None, :]
            x = np.where(slow, x * (1.0 + gap), x)
        self.samples_taken += n * k
        return {key: [float(v) for v in x[:, j]] for j, (key, _) in enumerate(live)}


def fake_candidates(n: int, prefix: str = "c") -> list[Candidate]:
    """``n`` synthetic candidates 0..n-1 (0 = good endpoint, n-1 = bad), for the fake's callers."""
    return [Candidate(i, f"{prefix}{i}", f"{prefix}{i}", {}) for i in range(n)]


def fake_timing_job(variants: list[str], samples: int = 8, seed: int = 0) -> dict[str, Any]:
    """A FAKE timing job (CI has no GPU): what a GPU timing job returns for one comparison, with
    synthetic samples. It has a timing job's shape on every executor: all ``variants`` are "timed" in
    this one process (``pid``), interleaved, so tests can check placement (the GPU node only) and the
    one-process rule without a GPU. The samples are deterministic in (variant, seed)."""
    import os
    import random
    import socket

    rng = {v: random.Random(f"{seed}:{v}") for v in variants}
    out: dict[str, list[float]] = {v: [] for v in variants}
    for _ in range(samples):
        for v in variants:  # interleaved, as the real timer does
            out[v].append(round(10.0 + rng[v].random(), 6))
    return {
        "samples": out,
        "pid": os.getpid(),
        "hostname": socket.gethostname(),
        "cuda_visible_devices": os.environ.get("CUDA_VISIBLE_DEVICES"),
    }


def fake_unfit_job(unfit_nodes: Sequence[str], log: str | None = None, seconds: float = 0.0) -> str:
    """A FAKE job that finds the Ray nodes ``unfit_nodes`` unfit for it (raises ``NodeUnfit`` there, as
    a compile job does on a node that cannot build its toolchain) and returns the id of the node it ran
    on anywhere else: the cluster tests check that such a job moves to a fit node, and fails naming
    every node when none is. ``log``: a file that gets one line per run, the node's id (where the job
    did its work, refused or not). ``seconds``: how long it works on a fit node (a build takes a while; a
    refusal comes back at once), so the cluster tests can see where the jobs queued meanwhile go."""
    import time

    import ray

    from ktriage.execute.base import NodeUnfit

    node = str(ray.get_runtime_context().get_node_id())
    if log is not None:
        with open(log, "a") as out:
            out.write(node + "\n")
    if node in unfit_nodes:
        raise NodeUnfit("cannot build the toolchain triton==0.0 here (a FAKE reason)", "build it on that node")
    time.sleep(seconds)
    return node


def fake_raising_job(error: BaseException) -> None:
    """A FAKE job that raises ``error`` where it runs: the cluster tests check that a job's error comes back
    from the node whole (pickled there and back: its problem, fix and own attributes), as a failed job,
    not as a node the cluster lost."""
    raise error
