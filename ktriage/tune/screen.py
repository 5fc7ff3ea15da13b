"""Compile-only screening: every candidate config compiled on CPUs, spilling ones dropped, the rest
ranked by occupancy and the roofline-style estimate (ktriage/predict/configs.py), the best few kept.

Why screen before timing: a GPU second is scarce and a CPU compile is cheap and parallel; most
configs can be ruled out from their resources alone (a config that spills moves bytes through
local memory that a spill-free one does not; a config that fits fewer CTAs than the grid needs
pays extra waves). Spills are ptxas's spill STORE bytes, never the stack size: a kernel may keep a
local array on the stack without spilling (research notes §2.2), and Triton's ``n_spills`` (stack/4)
would wrongly drop it.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from ktriage.analyze.artifact import analyze_artifact
from ktriage.analyze.occupancy import Occupancy
from ktriage.analyze.resources import Resources
from ktriage.arch import parse_arch
from ktriage.compile.compiler import Artifact, CompileFailure, Compiler
from ktriage.errors import KtriageError, worded
from ktriage.predict.configs import (
    Estimate,
    change_from_default,
    dtype_bytes,
    estimate,
    is_mma_sass,
    tie_fraction,
    tie_tolerance,
    ties_first_by,
    tile_estimate,
)
from ktriage.predict.facts import spec_launch_inputs
from ktriage.predict.model import Params
from ktriage.schema.jsontypes import JSONObject
from ktriage.spec.model import KernelSpec
from ktriage.spec.sms import spec_sm_count
from ktriage.toolchain.manager import Toolchain
from ktriage.tune.space import ConfigSpace, TuneConfig
from ktriage.wording import plural, plus_minus


@dataclass
class ScreenedConfig:
    """One config after screening: its compiled facts, its estimate, and the verdict with a reason."""

    config: TuneConfig
    spec: KernelSpec
    artifact: Artifact | None = None
    resources: Resources | None = None
    occupancy: Occupancy | None = None
    estimate: Estimate | None = None
    status: str = "pending"  # kept | dropped | failed
    reason: str = ""
    rank: int | None = None
    is_default: bool = False
    tied: bool = False  # among the configs tied with the best (:func:`ties_first`): ranked by change, not estimate

    @property
    def spill_store_bytes(self) -> int | None:
        return None if self.resources is None else self.resources.spill_store_bytes

    def resources_summary(self) -> JSONObject | None:
        r = self.resources
        if r is None:
            return None
        return {
            "registers": r.registers,
            "spill_store_bytes": r.spill_store_bytes,
            "spill_load_bytes": r.spill_load_bytes,
            "stack_bytes": r.stack_bytes,
            "shared_bytes": r.shared_bytes,
            "local_loads": r.local_loads,
            "local_stores": r.local_stores,
            "sass_instructions": r.sass_instructions,
        }

    def to_json(self) -> JSONObject:
        occ = self.occupancy
        return {
            "config": self.config.to_json(),
            "label": self.config.label(),
            "default": self.is_default,
            "grid": list(self.spec.grid) if self.spec.grid else None,
            "status": self.status,
            "kept": self.status == "kept",
            "rank": self.rank,
            "tied": self.tied,
            "reason": self.reason,
            "resources": self.resources_summary(),
            "occupancy": None
            if occ is None
            else {
                "ctas_per_sm": occ.ctas_per_sm,
                "warps_per_sm": occ.warps_per_sm,
                "occupancy": round(occ.occupancy, 4),
                "limiter": occ.limiter,
            },
            "estimate": None if self.estimate is None else self.estimate.to_json(),
        }


@dataclass
class ScreenResult:
    """All candidates of one screening, default first; ``kept`` ranked best first."""

    space: ConfigSpace
    toolchain: Toolchain
    candidates: list[ScreenedConfig]
    max_spill_bytes: int
    top_k: int
    notes: list[str] = field(default_factory=list)
    # the cost model's parameters that priced the estimates and set the tie tolerance (None: load_params(),
    # i.e. $KTRIAGE_MODEL or the shipped fit); the report states the tolerance from them
    params: Params | None = None

    @property
    def default(self) -> ScreenedConfig:
        return next(c for c in self.candidates if c.is_default)

    @property
    def kept(self) -> list[ScreenedConfig]:
        return sorted((c for c in self.candidates if c.status == "kept"), key=lambda c: c.rank or 0)

    @property
    def recommended(self) -> ScreenedConfig | None:
        kept = self.kept
        return kept[0] if kept else None


def sort_key(c: ScreenedConfig, default_stages: int = 3) -> tuple[float, bool, float, float, int, int, int]:
    """Best first: the estimate, then the start config (it competes, and a tuned config must beat it
    by the model's own measure to be recommended), fewer spill bytes, higher occupancy, fewer warps,
    then the library's own num_stages (the smallest change among equals)."""
    assert c.estimate is not None and c.occupancy is not None
    # The tile model already counts the CTAs/SM it needs; among its ties more occupancy buys nothing
    # (32 warps on a 128x256 tile ties with 8), so fewer warps decide there.
    occupancy = 0.0 if c.estimate.model == "mma" else -c.occupancy.occupancy
    return (
        c.estimate.estimate_us,
        not c.is_default,
        float(c.spill_store_bytes or 0),
        occupancy,
        c.config.num_warps,
        int(c.config.num_stages != default_stages),
        c.config.num_stages,
    )


def ties_first(
    ranked: list[ScreenedConfig], default: TuneConfig | None, default_stages: int, params: Params | None = None
) -> tuple[list[ScreenedConfig], int]:
    """``ranked`` (best estimate first) with the configs tied with the best, within the interval of the
    model ``params`` (:func:`~ktriage.predict.configs.tie_tolerance`; None: ``$KTRIAGE_MODEL`` or the
    shipped fit), ordered by the smallest change from the library's config ``default`` (the library's own
    first, where it is viable), then the usual order: the rule of
    :func:`~ktriage.predict.configs.ties_first_by`, which the autotune hook applies too. The GPU's timing
    of the kept configs still decides. Also returns how many configs tie (0 when none do)."""
    if default is None:
        return ranked, 0
    return ties_first_by(
        ranked,
        lambda c: c.estimate.estimate_us,  # type: ignore[union-attr]
        lambda c: (not c.is_default, change_from_default(c.config, default), sort_key(c, default_stages)),
        tie_tolerance(params),
    )


def screen(
    space: ConfigSpace,
    toolchain: Toolchain,
    compiler: Compiler,
    *,
    top_k: int = 5,
    max_spill_bytes: int = 0,
    sm_count: int | None = None,
    configs: Sequence[TuneConfig] | None = None,
    on_done: Callable[[object], None] | None = None,
    staged: bool = True,
    params: Params | None = None,
) -> ScreenResult:
    """Compile every config of ``space`` (or ``configs``) with ``toolchain``, drop the ones whose
    spill store bytes exceed ``max_spill_bytes`` and rank the rest; the best ``top_k`` are kept.

    ``staged``: compile every warps x blocks combination at the default num_stages first, then the
    other num_stages only for the kept ones (most kernels have no pipelined loop, so stages change
    nothing and would multiply the compiles by 4). Configs whose cubin is byte-identical to a
    better-ranked one are dropped as duplicates: timing them would measure the same kernel twice.

    ``params``: the cost model that prices the estimates and says which are ties (``--model``; None:
    ``$KTRIAGE_MODEL``, else the shipped fit).
    """
    if top_k < 1:
        raise KtriageError(
            worded(lambda o: f"{o('top_k', '--top-k', top_k)} keeps nothing"),
            worded(lambda o: f"use {o('top_k', '--top-k', 1)} or more"),
        )
    if max_spill_bytes < 0:
        raise KtriageError(
            worded(lambda o: f"{o('max_spill_bytes', '--max-spill-bytes', max_spill_bytes)} is negative"),
            "use 0 (no spills) or a byte count",
        )
    if configs is not None:
        cfgs = list(configs)
    elif staged and not space.listed:  # a listed space (the autotuner's own configs) is searched as it is
        # num_stages only changes kernels with pipelined loops: vary it for the front-runners only, starting
        # from the default's num_stages, or the asked one nearest it (--stages 2 leaves the default's 3 out:
        # the first pass then held no config but the default, and nothing was searched)
        first = min(space.stages, key=lambda st: (abs(st - space.default.num_stages), st))
        cfgs = [c for c in space.configs() if c.num_stages == first]
    else:
        cfgs = space.configs()
    if space.default not in cfgs:
        cfgs.insert(0, space.default)
    cands = [ScreenedConfig(cfg, space.apply(cfg), is_default=cfg == space.default) for cfg in cfgs]
    _compile_and_analyze(cands, toolchain, compiler, sm_count, on_done, params)
    _judge(cands, max_spill_bytes, top_k, params)
    if staged and configs is None and not space.listed and len(space.stages) > 1:
        seen = {c.config for c in cands}
        extra = [
            ScreenedConfig(cfg, space.apply(cfg))
            for front in [c for c in cands if c.status == "kept"]
            for cfg in (TuneConfig(front.config.num_warps, st, front.config.constexprs) for st in space.stages)
            if cfg not in seen
        ]
        _compile_and_analyze(extra, toolchain, compiler, sm_count, on_done, params)
        cands += extra
        _judge(cands, max_spill_bytes, top_k, params)
    result = ScreenResult(space, toolchain, cands, max_spill_bytes, top_k, list(space.notes), params=params)
    fixed = fixed_trips_note(cands)
    if fixed:
        result.notes.append(fixed)
    if not result.kept:
        result.notes.append(
            worded(
                lambda o: (
                    f"no config stays within {max_spill_bytes} spill store bytes: raise "
                    f"{o('max_spill_bytes', '--max-spill-bytes')} or widen the space"
                )
            )
        )
    return result


def _compile_and_analyze(
    cands: list[ScreenedConfig],
    toolchain: Toolchain,
    compiler: Compiler,
    sm_count: int | None,
    on_done: Callable[[object], None] | None,
    params: Params | None = None,
) -> None:
    outcomes = compiler.compile_many([c.spec for c in cands], [toolchain], on_done=on_done)
    for cand, outcome in zip(cands, outcomes, strict=True):
        if isinstance(outcome, CompileFailure):
            first = outcome.message.strip().splitlines()[0] if outcome.message.strip() else outcome.kind
            cand.status, cand.reason = "failed", f"did not compile ({outcome.stage}: {first[:160]})"
            continue
        cand.artifact = outcome
        try:
            cand.resources, cand.occupancy = analyze_artifact(outcome)
        except KtriageError as exc:
            cand.status, cand.reason = "failed", f"could not be analyzed: {exc.problem}"
            continue
        sms = spec_sm_count(cand.spec, sm_count)  # --sm-count, else the spec's own (a recording's GPU), else the part's
        cand.estimate = estimate(cand.resources, cand.occupancy, cand.spec, sm_count=sms, params=params)
        if is_mma_sass(cand.resources.sass_opcodes):
            cand.estimate = mma_candidate_estimate(cand.spec, cand.resources, cand.occupancy, cand.estimate, sms)


def fixed_trips_note(cands: Sequence[ScreenedConfig]) -> str | None:
    """What the ranking cannot tell where the cost model priced configs that differ in a block size with its
    fitted main-loop trip count (``Estimate.fixed_trips``: the spec names no tensor shapes, or no grid): a
    block that sets the loop's step then looks like proportionally less data rather than more iterations,
    so its rank (a smaller BLOCK first) has no basis, and the report must say so rather than recommend it
    silently. None where every such config was priced from the launch's data, or none differ in a block."""
    fixed = [c for c in cands if c.estimate is not None and c.estimate.model == "cost model" and c.estimate.fixed_trips]
    names = sorted({n for c in fixed for n in c.config.blocks if len({x.config.blocks.get(n) for x in fixed}) > 1})
    if not names:
        return None
    spec = fixed[0].spec
    missing = [
        what
        for what, gone in (
            ("no tensor shapes", spec_launch_inputs(spec).data_bytes is None),
            ("no grid", spec.grid is None),
        )
        if gone
    ]
    return worded(
        lambda o: (
            f"the estimates assume a fixed main-loop trip count ({spec.name} names "
            f"{' and '.join(missing) or 'no data size'}), so they cannot rank {', '.join(names)} where it changes the "
            "loop's step: a smaller block looks like less data, not more iterations. Give every tensor argument its shape "
            '(x_ptr = { dtype = "fp16", shape = [4096, 8192] }, docs/specs.md) and the launch its grid, '
            f"or time the configs on a GPU (drop {o('compile_only', '--compile-only', True)})"
        )
    )


def mma_candidate_estimate(
    spec: KernelSpec, res: Resources, occ: Occupancy, roofline: Estimate, sm_count: int | None
) -> Estimate:
    """A tensor-core kernel's estimate from the tile model (ktriage.predict.configs.tile_estimate, the one
    the autotune hook uses), in us at the SM clock; the roofline estimate when the config names no
    BLOCK_M/N/K. The grid is the spec's, which the config space derived from the block sizes."""
    arch = parse_arch(spec.target)
    sms = sm_count or arch.default_sm_count or 1
    pointers = [t for t in spec.signature.values() if t.startswith("*")]
    elt = dtype_bytes(pointers[0]) if pointers else 4
    sizes = dict(spec.meta.get("shape") or {})
    grid = math.prod(spec.grid) if spec.grid else None
    tiled = tile_estimate(
        occ,
        spec.constexprs,
        num_stages=spec.num_stages,
        elt_bytes=elt,
        sizes=sizes,
        grid=grid,
        num_sms=sms,
        cc=arch.major * 10 + arch.minor,
        spill_bytes=(res.spill_store_bytes or 0) + (res.spill_load_bytes or 0),
    )
    if tiled is None:
        return roofline
    cycles, detail, tiles = tiled
    clock = arch.throughput.sm_clock_hz
    ctas = max(1, min(occ.ctas_per_sm, math.ceil((tiles or 1) / sms)))
    waves = math.ceil((tiles or ctas * sms) / (ctas * sms)) if occ.ctas_per_sm else 0
    us = cycles / clock * 1e6
    return Estimate(
        tiles or roofline.grid_ctas,
        waves,
        ctas,
        roofline.bytes_per_cta,
        roofline.spill_bytes_per_cta,
        roofline.memory_efficiency,
        roofline.memory_us,
        roofline.compute_us,
        us,
        model="mma",
        detail=detail,
    )


def _cubin_sha(c: ScreenedConfig) -> str | None:
    if c.artifact is None:
        return None
    import hashlib

    return hashlib.sha256(c.artifact.cubin.cubin_path.read_bytes()).hexdigest()


def _judge(cands: list[ScreenedConfig], max_spill: int, top_k: int, params: Params | None = None) -> None:
    viable: list[ScreenedConfig] = []
    for c in cands:
        if c.status == "failed":
            continue
        c.rank, c.tied = None, False
        assert c.resources is not None and c.occupancy is not None and c.estimate is not None
        spill = c.resources.spill_store_bytes
        if spill is None:
            c.status, c.reason = "dropped", "spill bytes unknown (no ptxas log), so it cannot be screened"
        elif spill > max_spill:
            c.status = "dropped"
            c.reason = (
                f"spills {spill} B per thread (ptxas spill stores) at {c.resources.registers} registers, "
                f"over the {max_spill} B limit"
            )
        elif c.occupancy.ctas_per_sm == 0:
            c.status, c.reason = (
                "dropped",
                f"cannot launch: {c.occupancy.limiter.replace('_', ' ')} allow 0 CTAs per SM",
            )
        else:
            viable.append(c)
    default_stages = next((c.config.num_stages for c in cands if c.is_default), 3)
    viable.sort(key=lambda c: sort_key(c, default_stages))
    unique: list[ScreenedConfig] = []
    first_of: dict[str | None, ScreenedConfig] = {}
    for c in viable:
        sha = _cubin_sha(c)
        twin = first_of.get(sha) if sha is not None else None
        if twin is not None:
            c.status, c.reason = "dropped", f"same cubin as {twin.config.label()} (num_stages changes nothing here)"
            continue
        first_of[sha] = c
        unique.append(c)
    default = next((c.config for c in cands if c.is_default), None)
    viable, n_tied = ties_first(unique, default, default_stages, params)
    tie = (
        f"; tied with {plural(n_tied - 1, 'other')} within the model's {plus_minus(f'{tie_fraction(params):.1%}')}: "
        "the smaller change from the library's config ranks first"
        if n_tied
        else ""
    )
    best = viable[0].estimate.estimate_us if viable else math.inf  # type: ignore[union-attr]
    for i, c in enumerate(viable):
        assert c.occupancy is not None and c.estimate is not None and c.resources is not None
        facts = (
            f"{c.resources.registers} registers, {c.resources.spill_store_bytes or 0} B spills, "
            f"{plural(c.occupancy.ctas_per_sm, 'CTA')}/SM ({c.occupancy.occupancy:.0%}, {c.occupancy.limiter}), "
            f"{plural(c.estimate.waves, 'wave')}, estimate {c.estimate.estimate_us:.1f} us"
            + (f" ({c.estimate.detail})" if c.estimate.detail else "")
        )
        c.rank, c.tied = i + 1, i < n_tied
        facts += tie if c.tied else ""
        if i < top_k:
            c.status = "kept"
            c.reason = f"rank {i + 1}: {facts}"
        else:
            c.status = "dropped"
            slower = c.estimate.estimate_us / best if best and best != math.inf else math.inf
            c.reason = f"rank {i + 1}, outside the top {top_k}: {facts} ({slower:.2f}x the best estimate)"
