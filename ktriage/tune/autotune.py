"""A spill-aware ``prune_configs_by`` hook for ``triton.autotune`` (Triton 3.3+).

Why: ``triton.autotune`` times every config on the GPU, including configs that spill registers to
local memory and can never win, and Triton itself cannot tell spills from stack arrays (its
``n_spills`` is the local-memory size / 4, and only after a GPU load). This hook runs inside the
user's process, with the user's Triton: for each candidate config it builds the specialization the
JIT would build for the actual arguments (the JIT's own binder), compiles the kernel for the target
WITHOUT launching it (``triton.compile``; the result lands in Triton's cache, so the JIT reuses it),
re-runs the installed Triton's ptxas with ``-v`` on the PTX to read the true spill-store bytes,
computes the exact occupancy (ktriage.analyze.occupancy), drops configs that spill more than the
threshold, ranks the rest with a crude roofline-style estimate and keeps the best few. Estimates within
the cost model's interval of the best are ties, ordered as ``ktriage tune`` orders them
(:func:`ktriage.predict.configs.ties_first_by`): the first config of the user's list (the hook's start
config: an Autotuner has no other notion of a default) first, then the smallest change from it. Two estimates:
kernels whose PTX has tensor-core MMA instructions (tl.dot) are ranked by a tile model (arithmetic
intensity, pipelining, CTAs per SM, wave quantization of the grid), other kernels by latency hiding
(bytes or warps in flight per SM, and how many SMs the grid keeps busy); see :func:`mma_estimate` and
:func:`stream_estimate`.

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

import logging
import math
import os
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from types import FrameType
from typing import Any

from ktriage.analyze.occupancy import Occupancy, compute_occupancy
from ktriage.analyze.ptxas_log import parse_ptxas_log
from ktriage.arch import parse_arch
from ktriage.errors import KtriageError
from ktriage.insitu import ptxas_capture
from ktriage.predict.configs import (
    DEFAULT_SATURATION_BYTES,
    DEFAULT_SATURATION_WARPS,
    SPILL_COST_BYTES,
    MmaTile,
    change_from_default,
    dtype_bytes,
    mma_estimate,
    stream_estimate,
    tie_fraction,
    tie_tolerance,
    ties_first_by,
    tile_estimate,
    warps_estimate,
)
from ktriage.predict.model import Params, load_params
from ktriage.schema.jsontypes import JSONObject
from ktriage.wording import plural, plus_minus

# The estimates live in ktriage.predict.configs, the one model of `ktriage tune` and this hook; these
# names stay importable from here (the documented API).
estimate = warps_estimate
__all__ = [
    "DEFAULT_SATURATION_BYTES",
    "DEFAULT_SATURATION_WARPS",
    "SPILL_COST_BYTES",
    "CompileFacts",
    "MmaTile",
    "Screened",
    "SpillAwarePrune",
    "TensorArg",
    "autotune",
    "compile_facts",
    "compile_without_launch",
    "estimate",
    "grid_ctas",
    "ktriage_prune",
    "mma_estimate",
    "resolve_target",
    "spill_aware_prune",
    "stream_estimate",
    "warps_estimate",
]

# PTX spellings of tensor-core matrix multiplies (Ampere mma.sync, Hopper wgmma, Blackwell tcgen05).
_MMA_PTX = ("mma.sync.aligned", "wgmma.mma_async", "tcgen05.mma")
_LOG = logging.getLogger(__name__)


class _StderrHandler(logging.Handler):
    """Writes to ``sys.stderr`` as it is at each line (a redirected or captured stderr included)."""

    def emit(self, record: logging.LogRecord) -> None:
        sys.stderr.write(self.format(record) + "\n")


def _verbose_log() -> logging.Logger:
    """The hook's ``verbose`` lines go to this module's logger, never to print: a library does not write
    to the caller's streams on its own. ``verbose=True`` is the caller asking to see them, so when the
    logger has no handler (no logging configured) one stderr handler with the ``[ktriage prune]``
    prefix is added once."""
    if not _LOG.handlers:
        handler = _StderrHandler()
        handler.setFormatter(logging.Formatter("[ktriage prune] %(message)s"))
        _LOG.addHandler(handler)
        _LOG.setLevel(logging.INFO)
        _LOG.propagate = False
    return _LOG


@dataclass(frozen=True)
class TensorArg:
    """A tensor argument described without torch (CPU screening, tests): the JIT only reads its
    dtype and whether its data pointer is a multiple of 16."""

    dtype: str
    aligned: bool = True

    def data_ptr(self) -> int:
        return 0 if self.aligned else 8

    def element_size(self) -> int:
        """Bytes per element, like ``torch.Tensor.element_size`` (the estimates size tiles with it)."""
        return dtype_bytes(self.dtype)


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
    model: str | None = None  # "mma" (tile model) or "stream" (latency hiding), see estimate functions
    grid: int | None = None  # CTAs the launch has for this config, when known (grid function or M/N)
    detail: str | None = None  # the estimate's inputs in words
    tied: bool = False  # within the model's interval of the best estimate: ranked by change from the first config

    def to_json(self) -> JSONObject:
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
            "model": self.model,
            "grid": self.grid,
            "detail": self.detail,
            "tied": self.tied,
        }


# --------------------------------------------------------------------------- Triton plumbing


def _triton_version() -> tuple[int, int]:
    import triton

    major, minor = triton.__version__.split(".")[:2]
    return int(major), int(minor)


def resolve_target(target: Any = None) -> Any:
    """A ``GPUTarget`` from ``None`` (the active driver's device), ``"sm_90"``/``"sm_90a"``, ``90`` or a
    GPUTarget. An explicit target is what makes screening work on a machine without a GPU."""
    from triton.backends.compiler import GPUTarget

    if target is None:
        try:
            from triton.runtime import driver

            return driver.active.get_current_target()
        except Exception as exc:
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
    from triton.runtime.jit import JITFunction

    layers: list[Any] = []
    fn = kernel
    while not isinstance(fn, JITFunction):
        if hasattr(fn, "values") and hasattr(fn, "fn") and not hasattr(fn, "configs"):
            layers.append(fn)
        inner = getattr(fn, "fn", None)
        if inner is None:
            raise KtriageError(
                f"{kernel!r} is not a @triton.jit function", "bind the prune hook to a @triton.jit kernel"
            )
        fn = inner
    return fn, layers


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
    import triton
    from triton.compiler import ASTSource, make_backend
    from triton.runtime.jit import create_function_from_signature

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
    # Triton's own ptxas run is recorded (its binary and options for the arch, its -v log); it must
    # really run, so Triton's cache is bypassed for this compile (the result is written to it as usual).
    ptxas_capture.install()
    ptxas_capture.take()
    previous = os.environ.get("TRITON_ALWAYS_COMPILE")
    os.environ["TRITON_ALWAYS_COMPILE"] = "1"
    try:
        kernel = triton.compile(src, target=target, options=options.__dict__)
    finally:
        if previous is None:
            os.environ.pop("TRITON_ALWAYS_COMPILE", None)
        else:
            os.environ["TRITON_ALWAYS_COMPILE"] = previous
    runs = ptxas_capture.take()
    kernel._ktriage_ptxas_log = runs[-1].get("log", "") if runs else None
    return kernel


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
    """The function's resources from the ``-v`` log of the ptxas run Triton itself made for this
    kernel (recorded by compile_without_launch; Triton discards it), so the numbers are those of the
    cubin the JIT runs: its ptxas for the arch, its options. Shared memory is ``metadata.shared``."""
    md = kernel.metadata
    log = getattr(kernel, "_ktriage_ptxas_log", None)
    if log is None:
        raise KtriageError(
            f"no ptxas log was recorded for {md.name}",
            "compile the kernel with ktriage.tune.autotune.compile_without_launch",
        )
    info = parse_ptxas_log(log).function(md.name)
    return CompileFacts(
        registers=info.registers or 0,
        spill_store_bytes=info.spill_store_bytes or 0,
        spill_load_bytes=info.spill_load_bytes or 0,
        stack_bytes=info.stack_frame_bytes or 0,
        shared_bytes=int(md.shared or 0),
        barriers=info.barriers if info.barriers is not None else 1,
        num_warps=int(md.num_warps),
    )


def _elt_bytes(named_args: Mapping[str, Any]) -> int:
    """Element size of the first tensor argument (the estimates size tiles with it)."""
    for value in named_args.values():
        size = getattr(value, "element_size", None)
        if callable(size) and hasattr(value, "data_ptr"):
            try:
                return int(size())
            except Exception:
                return 4
    return 4


def grid_ctas(grid: Any, args: Mapping[str, Any]) -> int | None:
    """CTAs of a launch from the ``grid`` the Autotuner received (a callable of the meta-parameters,
    as the JIT calls it, or a tuple/int); None when there is none or it cannot be evaluated."""
    if grid is None:
        return None
    try:
        value = grid(dict(args)) if callable(grid) else grid
        dims = (value,) if isinstance(value, int) else tuple(value)
        return int(math.prod(int(d) for d in dims)) if dims else None
    except Exception:
        return None


@dataclass(frozen=True)
class _Knobs:
    """A ``triton.Config`` as :func:`~ktriage.predict.configs.change_from_default` reads a config: its
    warps, stages and integer meta-parameters (the block sizes)."""

    num_warps: int
    num_stages: int
    blocks: Mapping[str, int]

    @classmethod
    def of(cls, config: Any) -> _Knobs:
        kwargs = getattr(config, "kwargs", None) or {}
        blocks = {k: v for k, v in kwargs.items() if isinstance(v, int) and not isinstance(v, bool)}
        warps, stages = getattr(config, "num_warps", 0), getattr(config, "num_stages", 0)
        return cls(int(warps or 0), int(stages or 0), blocks)


def _is_mma(compiled: Any) -> bool:
    ptx = (getattr(compiled, "asm", None) or {}).get("ptx", "")
    return isinstance(ptx, str) and any(op in ptx for op in _MMA_PTX)


# --------------------------------------------------------------------------- the hook


class SpillAwarePrune:
    """``early_config_prune`` callable: ``(configs, named_args, **kwargs) -> configs``.

    ``max_spill_bytes``: spill-store bytes per thread a config may have and still be timed.
    ``keep``: how many configs survive (the best by the estimate). ``target``: compile target
    (None: the active GPU). ``kernel``: the @triton.jit function (None: found from the calling
    Autotuner, or set later with :meth:`bind`). ``num_sms``: SMs for the grid terms of the
    estimates (None: the active GPU's count, or the arch's usual part when screening for a target).
    ``model``: the cost model whose interval says which estimates are ties (a file written by
    ``ktriage calibrate -o FILE``, or its :class:`~ktriage.predict.model.Params`; None: ``$KTRIAGE_MODEL``,
    else the shipped fit, read when the hook ranks). Tied configs rank as ``ktriage tune`` ranks them: the
    first config of the list first, then the smallest change from it; the estimates themselves are the
    hook's own (the tile model, latency hiding), which the model's parameters do not change.
    """

    def __init__(
        self,
        max_spill_bytes: int = 0,
        keep: int = 3,
        *,
        target: Any = None,
        kernel: Any = None,
        saturation_warps: int = DEFAULT_SATURATION_WARPS,
        verbose: bool = False,
        num_sms: int | None = None,
        model: str | Path | Params | None = None,
    ) -> None:
        if max_spill_bytes < 0:
            raise KtriageError(f"max_spill_bytes={max_spill_bytes} is negative", "use 0 (no spills) or a byte count")
        if keep < 1:
            raise KtriageError(f"keep={keep} keeps no config", "use keep >= 1, e.g. keep=3")
        for name, value in (("saturation_warps", saturation_warps), ("num_sms", num_sms)):
            if value is not None and value < 1:  # 0: a ZeroDivisionError out of triton.autotune (warps-only estimate)
                raise KtriageError(f"{name}={value} must be >= 1", f"leave {name} out for the default")
        self.max_spill_bytes = max_spill_bytes
        self.keep = keep
        # Read now, in every spelling --arch takes: an unknown target ('sm_91') reached Triton's LLVM at
        # tuning time, which aborted the whole process ("LLVM ERROR: Cannot select").
        self.target = target if target is None or hasattr(target, "arch") else parse_arch(target).cc
        self.kernel = kernel
        self.saturation_warps = saturation_warps
        self.verbose = verbose
        self.num_sms = num_sms
        # a file is read now: one that is no model is refused here, not at the first tuning (FormatError)
        self.params = model if model is None or isinstance(model, Params) else load_params(model)
        self.last_report: list[Screened] = []
        self._facts: dict[tuple[str, str], tuple[CompileFacts, bool]] = {}

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
                _verbose_log().info("%s %s: %s", "keep" if s.kept else "drop", s.label, s.reason)
        return kept or list(configs)

    def screen(
        self, kernel: Any, configs: Sequence[Any], named_args: Mapping[str, Any], **kwargs: Any
    ) -> list[Screened]:
        """Compile and rank every config; returns one :class:`Screened` per config, in input order."""
        jit_fn, heuristics = _unwrap(kernel)
        target = resolve_target(self.target)
        cc = int(target.arch)
        num_sms = self._sm_count(cc)
        screened: list[Screened] = []
        for config in configs:
            screened.append(self._screen_one(jit_fn, heuristics, config, named_args, kwargs, target, cc, num_sms))
        return self._rank(screened)

    def _sm_count(self, cc: int) -> int:
        """SMs of the GPU being tuned: given, else the active device's, else the arch's usual part."""
        if self.num_sms:
            return self.num_sms
        if self.target is None:
            try:
                from triton.runtime import driver

                props = driver.active.utils.get_device_properties(driver.active.get_current_device())
                return int(props["multiprocessor_count"])
            except Exception as exc:
                if self.verbose:
                    _verbose_log().info("SM count from the arch table (%s)", type(exc).__name__)
        try:
            return parse_arch(cc).default_sm_count or 100
        except KtriageError:
            return 100

    def _screen_one(
        self,
        jit_fn: Any,
        heuristics: list[Any],
        config: Any,
        named_args: Mapping[str, Any],
        kwargs: Mapping[str, Any],
        target: Any,
        cc: int,
        num_sms: int,
    ) -> Screened:
        label = _config_label(config)
        launch = {k: v for k, v in kwargs.items() if k not in ("grid", "warmup")}
        args = {**named_args, **launch, **config.all_kwargs()}
        for layer in reversed(heuristics):
            for name, rule in layer.values.items():
                args[name] = rule(args)
        args = {k: v for k, v in args.items() if k != "ir_override" or v is not None}
        try:
            compiled = compile_without_launch(jit_fn, args, target)
            key = (str(compiled.metadata.hash), str(cc))
            cached = self._facts.get(key)
            if cached is None:
                cached = self._facts[key] = (compile_facts(compiled, cc), _is_mma(compiled))
            facts, mma = cached
            occ = compute_occupancy(cc, facts.registers, facts.num_warps, facts.shared_bytes, barriers=facts.barriers)
        except Exception as exc:
            message = exc.problem if isinstance(exc, KtriageError) else f"{type(exc).__name__}: {exc}"
            return Screened(config, label, True, "not screened (kept): " + message.splitlines()[0], error=message)
        spills = facts.spill_store_bytes
        row = Screened(
            config,
            label,
            True,
            f"{facts.registers} regs, spill {spills} B, {occ.describe()}",
            registers=facts.registers,
            spill_store_bytes=spills,
            spill_load_bytes=facts.spill_load_bytes,
            stack_bytes=facts.stack_bytes,
            shared_bytes=facts.shared_bytes,
            occupancy=occ,
        )
        if occ.ctas_per_sm == 0:
            return replace(row, kept=False, reason=f"does not fit on an SM ({occ.limiter})")
        if spills > self.max_spill_bytes:
            return replace(row, kept=False, reason=f"spills {spills} B (stores) > {self.max_spill_bytes} B allowed")
        value, model, grid, detail = self._estimate(
            occ, spills + facts.spill_load_bytes, mma, config, args, named_args, kwargs.get("grid"), cc, num_sms
        )
        return replace(row, estimate=value, model=model, grid=grid, detail=detail, reason=f"{row.reason}; {detail}")

    def _estimate(
        self,
        occ: Occupancy,
        spill_bytes: int,
        mma: bool,
        config: Any,
        args: Mapping[str, Any],
        named_args: Mapping[str, Any],
        grid_fn: Any,
        cc: int,
        num_sms: int,
    ) -> tuple[float, str, int | None, str]:
        """Pick the model: the tile model for tensor-core kernels whose config names BLOCK_M/N/K,
        latency hiding otherwise. The grid is the launch's own (the Autotuner passes ``grid``); for an
        MMA kernel without one it is inferred as cdiv(M, BLOCK_M) * cdiv(N, BLOCK_N) when the
        arguments are named M and N (said in the detail)."""
        meta = getattr(config, "kwargs", {})
        grid = grid_ctas(grid_fn, args)
        elt = _elt_bytes(named_args)
        if mma:
            tiled = tile_estimate(
                occ,
                meta,
                num_stages=int(getattr(config, "num_stages", 3) or 1),
                elt_bytes=elt,
                sizes=args,
                grid=grid,
                num_sms=num_sms,
                cc=cc,
                spill_bytes=spill_bytes,
            )
            if tiled is not None:
                return tiled[0], "mma", tiled[2], tiled[1]
        blocks = [v for k, v in meta.items() if "BLOCK" in k.upper() and isinstance(v, int) and v > 0]
        tile_bytes = math.prod(blocks) * elt if blocks else None
        value, detail = stream_estimate(
            occ, spill_bytes, num_sms=num_sms, grid=grid, tile_bytes=tile_bytes, saturation_warps=self.saturation_warps
        )
        return value, "stream", grid, detail

    def _rank(self, screened: list[Screened]) -> list[Screened]:
        """Keep the ``keep`` best screened configs (estimate, then more resident warps, then fewer
        registers, then the user's order), those tied with the best (within the model's interval,
        :func:`~ktriage.predict.configs.ties_first_by`) first by the smallest change from the first config
        given, as ``ktriage tune`` ranks; configs that could not be screened are kept after them if room is
        left. Rows come back in input order, each with its rank."""
        candidates = [i for i, s in enumerate(screened) if s.kept and s.estimate is not None]
        unscreened = [i for i, s in enumerate(screened) if s.kept and s.estimate is None]

        def key(i: int) -> tuple[float, int, int, int]:
            s = screened[i]
            warps = s.occupancy.warps_per_sm if s.occupancy is not None else 0
            if s.model == "mma" and s.occupancy is not None:  # the tile model counts CTAs/SM itself:
                warps = -s.occupancy.num_warps  # among its ties fewer warps win, as in ktriage tune
            return (s.estimate or 0.0, -warps, s.registers or 0, i)

        # the hook's start config is the first of the user's list: an Autotuner names no default
        start = _Knobs.of(screened[0].config) if screened else _Knobs(0, 0, {})
        ranked, n_tied = ties_first_by(
            sorted(candidates, key=key),
            lambda i: screened[i].estimate or 0.0,
            lambda i: (i != 0, change_from_default(_Knobs.of(screened[i].config), start), key(i)),
            tie_tolerance(self.params),
        )
        tied = set(ranked[:n_tied])
        tie = (
            f"; tied with {plural(n_tied - 1, 'other')} within the model's "
            f"{plus_minus(f'{tie_fraction(self.params):.1%}')}: the smaller change from the first config ranks first"
        )
        order = ranked + unscreened
        winners = set(order[: self.keep])
        out: list[Screened] = []
        for i, s in enumerate(screened):
            rank = order.index(i) + 1 if i in order else None
            if i in tied:
                s = replace(s, tied=True, reason=s.reason + tie)
            if s.kept and i not in winners:
                s = replace(
                    s,
                    kept=False,
                    reason=f"ranked {rank} of {len(order)}{'' if i in tied else ' by the estimate'} "
                    f"(keep={self.keep}): {s.reason}",
                )
            out.append(replace(s, rank=rank))
        return out


def ktriage_prune(
    max_spill_bytes: int = 0,
    keep: int = 3,
    *,
    target: Any = None,
    kernel: Any = None,
    saturation_warps: int = DEFAULT_SATURATION_WARPS,
    verbose: bool = False,
    num_sms: int | None = None,
    model: str | Path | Params | None = None,
) -> dict[str, Any]:
    """The dict for ``triton.autotune(prune_configs_by=...)``: a :class:`SpillAwarePrune` as
    ``early_config_prune``. The hook object is also under the key ``"ktriage"`` for its reports
    (Triton ignores keys it does not know). ``model``: the cost model whose interval decides ties
    (:class:`SpillAwarePrune`)."""
    hook = SpillAwarePrune(
        max_spill_bytes,
        keep,
        target=target,
        kernel=kernel,
        saturation_warps=saturation_warps,
        verbose=verbose,
        num_sms=num_sms,
        model=model,
    )
    return {"early_config_prune": hook, "ktriage": hook}


_DEFAULT_HOOK = SpillAwarePrune()


def spill_aware_prune(configs: Sequence[Any], named_args: Mapping[str, Any], **kwargs: Any) -> list[Any]:
    """``early_config_prune`` with the default settings (no spills allowed, keep 3, the active GPU)."""
    return _DEFAULT_HOOK(configs, named_args, **kwargs)


def autotune(
    configs: Sequence[Any],
    key: Sequence[str],
    *,
    max_spill_bytes: int = 0,
    keep: int = 3,
    target: Any = None,
    verbose: bool = False,
    model: str | Path | Params | None = None,
    **autotune_kwargs: Any,
) -> Callable[[Any], Any]:
    """Drop-in for ``triton.autotune`` with the spill-aware prune hook bound to the decorated kernel.
    Other keyword arguments go to ``triton.autotune`` unchanged (``prune_configs_by`` is ours).
    ``model``: the cost model whose interval decides ties (:class:`SpillAwarePrune`)."""
    import triton

    if "prune_configs_by" in autotune_kwargs:
        raise KtriageError(
            "prune_configs_by was passed to ktriage's autotune",
            "use triton.autotune with prune_configs_by=ktriage_prune(...) to combine hooks",
        )

    def decorate(fn: Any) -> Any:
        prune = ktriage_prune(max_spill_bytes, keep, target=target, kernel=fn, verbose=verbose, model=model)
        return triton.autotune(list(configs), list(key), prune_configs_by=prune, **autotune_kwargs)(fn)

    return decorate
