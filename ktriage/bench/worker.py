"""Measure one input of a bench plan, inside an isolated worker process (GPU host).

For one operator input: build the inputs as TritonBench does, prepare every variant (native backends
and each toolchain's artifact replay), check each variant's outputs against the baseline's (a wrong
result is reported as "wrong" and never timed), then time all correct variants interleaved in a
randomized order until every ratio that matters is decided or the time cap is reached. Each cell
is emitted as soon as it is known, so the parent stores it even if a later kernel faults.
"""

from __future__ import annotations

import traceback
from collections.abc import Callable
from typing import Any

from ktriage.bench.plan import BenchPlan, comparison_pairs, variant_name
from ktriage.errors import KtriageError
from ktriage.measure.cells import Cell, CellKey

Emit = Callable[[Cell], None]


class _Timed:
    """A timed call whose ``before`` (reset grads, as TritonBench does) runs outside the timed region."""

    def __init__(self, call: Callable[[], None], grads: Callable[[], list[Any]]) -> None:
        self.call, self.grads = call, grads

    def before(self) -> None:
        for tensor in self.grads():
            tensor.grad = None

    def __call__(self) -> None:
        self.call()


def _backend(plan: BenchPlan, key: CellKey, bundle: Any) -> Any:
    from ktriage.workload.backends import get_backend

    if key.toolchain is None:
        options = {"compile_mode": plan.compile_mode} if "compile" in key.backend else {}
        return get_backend(plan.op, key.backend, **options)
    from ktriage.measure.loader import runner_loader
    from ktriage.workload.bundle_launch import make_launcher
    from ktriage.workload.replay import artifact_backend

    launch = make_launcher(bundle, key.toolchain, runner_loader())
    return artifact_backend(key.backend, launch=launch, specs=bundle.spec_source(), timing=plan.artifact_timing,
                            sm_count=bundle.sm_count)


def measure_input(payload: dict[str, Any], emit: Emit) -> None:
    """Worker job handler (see ktriage.measure.isolate): payload = {"plan": ..., "input_id": ...}."""
    import torch

    from ktriage.measure.timing import TimingOptions, measure_interleaved
    from ktriage.stats.verdict import VerdictConfig, stop_when_sure
    from ktriage.workload.backends import check_outputs, make_input
    from ktriage.workload.ops import get_op

    plan = BenchPlan.from_json(payload["plan"])
    op = get_op(plan.op)
    case = next(c for c in op.inputs() if c.id == payload["input_id"])
    label = op.x_val_text(case)
    keys = plan.variant_keys(case.id, label)
    bundle = None
    if plan.bundle and plan.artifact_backends:
        from ktriage.workload.bundle import load_bundle

        bundle = load_bundle(plan.bundle)
    inp = make_input(plan.op, case, precision=plan.precision)
    from ktriage.workload.ops import bytes_moved, flops

    nbytes, nflops = bytes_moved(plan.op, case, plan.mode, inp.precision), flops(plan.op, case, plan.mode, inp.precision)

    def cell(key: CellKey, status: str, **kw: Any) -> Cell:
        return Cell(key, status, bytes_moved=nbytes, flops=nflops, **kw)  # type: ignore[arg-type]

    # The baseline first: its outputs are the reference of every other variant.
    variants: dict[str, _Timed] = {}
    accuracy: dict[str, dict[str, Any]] = {}
    reference: dict[str, Any] | None = None
    ordered = sorted(keys, key=lambda k: variant_name(k) != plan.baseline)
    for key in ordered:
        name = variant_name(key)
        try:
            backend = _backend(plan, key, bundle)
            call = backend.prepare(inp, plan.mode)
            outputs = backend.outputs()
            torch.cuda.synchronize()
        except Exception as exc:
            if getattr(exc, "sticky", False):
                raise
            reason = exc.problem if isinstance(exc, KtriageError) else f"{type(exc).__name__}: {exc}"
            emit(cell(key, "error", error=reason, extra={"traceback": traceback.format_exc(limit=4)}))
            continue
        if reference is None and name == plan.baseline:
            reference = outputs
        if reference is not None and name != plan.baseline:
            acc = check_outputs(reference, outputs, precision=inp.precision)
            accuracy[name] = acc.to_cell()
            if not acc.passed:
                emit(cell(key, "wrong", error=acc.reason, accuracy=accuracy[name]))
                continue
        variants[name] = _Timed(call, backend.grad_to_none)
    if not variants:
        return
    config = VerdictConfig(threshold=plan.threshold, confidence=plan.confidence, min_samples=plan.min_samples)
    pairs = [p for p in comparison_pairs(plan, [k for k in keys if variant_name(k) in variants])
             if p[0] in variants and p[1] in variants]
    result = measure_interleaved(
        variants,
        min_samples=plan.min_samples,
        max_time_s=plan.max_time_s,
        stop=lambda samples: stop_when_sure(samples, pairs, config, max_samples=plan.max_samples),
        seed=plan.seed + case.id,
        options=TimingOptions(**plan.timing),
    )
    for key in keys:
        name = variant_name(key)
        if name not in variants:
            continue
        if name in result.errors:
            emit(cell(key, "error", error=result.errors[name]))
            continue
        extra = {"stopped_by": result.stopped_by, "rounds": result.rounds}
        emit(cell(key, "ok", samples_ms=list(result.samples[name]), accuracy=accuracy.get(name, {"reference": True}),
                  extra=extra))
