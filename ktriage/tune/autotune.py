"""A spill-aware ``prune_configs_by`` hook for ``triton.autotune`` (Triton 3.3+).

Why: ``triton.autotune`` times every config on the GPU, including configs that spill registers to
local memory and can never win, and Triton itself cannot tell spills from stack arrays (its
``n_spills`` is the local-memory size / 4, and only after a GPU load). This hook runs inside the
user's process, with the user's Triton: for each candidate config it builds the specialization the
JIT would build for the actual arguments (the JIT's own binder), compiles the kernel for the target
WITHOUT launching it (``triton.compile``; the result lands in Triton's cache, so the JIT reuses it),
re-runs the installed Triton's ptxas with ``-v`` on the PTX to read the true spill-store bytes,
computes the exact occupancy (ktriage.analyze.occupancy), drops configs that spill more than the
threshold, ranks the rest with a crude roofline-style estimate and keeps the best few.

Use it as::

    @triton.autotune(configs=configs, key=["n_cols"], prune_configs_by=ktriage_prune(max_spill_bytes=0, keep=3))
    @triton.jit
    def kernel(...): ...

or ``prune_configs_by={"early_config_prune": spill_aware_prune}`` (default settings), or the drop-in
decorator :func:`autotune`. Works on a CPU machine when a target is given (``target="sm_90"``).
The hook never breaks the user's tuning: a config it cannot screen is kept (ranked after the screened
ones) and the reason is recorded in :attr:`SpillAwarePrune.last_report`.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from types import FrameType
from typing import Any

from ktriage.analyze.occupancy import Occupancy, compute_occupancy
from ktriage.analyze.ptxas_log import parse_ptxas_log
from ktriage.errors import KtriageError
from ktriage.toolchain.ptxas import assemble, gpu_name_for

# Resident warps per SM beyond which a streaming kernel's memory latency is hidden (Little's law on
# Hopper: ~600 ns x ~4.8 TB/s / 132 SMs is ~22 KB in flight per SM, ~16 warps with a few 512 B loads).
DEFAULT_SATURATION_WARPS = 16
# Spilled bytes per thread that cost about as much as the whole kernel (a crude scale, see estimate()).
SPILL_COST_BYTES = 1024


@dataclass(frozen=True)
class TensorArg:
    """A tensor argument described without torch (CPU screening, tests): the JIT only reads its
    dtype and whether its data pointer is a multiple of 16."""

    dtype: str
    aligned: bool = True

    def data_ptr(self) -> int:
        return 0 if self.aligned else 8


@dataclass(frozen=True)
class Screened:
    """One candidate config after compile-side screening: what ptxas and the occupancy rules say."""

    config: Any
    label: str
    kept: bool
    reason: str
    registers: int | None = None
    spill_store_bytes: int | None = None
    spill_load_bytes: int | None = None
    stack_bytes: int | None = None
    shared_bytes: int | None = None
    occupancy: Occupancy | None = None
    estimate: float | None = None
    error: str | None = None
    rank: int | None = None  # 1 = best by the estimate among the screened configs

    def to_json(self) -> dict[str, Any]:
        return {
            "config": self.label,
            "kept": self.kept,
            "reason": self.reason,
            "registers": self.registers,
            "spill_store_bytes": self.spill_store_bytes,
            "spill_load_bytes": self.spill_load_bytes,
            "stack_bytes": self.stack_bytes,
            "shared_bytes": self.shared_bytes,
            "occupancy": None if self.occupancy is None else self.occupancy.to_json(),
            "estimate": self.estimate,
            "error": self.error,
            "rank": self.rank,
        }


# --------------------------------------------------------------------------- Triton plumbing


def _triton_version() -> tuple[int, int]:
    import triton  # type: ignore[import-not-found]

    major, minor = triton.__version__.split(".")[:2]
    return int(major), int(minor)


def resolve_target(target: Any = None) -> Any:
    """A ``GPUTarget`` from ``None`` (the active driver's device), ``"sm_90"``/``"sm_90a"``, ``90`` or a
    GPUTarget. An explicit target is what makes screening work on a machine without a GPU."""
    from triton.backends.compiler import GPUTarget  # type: ignore[import-not-found]

    if target is None:
        try:
            from triton.runtime import driver  # type: ignore[import-not-found]

            return driver.active.get_current_target()
        except Exception as exc:  # noqa: BLE001 - no GPU / no driver: say how to screen anyway
            raise KtriageError(
                f"no active GPU driver to take the compile target from ({type(exc).__name__}: {exc})",
                "pass target='sm_90' (or the GPU's compute capability) to ktriage_prune()",
            ) from None
    if isinstance(target, GPUTarget):
        return target
    if isinstance(target, int):
        return GPUTarget("cuda", target, 32)
    if isinstance(target, str) and target.startswith("sm_"):
        return GPUTarget("cuda", int(target[3:].rstrip("af")), 32)
    raise KtriageError(f"unknown compile target {target!r}", "pass 'sm_90', 90 or a triton GPUTarget")


def _unwrap(kernel: Any) -> tuple[Any, list[Any]]:
    """The JITFunction under autotune/heuristics wrappers, and the Heuristics layers met on the way
    (their values are computed at launch, after the autotuner picked a config)."""
    from triton.runtime.jit import JITFunction  # type: ignore[import-not-found]

    layers: list[Any] = []
    fn = kernel
    while not isinstance(fn, JITFunction):
        if hasattr(fn, "values") and hasattr(fn, "fn") and not hasattr(fn, "configs"):
            layers.append(fn)
        inner = getattr(fn, "fn", None)
        if inner is None:
            raise KtriageError(f"{kernel!r} is not a @triton.jit function", "bind the prune hook to a @triton.jit kernel")
        fn = inner
    return fn, layers


def _ptxas_path(cc: int) -> str:
    """The ptxas the installed Triton assembles with (knobs in 3.4+, _path_to_binary in 3.3)."""
    try:
        from triton import knobs  # type: ignore[import-not-found]

        return str(knobs.nvidia.ptxas.path)
    except (ImportError, AttributeError):
        from triton.backends.nvidia import compiler as nv  # type: ignore[import-not-found]

        return str(nv.get_ptxas(cc)[0])


def _config_label(config: Any) -> str:
    parts = [f"{k}={v}" for k, v in getattr(config, "kwargs", {}).items()]
    parts += [f"num_warps={config.num_warps}", f"num_stages={config.num_stages}"]
    if getattr(config, "maxnreg", None):
        parts.append(f"maxnreg={config.maxnreg}")
    return ", ".join(parts)


def compile_without_launch(jit_fn: Any, args: Mapping[str, Any], target: Any) -> Any:
    """Compile ``jit_fn`` for the launch ``args`` (parameters + meta-parameters + options by name)
    as the JIT would, for ``target``, without a launch. Returns Triton's CompiledKernel.

    The JIT's own binder (``create_function_from_signature`` with the target's backend) decides the
    specialization, so the kernel is the one the JIT builds and Triton's cache is shared with it.
    """
    import triton  # type: ignore[import-not-found]
    from triton.compiler import ASTSource, make_backend  # type: ignore[import-not-found]
    from triton.runtime.jit import create_function_from_signature  # type: ignore[import-not-found]

    backend = make_backend(target)
    binder = create_function_from_signature(jit_fn.signature, jit_fn.params, backend)
    kwargs = dict(args)
    kwargs.setdefault("debug", getattr(jit_fn, "debug", None) or False)
    bound_args, specialization, _options = binder(**kwargs)
    options = backend.parse_options(kwargs)
    names = [p.name for p in jit_fn.params]
    sigvals = [s[0] for s in specialization]
    signature = dict(zip(names, sigvals))
    values = list(bound_args.values())
    constexprs = {(i,): values[i] for i, ty in enumerate(sigvals) if ty == "constexpr"}
    attrs = {(i,): backend.parse_attr(s[1]) for i, s in enumerate(specialization) if isinstance(s[1], str)}
    src = ASTSource(jit_fn, signature, constexprs, attrs)
    return triton.compile(src, target=target, options=options.__dict__)


@dataclass(frozen=True)
class CompileFacts:
    """Registers, spills, stack and shared memory of one compiled kernel (from ptxas -v)."""

    registers: int
    spill_store_bytes: int
    spill_load_bytes: int
    stack_bytes: int
    shared_bytes: int
    barriers: int
    num_warps: int


def compile_facts(kernel: Any, cc: int) -> CompileFacts:
    """Re-run the installed Triton's ptxas with ``-v`` on the kernel's PTX (Triton discards that log
    on success) and read the function's resources; shared memory is Triton's ``metadata.shared``."""
    md = kernel.metadata
    options = tuple(o for o in (getattr(md, "ptx_options", None) or "").split(" ") if o)
    result = assemble(kernel.asm["ptx"], Path(_ptxas_path(cc)), gpu_name_for(cc), options,
                      fmad=bool(getattr(md, "enable_fp_fusion", True)))
    info = parse_ptxas_log(result.log).function(md.name)
    return CompileFacts(
        registers=info.registers or 0,
        spill_store_bytes=info.spill_store_bytes or 0,
        spill_load_bytes=info.spill_load_bytes or 0,
        stack_bytes=info.stack_frame_bytes or 0,
        shared_bytes=int(md.shared or 0),
        barriers=info.barriers if info.barriers is not None else 1,
        num_warps=int(md.num_warps),
    )


def estimate(occupancy: Occupancy, spill_bytes: int, saturation_warps: int = DEFAULT_SATURATION_WARPS) -> float:
    """Relative time (lower is better) of a roofline-style model: a kernel reaches its roof (memory
    bandwidth or issue rate) once ``saturation_warps`` warps per SM hide latency, runs proportionally
    slower below that, and pays for each spilled byte per thread as extra local-memory traffic.
    Crude on purpose: it orders candidates for timing; it does not predict milliseconds (tile-size
    effects such as wave quantization and data reuse are not in it, so keep > 1 config)."""
    if occupancy.warps_per_sm <= 0:
        return float("inf")
    latency_hiding = min(1.0, occupancy.warps_per_sm / saturation_warps)
    return round((1.0 + spill_bytes / SPILL_COST_BYTES) / latency_hiding, 6)


# --------------------------------------------------------------------------- the hook


class SpillAwarePrune:
    """``early_config_prune`` callable: ``(configs, named_args, **kwargs) -> configs``.

    ``max_spill_bytes``: spill-store bytes per thread a config may have and still be timed.
    ``keep``: how many configs survive (the best by the estimate). ``target``: compile target
    (None: the active GPU). ``kernel``: the @triton.jit function (None: found from the calling
    Autotuner, or set later with :meth:`bind`).
    """

    def __init__(self, max_spill_bytes: int = 0, keep: int = 3, *, target: Any = None, kernel: Any = None,
                 saturation_warps: int = DEFAULT_SATURATION_WARPS, verbose: bool = False) -> None:
        if max_spill_bytes < 0 or keep < 1:
            raise KtriageError(f"max_spill_bytes={max_spill_bytes}, keep={keep}",
                               "use max_spill_bytes >= 0 and keep >= 1")
        self.max_spill_bytes = max_spill_bytes
        self.keep = keep
        self.target = target
        self.kernel = kernel
        self.saturation_warps = saturation_warps
        self.verbose = verbose
        self.last_report: list[Screened] = []
        self._facts: dict[tuple[str, str], CompileFacts] = {}

    def bind(self, kernel: Any) -> SpillAwarePrune:
        """Say which kernel the configs belong to (needed when the hook is not called by an Autotuner)."""
        self.kernel = kernel
        return self

    def _kernel_from_caller(self) -> Any:
        # Triton's Autotuner.prune_configs(self, kwargs) calls us; its `self.fn` is the wrapped kernel.
        frame: FrameType | None = sys._getframe(2)
        for _ in range(4):
            if frame is None:
                break
            owner = frame.f_locals.get("self")
            if owner is not None and hasattr(owner, "configs") and hasattr(owner, "fn"):
                return owner.fn
            frame = frame.f_back
        raise KtriageError(
            "the spill-aware prune hook was called outside triton.autotune and no kernel is bound",
            "call ktriage_prune(kernel=...) or .bind(kernel) before calling the hook directly",
        )

    def __call__(self, configs: Sequence[Any], named_args: Mapping[str, Any], **kwargs: Any) -> list[Any]:
        kernel = self.kernel if self.kernel is not None else self._kernel_from_caller()
        report = self.screen(kernel, configs, named_args, **kwargs)
        self.last_report = report
        kept = [s.config for s in sorted(report, key=lambda s: s.rank or len(report) + 1) if s.kept]
        if self.verbose:
            for s in report:
                print(f"[ktriage prune] {'keep' if s.kept else 'drop'} {s.label}: {s.reason}", file=sys.stderr)
        return kept or list(configs)

    def screen(self, kernel: Any, configs: Sequence[Any], named_args: Mapping[str, Any], **kwargs: Any) -> list[Screened]:
        """Compile and rank every config; returns one :class:`Screened` per config, in input order."""
        jit_fn, heuristics = _unwrap(kernel)
        target = resolve_target(self.target)
        cc = int(target.arch)
        screened: list[Screened] = []
        for config in configs:
            screened.append(self._screen_one(jit_fn, heuristics, config, named_args, kwargs, target, cc))
        return self._rank(screened)

    def _screen_one(self, jit_fn: Any, heuristics: list[Any], config: Any, named_args: Mapping[str, Any],
                    kwargs: Mapping[str, Any], target: Any, cc: int) -> Screened:
        label = _config_label(config)
        args = {**named_args, **kwargs, **config.all_kwargs()}
        for layer in reversed(heuristics):
            for name, rule in layer.values.items():
                args[name] = rule(args)
        args = {k: v for k, v in args.items() if k != "ir_override" or v is not None}
        try:
            compiled = compile_without_launch(jit_fn, args, target)
            key = (str(compiled.metadata.hash), str(cc))
            facts = self._facts.get(key)
            if facts is None:
                facts = self._facts[key] = compile_facts(compiled, cc)
            occ = compute_occupancy(cc, facts.registers, facts.num_warps, facts.shared_bytes, barriers=facts.barriers)
        except Exception as exc:  # noqa: BLE001 - never break the user's autotuning over a screening failure
            message = exc.problem if isinstance(exc, KtriageError) else f"{type(exc).__name__}: {exc}"
            return Screened(config, label, True, "not screened (kept): " + message.splitlines()[0], error=message)
        spills = facts.spill_store_bytes
        row = Screened(config, label, True, f"{facts.registers} regs, spill {spills} B, {occ.describe()}",
                       registers=facts.registers, spill_store_bytes=spills, spill_load_bytes=facts.spill_load_bytes,
                       stack_bytes=facts.stack_bytes, shared_bytes=facts.shared_bytes, occupancy=occ)
        if occ.ctas_per_sm == 0:
            return replace(row, kept=False, reason=f"does not fit on an SM ({occ.limiter})")
        if spills > self.max_spill_bytes:
            return replace(row, kept=False, reason=f"spills {spills} B (stores) > {self.max_spill_bytes} B allowed")
        return replace(row, estimate=estimate(occ, spills + facts.spill_load_bytes, self.saturation_warps))

    def _rank(self, screened: list[Screened]) -> list[Screened]:
        """Keep the ``keep`` best screened configs (estimate, then more resident warps, then fewer
        registers, then the user's order); configs that could not be screened are kept after them if
        room is left. Rows come back in input order, each with its rank."""
        candidates = [i for i, s in enumerate(screened) if s.kept and s.estimate is not None]
        unscreened = [i for i, s in enumerate(screened) if s.kept and s.estimate is None]

        def key(i: int) -> tuple[float, int, int, int]:
            s = screened[i]
            warps = s.occupancy.warps_per_sm if s.occupancy is not None else 0
            return (s.estimate or 0.0, -warps, s.registers or 0, i)

        order = sorted(candidates, key=key) + unscreened
        winners = set(order[: self.keep])
        out: list[Screened] = []
        for i, s in enumerate(screened):
            rank = order.index(i) + 1 if i in order else None
            if s.kept and i not in winners:
                s = replace(s, kept=False, reason=f"ranked {rank} of {len(order)} by the estimate (keep={self.keep}): {s.reason}")
            out.append(replace(s, rank=rank))
        return out


def ktriage_prune(max_spill_bytes: int = 0, keep: int = 3, *, target: Any = None, kernel: Any = None,
                  saturation_warps: int = DEFAULT_SATURATION_WARPS, verbose: bool = False) -> dict[str, Any]:
    """The dict for ``triton.autotune(prune_configs_by=...)``: a :class:`SpillAwarePrune` as
    ``early_config_prune``. The hook object is also under the key ``"ktriage"`` for its reports
    (Triton ignores keys it does not know)."""
    hook = SpillAwarePrune(max_spill_bytes, keep, target=target, kernel=kernel,
                           saturation_warps=saturation_warps, verbose=verbose)
    return {"early_config_prune": hook, "ktriage": hook}


_DEFAULT_HOOK = SpillAwarePrune()


def spill_aware_prune(configs: Sequence[Any], named_args: Mapping[str, Any], **kwargs: Any) -> list[Any]:
    """``early_config_prune`` with the default settings (no spills allowed, keep 3, the active GPU)."""
    return _DEFAULT_HOOK(configs, named_args, **kwargs)


def autotune(configs: Sequence[Any], key: Sequence[str], *, max_spill_bytes: int = 0, keep: int = 3,
             target: Any = None, verbose: bool = False, **autotune_kwargs: Any) -> Callable[[Any], Any]:
    """Drop-in for ``triton.autotune`` with the spill-aware prune hook bound to the decorated kernel.
    Other keyword arguments go to ``triton.autotune`` unchanged (``prune_configs_by`` is ours)."""
    import triton  # type: ignore[import-not-found]

    if "prune_configs_by" in autotune_kwargs:
        raise KtriageError("prune_configs_by was passed to ktriage's autotune",
                           "use triton.autotune with prune_configs_by=ktriage_prune(...) to combine hooks")

    def decorate(fn: Any) -> Any:
        prune = ktriage_prune(max_spill_bytes, keep, target=target, kernel=fn, verbose=verbose)
        return triton.autotune(list(configs), list(key), prune_configs_by=prune, **autotune_kwargs)(fn)

    return decorate

