"""Measure one input of a bench plan, inside an isolated worker process (GPU host).

For one operator input: build the inputs as TritonBench does, prepare every variant (native backends
and each toolchain's artifact replay), check each variant's outputs against the baseline's (a wrong
result is reported as "wrong" and never timed), then time all correct variants interleaved in a
randomized order until every ratio that matters is decided or the time cap is reached. Each cell
is emitted as soon as it is known, so the parent stores it even if a later kernel faults.

What a run pays once, not per input (the worker lives for the whole run, see
ktriage.measure.isolate): torch, CUDA and the statistics are imported by ``prepare_worker`` while
the parent opens the store; the bundle is read (and its cubins hashed) once; each toolchain's
launcher, hence each cubin's module load, is made once; the 256 MB flush buffer and the spin
kernel's calibration are made once (ktriage.measure.timing). Per input and variant only a short
warm-up remains, and a probe of a few calls whose time picks the timing protocol (``choose_protocol``).
"""

from __future__ import annotations

import traceback
from collections.abc import Callable
from dataclasses import replace
from typing import TYPE_CHECKING, Any, TypedDict

from ktriage.bench.plan import BenchPlan, comparison_pairs, timing_fields, variant_name
from ktriage.bench.torch_build import TorchBuild
from ktriage.errors import DeviceError, KtriageError
from ktriage.measure.cells import Cell, CellKey
from ktriage.schema.jsontypes import JSONObject

if TYPE_CHECKING:
    from torch import Tensor

    from ktriage.workload.bundles.format import Bundle

Emit = Callable[[Cell], None]

#: Bench's warm-up per variant and input (ms of wall time, at least 1 call): the GPU is already
#: hot from the previous input, and each variant has run its checking call, ``outputs()`` and the
#: probe's calls just before; do_bench's 25 ms per call site is for a cold GPU. On the H200 the
#: untimed calls per variant (check, outputs, probe, warm-up, each turn's opener) were as many as
#: the 10 timed ones: the fewer, the closer the wall time comes to the timed kernel time.
BENCH_WARMUP_MS = 2.0
BENCH_WARMUP_CALLS = 1
#: Calls of the probe that estimates a variant's time per call (events, flush before each).
PROBE_CALLS = 2

# Process-wide caches of the worker (one worker measures every input of a run).
_BUNDLES: dict[str, Bundle] = {}
_LAUNCHERS: dict[tuple[str, str], Any] = {}


class _Timed:
    """A timed call whose ``before`` (reset grads, as TritonBench does) runs outside the timed region."""

    def __init__(self, call: Callable[[], None], grads: Callable[[], list[Any]]) -> None:
        self.call, self.grads = call, grads

    def before(self) -> None:
        for tensor in self.grads():
            tensor.grad = None

    def __call__(self) -> None:
        self.call()


def _bundle(path: str) -> Any:
    if path not in _BUNDLES:
        from ktriage.workload.bundles.format import load_bundle

        _BUNDLES[path] = load_bundle(path)
    return _BUNDLES[path]


def _launcher(bundle: Any, path: str, toolchain: str) -> Any:
    """One launcher per toolchain for the whole run: it loads each cubin on first use and keeps it."""
    key = (path, toolchain)
    if key not in _LAUNCHERS:
        from ktriage.measure.loader import runner_loader
        from ktriage.workload.bundles.launch import make_launcher

        _LAUNCHERS[key] = make_launcher(bundle, toolchain, runner_loader())
    return _LAUNCHERS[key]


def no_gpu_fix(bundle: str | None, explain: str) -> str:
    """The fix when a bench that measures finds no GPU. Only a bench without ``-t`` gets this far
    (with ``-t`` the driver is asked before the compile, whose fix is ``--compile-only``), so
    ``--compile-only`` is never the fix here: a bundle is compiled already (``--compile-only`` builds
    one, it cannot measure one), and native backends compile nothing. ``explain``: the command that
    explains these kernels offline (the recorded workload's, or the op's catalog kernels)."""
    if bundle is None:
        return "run it on the GPU machine (the native backends need no compile here)"
    return (
        f"measure the bundle on the GPU machine: copy {bundle} there and run `ktriage bench --bundle {bundle}` "
        "(it is compiled already: --compile-only builds a bundle, it does not measure one); here, explain its "
        f"kernels offline: {explain}"
    )


