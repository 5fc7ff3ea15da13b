"""Measure one entry of a recorded bench, inside an isolated worker process (GPU host).

For one (kernel, recorded input): allocate the arguments once from the recorded descriptions
(seeded), then for each toolchain launch its kernel on a FRESH COPY of those buffers and compare
every tensor argument with the reference toolchain's (the first that runs; normally the first
``-t``). The reference runs twice: if its two results are bitwise equal it is deterministic, and
a toolchain's agreement is reported as "bitwise equal" or "within tolerance". A toolchain beyond
the tolerance is emitted as "wrong" and never timed (``ktriage.workload.recorded.check``).

State between timed calls: the reference is launched a third time on the buffers its first launch
left; if the result is bitwise unchanged the kernel is idempotent (it only reads its inputs and
overwrites its outputs) and all toolchains are timed back to back on one set of buffers. If not
(it accumulates with atomics or ``+=``, works in place, or is not deterministic), every timed
call starts from the pristine data: the buffers are copied back before each call, in the timed
callable's ``before`` hook, which the event sampler runs before the L2 flush and the start event,
i.e. outside the timed region (graph timing captures the calls alone and does not reset).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import replace
from typing import TYPE_CHECKING, Any, TypedDict

from ktriage.bench.plan import RecordedPlan, timing_fields
from ktriage.errors import KtriageError
from ktriage.measure.cells import Cell, CellKey
from ktriage.schema.jsontypes import JSONObject

if TYPE_CHECKING:
    from ktriage.measure.timing import TimingOptions

Emit = Callable[[Cell], None]


class _Timed:
    """A timed launch; ``before`` (reset the buffers, when the kernel is not idempotent) runs untimed."""

    def __init__(self, call: Callable[[], None], reset: Callable[[], None] | None) -> None:
        self._call = call
        self.before = reset  # the event sampler calls it (when not None) outside the timed region

    def __call__(self) -> None:
        self._call()


def _reason(exc: BaseException) -> str:
    return exc.problem if isinstance(exc, KtriageError) else f"{type(exc).__name__}: {exc}"


class EntryJob(TypedDict):
    """One job of the recorded bench worker: the plan and the recorded entry to measure."""

    plan: JSONObject  # RecordedPlan.to_json()
    entry: int


def prepare_recorded_worker(plan_json: JSONObject) -> None:
    """The worker's init (runs while the parent prepares the run): the GPU ready, as for an op bench."""
    from ktriage.bench.worker import no_gpu_fix, ready_gpu

    plan = RecordedPlan.from_json(plan_json)
    explain = (
        f"`ktriage explain {plan.workload or plan.name + '.workload.json'} -t OLD -t NEW` (the workload the "
        "bundle was built from, its toolchains)"
    )
    fix = no_gpu_fix(plan.bundle, explain)
    rebuild = (
        "record the program on this GPU and bench that workload: ktriage record -o W.json -- COMMAND, then "
        "ktriage bench W.json -t OLD -t NEW (the recorded kernels are specialized for the GPU they ran on)"
    )
    ready_gpu(
        l2_flush=bool(plan.timing.get("l2_flush", True)),
        fix=fix,
        target=plan.target,
        bundle=plan.bundle,
        rebuild=rebuild,
    )


