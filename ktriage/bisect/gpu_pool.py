"""A timed bisect over several GPUs of this host (``ktriage bisect --metric latency --gpus ...``).

One :class:`GpuWorkerMeasure` per GPU: a :data:`~ktriage.bisect.decide.MeasureFn` whose every call
is one job in an isolated worker process pinned to that GPU (``ktriage.measure.gpus.worker_env``).
The worker builds its measure once (``factory(*args)``: for a time bisect the bundle's replays,
``cluster.bench_measure_job``) and keeps it, as the cluster's GPU node does (``cluster.timing_job``).
The time predicate gives each GPU one group of a round's candidates with both endpoints
(``TimePredicate(more_gpus=...)``), so a candidate is only compared with endpoint samples of its
own GPU; a fault in one GPU's worker costs that group's call, and the worker is replaced.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypedDict

from ktriage.measure.cells import Cell, CellKey
from ktriage.measure.isolate import IsolatedRunner, Job


class TimingPayload(TypedDict):
    """One timing job for the worker: the measure's factory and arguments, the variants, the samples."""

    factory: Callable[..., Any]
    args: tuple[Any, ...]
    variants: list[Any]  # Variant: a Candidate or a toolchain id
    n: int


def _key(variant_key: str) -> CellKey:
    return CellKey("bisect", "time", 0, "round", variant_key, None)


def measure_job(payload: TimingPayload, emit: Callable[[Cell], None]) -> None:
    """Worker job handler: ``n`` samples of every variant, interleaved in this process, as one cell
    per variant (status ok with the samples, or error with the measure's reason)."""
    from ktriage.bisect.cluster import timing_job
    from ktriage.bisect.decide import variant_key

    got, errors = timing_job(payload["factory"], tuple(payload["args"]), payload["variants"], int(payload["n"]))
    for v in payload["variants"]:
        key = variant_key(v)
        if got.get(key):
            emit(Cell(_key(key), "ok", samples_ms=[float(x) for x in got[key]]))
        else:
            emit(Cell(_key(key), "error", error=errors.get(key, "no samples returned")))


class GpuWorkerMeasure:
    """The time bisect's measure on one GPU of this host, in a worker process pinned to it."""

    def __init__(
        self,
        gpu: int,
        factory: Callable[..., Any],
        args: tuple[Any, ...],
        *,
        timeout_s: float = 600.0,
        handler: Callable[[TimingPayload, Callable[[Cell], None]], None] = measure_job,
    ) -> None:
        from ktriage.measure.gpus import worker_env

        self.gpu = gpu
        self.factory, self.args = factory, args
        self.errors: dict[str, str] = {}
        self.runner = IsolatedRunner(handler, timeout_s=timeout_s, env=worker_env(gpu))
        self.runner.start()  # its start-up (torch, CUDA) overlaps the other GPUs'

    def __call__(self, variants: list[Any], n: int) -> dict[str, list[float]]:
        from ktriage.bisect.decide import variant_key

        keys = [variant_key(v) for v in variants]
        cells = self.runner.run_job(
            Job(
                [_key(k) for k in keys],
                TimingPayload(factory=self.factory, args=self.args, variants=list(variants), n=n),
            )
        )
        out: dict[str, list[float]] = {}
        for c in cells:
            if c.status == "ok":
                out[c.key.backend] = list(c.samples_ms)
            else:
                self.errors[c.key.backend] = f"GPU {self.gpu}: {c.error or c.status}"
        return out  # a variant without samples: its reason is in errors (an endpoint's stops the bisect, naming it)

    def close(self) -> None:
        self.runner.close()