def no_gpu_refusal(build: TorchBuild, driver_problem: str | None, fix: str, python: str) -> DeviceError:
    """The worker's refusal when torch sees no GPU, the one home of its wording. Why the build and the
    driver's answer: "no CUDA GPU is visible" with the fix "measure on the GPU machine" was wrong on the
    GPU machine itself when torch there is a CPU-only build (``pip install torch`` on some hosts), a ROCm
    build (for AMD GPUs: named as such, not as CPU-only), or one for a CUDA newer than the driver: the GPU
    is there, this torch cannot use it.

    ``driver_problem``: why the CUDA driver finds no GPU (``ktriage.record.run.gpu_problem``), None when
    it sees one; ``fix``: the way out when there is no GPU (:func:`no_gpu_fix`); ``python``: the
    interpreter the worker runs (``sys.executable``), where torch is to be installed."""
    check = f"""check it with {python} -c 'import torch; print(torch.version.cuda, torch.cuda.is_available())'"""
    install_cuda_torch = (
        f"install a CUDA build of torch in this Python ({python}), for a CUDA the driver supports (nvidia-smi "
        f"shows it; https://pytorch.org/get-started/locally/ gives the pip command); {check}"
    )
    if build.rocm and driver_problem is None:
        return DeviceError(
            f"torch {build.version} is a ROCm build (torch.version.hip is {build.hip}, torch.version.cuda is None): "
            "ktriage measures on CUDA GPUs, and this torch cannot use the GPU the CUDA driver sees",
            install_cuda_torch,
        )
    if build.cuda is None and driver_problem is None:
        return DeviceError(
            f"torch {build.version} is a CPU-only build (torch.version.cuda is None): the measurement worker "
            "cannot use the GPU the CUDA driver sees",
            install_cuda_torch,
        )
    if driver_problem is None:
        return DeviceError(
            f"torch {build.version} (built for CUDA {build.cuda}) sees no GPU, though the CUDA driver sees one: "
            f"the driver may be older than CUDA {build.cuda} needs",
            f"install a torch built for a CUDA the driver supports (nvidia-smi shows it) in this Python "
            f"({python}), or update the driver; {check}",
        )
    if build.rocm:
        return DeviceError(
            f"no CUDA GPU is visible to the measurement worker: {driver_problem}; torch {build.version} here "
            "is a ROCm build as well (ktriage measures on CUDA GPUs, with a CUDA build of torch)",
            fix,
        )
    if build.cuda is None:
        return DeviceError(
            f"no CUDA GPU is visible to the measurement worker: {driver_problem}; torch {build.version} here "
            "is a CPU-only build as well",
            fix,
        )
    return DeviceError(f"no CUDA GPU is visible to the measurement worker: {driver_problem}", fix)


def other_gpu_refusal(
    target: str, capability: tuple[int, int], gpu: str, bundle: str, rebuild: str
) -> DeviceError | None:
    """The refusal of a GPU that cannot load a bundle's cubins (:func:`ktriage.arch.cubin_runs_on`), or
    None when it can. Why: a bundle built for sm_90 and measured on an A100 started, then failed every
    cell at its first launch with the driver's "no kernel image is available". ``target``: the bundle's
    (``sm_90``; a recorded bundle of kernels recorded on several GPUs joins them with commas: refused
    only when the GPU runs none of them); ``rebuild``: how to get a bundle for this GPU."""
    from ktriage.arch import cubin_runs_on

    targets = [t for t in target.split(",") if t]
    if not targets or any(cubin_runs_on(t, *capability) for t in targets):
        return None
    here = f"sm_{capability[0]}{capability[1]}"
    return DeviceError(
        f"bundle {bundle} holds cubins compiled for {target}, and this GPU ({gpu}, {here}) cannot load them",
        f"measure it on an {target} GPU (copy {bundle} there), or {rebuild}",
    )