def measure_entry(payload: EntryJob, emit: Emit) -> None:
    """Worker job handler (``ktriage.measure.isolate``): payload = {"plan": ..., "entry": id}."""
    import torch

    from ktriage.measure.loader import runner_loader
    from ktriage.measure.timing import TimingOptions, gpu_sampler_factory, measure_interleaved
    from ktriage.stats.verdict import VerdictConfig, stop_when_sure
    from ktriage.workload.bundles.launch import make_launcher
    from ktriage.workload.recorded.bundle import load_recorded_bundle
    from ktriage.workload.recorded.replay import Buffers, RecordedKernel, allocate, differential_check

    plan = RecordedPlan.from_json(payload["plan"])
    recorded = load_recorded_bundle(plan.bundle)
    entry = recorded.entry(int(payload["entry"]))
    keys = plan.keys(entry)
    extra: JSONObject = {
        "kernel": entry.kernel,
        "recorded_input": entry.input,
        "recorded_label": entry.recorded_label,
        "launches": entry.count,
        "grid": entry.grid,
    }

    def cell(key: CellKey, status: str, **kw: Any) -> Cell:
        return Cell(key, status, extra={**extra, **kw.pop("extra", {})}, **kw)  # type: ignore[arg-type]

    try:
        launch_plan = entry.plan(recorded.bundle.specs[entry.spec_key])
        pristine = allocate(launch_plan, seed=plan.seed + entry.id, device="cuda")
        torch.cuda.synchronize()
    except Exception as exc:
        if getattr(exc, "sticky", False):
            raise
        for key in keys:
            emit(cell(key, "error", error=f"cannot allocate the recorded arguments: {_reason(exc)}"))
        return
    loader = runner_loader()
    kernels: dict[str, Callable[[Buffers], None]] = {
        str(k.toolchain): RecordedKernel(
            make_launcher(recorded.bundle, str(k.toolchain), loader), entry.spec_key, launch_plan
        )
        for k in keys
    }
    check = differential_check(
        [str(k.toolchain) for k in keys],
        kernels,
        pristine,
        launch_plan,
        synchronize=torch.cuda.synchronize,
        describe=_reason,
    )
    variants: dict[str, _Timed] = {}
    work = pristine.clone()  # one set of buffers for every toolchain's timed calls
    for key in keys:
        outcome = check.outcomes[str(key.toolchain)]
        if outcome.status != "ok":
            emit(cell(key, outcome.status, error=outcome.error, accuracy=outcome.accuracy))
            continue
        reset = None if check.idempotent else functools.partial(work.reset_from, pristine)
        variants[str(key.toolchain)] = _Timed(functools.partial(kernels[str(key.toolchain)], work), reset)
    if not variants:
        return
    ref_tc = str(check.reference)
    config = VerdictConfig(threshold=plan.threshold, confidence=plan.confidence, min_samples=plan.min_samples)
    pairs = [(str(ref_tc), t) for t in variants if t != str(ref_tc) and str(ref_tc) in variants]
    options = replace(TimingOptions(), **timing_fields(plan.timing))
    try:
        protocol, why = recorded_protocol(str(plan.timing.get("mode", "auto")), variants, options, check.idempotent)
    except Exception as exc:
        if getattr(exc, "sticky", False):
            raise
        for key in keys:
            if str(key.toolchain) in variants:
                emit(cell(key, "error", error=f"probing the kernel's time: {_reason(exc)}"))
        return
    result = measure_interleaved(
        variants,
        min_samples=plan.min_samples,
        max_time_s=plan.max_time_s,
        stop=lambda samples: stop_when_sure(samples, pairs, config, max_samples=plan.max_samples),
        seed=plan.seed + entry.id,
        options=options,
        sampler_factory=gpu_sampler_factory(options, dict.fromkeys(variants, protocol)),
    )
    for key in keys:
        name = str(key.toolchain)
        if name not in variants:
            continue
        if name in result.errors:
            emit(cell(key, "error", error=result.errors[name]))
            continue
        emit(
            cell(
                key,
                "ok",
                samples_ms=list(result.samples[name]),
                accuracy=check.outcomes[name].accuracy,
                extra={
                    "stopped_by": result.stopped_by,
                    "rounds": result.rounds,
                    "protocol": protocol,
                    "protocol_reason": why,
                    "calls_per_sample": result.info.get(name, {}).get("calls_per_sample", 1),
                    "reset_before_each_call": not check.idempotent,
                    "buffer_bytes": pristine.nbytes(),
                },
            )
        )


def recorded_protocol(
    asked: str, variants: dict[str, _Timed], options: TimingOptions, idempotent: bool
) -> tuple[str, str]:
    """The timing protocol of one recorded entry (every toolchain gets the same one: a ratio of two
    protocols would measure the protocols) and why. A recorded entry is one kernel launch per call,
    so ``auto`` is ``choose_protocol`` for a single launch, with one exception: a kernel that is not
    idempotent needs its buffers reset before each call, which a graph replay cannot do between its
    captured calls, so it is timed with per-call events."""
    from ktriage.bench.worker import PROBE_CALLS
    from ktriage.measure.timing import GRAPH_BELOW_MS, PROTOCOLS, choose_protocol, probe_ms, shared_flusher

    if asked in PROTOCOLS:
        return asked, f"--timing {asked}"
    if not idempotent:
        return "events", (
            "one kernel launch per call whose buffers are reset before each call (the kernel is not "
            "idempotent): per-call CUDA events, the reset outside the timed region"
        )
    flush = shared_flusher(options.flush_bytes, options.device).flush if options.l2_flush else None
    est = max(probe_ms(v, flush, PROBE_CALLS) for v in variants.values())
    return choose_protocol(native=False, single_launch=True, est_ms=est, graph_below_ms=GRAPH_BELOW_MS)