def ready_gpu(*, l2_flush: bool, fix: str, target: str = "", bundle: str = "", rebuild: str = "") -> None:
    """What every bench worker does before its first job (while the parent prepares the run): torch
    and CUDA up, the statistics imported, the flush buffer allocated and the GPU's clocks raised.
    ``fix``: what to do when no GPU is visible (:func:`no_gpu_fix`); the refusal itself is
    :func:`no_gpu_refusal`'s (the CUDA driver is asked only then, in a bounded child process).
    ``target``: the GPU target of ``bundle``'s cubins, refused on a GPU that cannot load them
    (:func:`other_gpu_refusal`, ``rebuild`` its fix), before any job."""
    import sys

    import torch

    if not torch.cuda.is_available():
        from ktriage.record.run import gpu_problem

        build = TorchBuild(str(torch.__version__), torch.version.cuda, torch.version.hip)
        raise no_gpu_refusal(build, gpu_problem(), fix, sys.executable)
    torch.zeros(1, device="cuda")
    if target:
        major, minor = torch.cuda.get_device_capability()
        refusal = other_gpu_refusal(target, (major, minor), torch.cuda.get_device_name(), bundle, rebuild)
        if refusal is not None:
            raise refusal
    import ktriage.stats.verdict  # noqa: F401 - numpy/scipy now, not inside the first input
    from ktriage.measure.timing import shared_flusher, shared_spinner

    if l2_flush:
        flusher = shared_flusher()
        for _ in range(300):  # ~25 ms of memory traffic: the clocks leave idle before the first input
            flusher.flush()
        torch.cuda.synchronize()
    shared_spinner()


class InputJob(TypedDict):
    """One job of the op bench worker (the session sends one per input): the plan and the input."""

    plan: JSONObject  # BenchPlan.to_json()
    input_id: int


def prepare_worker(plan_json: JSONObject) -> None:
    """The op bench worker's init: the GPU ready (:func:`ready_gpu`), the op modules imported, the bundle read."""
    from ktriage.workload.ops.backends import get_backend  # noqa: F401 - the op modules' imports

    plan = BenchPlan.from_json(plan_json)
    bundle = plan.bundle if plan.artifact_backends else None
    explain = (
        f"`ktriage explain OP -t OLD -t NEW` with the catalog op of {plan.op} (`ktriage catalog list`) and the "
        "toolchains the bundle was built with"
    )
    ready_gpu(l2_flush=bool(plan.timing.get("l2_flush", True)), fix=no_gpu_fix(bundle, explain))
    if plan.bundle and plan.artifact_backends:
        _bundle(plan.bundle)


def _backend(plan: BenchPlan, key: CellKey, bundle: Any) -> Any:
    from ktriage.workload.ops.backends import get_backend

    if key.toolchain is None:
        options = {"compile_mode": plan.compile_mode} if "compile" in key.backend else {}
        return get_backend(plan.op, key.backend, **options)
    from ktriage.workload.ops.replay import artifact_backend

    assert plan.bundle is not None
    launch = _launcher(bundle, plan.bundle, key.toolchain)
    return artifact_backend(
        key.backend, launch=launch, specs=bundle.spec_source(), timing=plan.artifact_timing, sm_count=bundle.sm_count
    )


def plan_protocols(
    plan: BenchPlan, kinds: dict[str, tuple[bool, bool]], est_ms: dict[str, float | None]
) -> dict[str, tuple[str, str]]:
    """Protocol and reason per variant: the plan's ``timing.mode`` for all when it names one,
    else (``auto``) ``choose_protocol`` per backend: every toolchain of one backend gets the same
    protocol (graph only when all of them are short), because a ratio of two protocols would
    measure the protocols (graph replays of a 40 us kernel read ~8 % faster than per-call events)."""
    from ktriage.measure.timing import PROTOCOLS, choose_protocol

    asked = str(plan.timing.get("mode", "auto"))
    if asked in PROTOCOLS:
        return {name: (asked, f"--timing {asked}") for name in kinds}
    by_backend: dict[tuple[str, bool], list[str]] = {}  # (backend, replayed from a toolchain)
    for name in kinds:
        by_backend.setdefault((name.split("@")[0], "@" in name), []).append(name)
    out: dict[str, tuple[str, str]] = {}
    for names in by_backend.values():
        native = any(kinds[n][0] for n in names)
        single = all(kinds[n][1] for n in names)
        known = [est_ms.get(n) for n in names]
        slowest = None if any(e is None for e in known) else max(e for e in known if e is not None)
        choice = choose_protocol(
            native=native, single_launch=single, est_ms=slowest, graph_below_ms=plan.graph_below_ms
        )
        out.update({n: choice for n in names})
    return out


def measure_input(payload: InputJob, emit: Emit) -> None:
    """Worker job handler (see ktriage.measure.isolate): payload = {"plan": ..., "input_id": ...}."""
    import time

    import torch

    t_job = time.perf_counter()
    from ktriage.measure.timing import TimingOptions, gpu_sampler_factory, measure_interleaved, probe_ms, shared_flusher
    from ktriage.stats.verdict import VerdictConfig, stop_when_sure
    from ktriage.workload.ops.backends import check_outputs, make_input
    from ktriage.workload.ops.opdef import bench_op

    plan = BenchPlan.from_json(payload["plan"])
    op = bench_op(plan.op)
    case = next(c for c in op.inputs() if c.id == payload["input_id"])
    label = op.x_val_text(case)
    keys = plan.variant_keys(case.id, label)
    bundle = _bundle(plan.bundle) if plan.bundle and plan.artifact_backends else None
    inp = make_input(plan.op, case, precision=plan.precision)
    from ktriage.workload.ops.opdef import bytes_moved, flops

    nbytes, nflops = (
        bytes_moved(plan.op, case, plan.mode, inp.precision),
        flops(plan.op, case, plan.mode, inp.precision),
    )
    defaults = TimingOptions(warmup_ms=BENCH_WARMUP_MS, min_warmup_calls=BENCH_WARMUP_CALLS)
    options = replace(defaults, **timing_fields(plan.timing))
    flush = shared_flusher(options.flush_bytes, options.device).flush if options.l2_flush else None

    def cell(key: CellKey, status: str, **kw: Any) -> Cell:
        return Cell(key, status, bytes_moved=nbytes, flops=nflops, **kw)  # type: ignore[arg-type]

    # The baseline first: its outputs are the reference of every other variant.
    variants: dict[str, _Timed] = {}
    kinds: dict[str, tuple[bool, bool]] = {}  # name -> (native, single launch)
    est_ms: dict[str, float | None] = {}
    accuracy: dict[str, JSONObject] = {}
    reference: dict[str, Tensor | None] | None = None  # the baseline's outputs
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
        timed = _Timed(call, backend.grad_to_none)
        native = getattr(backend, "kind", "native") != "artifact"
        single = not native and plan.artifact_timing == "kernel" and len(getattr(backend, "kernels", {})) == 1
        try:
            est_ms[name] = probe_ms(timed, flush, PROBE_CALLS)
        except Exception as exc:
            if getattr(exc, "sticky", False):
                raise
            emit(
                cell(
                    key,
                    "error",
                    error=f"{type(exc).__name__}: {exc}",
                    extra={"traceback": traceback.format_exc(limit=4)},
                )
            )
            continue
        variants[name], kinds[name] = timed, (native, single)
    if not variants:
        return
    protocols = plan_protocols(plan, kinds, est_ms)
    prep_s = time.perf_counter() - t_job
    config = VerdictConfig(threshold=plan.threshold, confidence=plan.confidence, min_samples=plan.min_samples)
    pairs = [
        p
        for p in comparison_pairs(plan, [k for k in keys if variant_name(k) in variants])
        if p[0] in variants and p[1] in variants
    ]
    result = measure_interleaved(
        variants,
        min_samples=plan.min_samples,
        max_time_s=plan.max_time_s,
        stop=lambda samples: stop_when_sure(samples, pairs, config, max_samples=plan.max_samples),
        seed=plan.seed + case.id,
        options=options,
        sampler_factory=gpu_sampler_factory(options, {n: p for n, (p, _) in protocols.items()}),
    )
    for key in keys:
        name = variant_name(key)
        if name not in variants:
            continue
        if name in result.errors:
            emit(cell(key, "error", error=result.errors[name]))
            continue
        protocol, why = protocols[name]
        info = result.info.get(name, {})
        extra = {
            "stopped_by": result.stopped_by,
            "rounds": result.rounds,
            "protocol": protocol,
            "protocol_reason": why,
            "calls_per_sample": info.get("calls_per_sample", 1),
            "probe_ms": est_ms.get(name),
            "elapsed_s": round(result.elapsed_s, 4),
            "prep_s": round(prep_s, 4),
            **{k: v for k, v in info.items() if k in ("spin_ms", "turns", "overrun_turns")},
        }
        emit(
            cell(
                key,
                "ok",
                samples_ms=list(result.samples[name]),
                accuracy=accuracy.get(name, {"reference": True}),
                extra=extra,
            )
        )
