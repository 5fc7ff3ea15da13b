"""RBLOCK/XBLOCK scaling: inductor's rule as it is, and ktriage's generalization with exact rules.

Inductor (``CachingAutotuner._dynamic_scale_rblock``, research notes §1.1) halves the largest
``R*_BLOCK`` of a reduction config when ``65536 // (n_regs * 32 * num_warps)`` CTAs per SM times the
SM count hold fewer CTAs than the grid has, and separately skips configs whose ``n_spills`` (the
driver's local-memory size / 4, i.e. stack bytes / 4) exceeds 16 (§1.3). Two approximations:

- the bound ignores the register allocation unit (256 registers per warp), the per-sub-partition
  split of the register file (whole warps per quarter of the SM), and the warp/CTA caps per SM, so
  it over-counts CTAs when ``n_regs`` is not a multiple of 8 (§1.5) or the per-SM CTA cap binds;
- ``n_spills`` counts the stack frame: a local array that does not spill counts as 150 "spills".

ktriage's rule (:func:`exact_rule` for the decision, :func:`scale_blocks` to act on it) uses the
exact occupancy of ktriage.analyze.occupancy and ptxas's spill store bytes, considers shared memory
as a limiter too, and proposes the next smaller reduction block and/or twice the warps, compiles
each proposal and keeps it only if it removes spills or raises occupancy. Each step is explained
in one sentence.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Generic, Protocol, TypeVar

from ktriage.analyze.occupancy import Occupancy
from ktriage.arch import parse_arch
from ktriage.compile.compiler import Compiler
from ktriage.schema.jsontypes import JSONObject
from ktriage.spec.model import KernelSpec
from ktriage.spec.sms import spec_sm_count
from ktriage.toolchain.manager import Toolchain
from ktriage.tune.space import ConfigSpace, TuneConfig, config_space
from ktriage.wording import plural

INDUCTOR_SPILL_THRESHOLD = 16  # torch/_inductor/config.py triton.spill_threshold (CUDA)
INDUCTOR_MIN_RBLOCK_PRODUCT = 64  # configs with prod(R*_BLOCK) <= 64 are never scaled


# ----------------------------------------------------------------------------------- inductor
@dataclass(frozen=True)
class InductorDecision:
    """What ``_dynamic_scale_rblock`` does with one compiled config."""

    scale: bool
    new_rblocks: dict[str, int]
    max_blocks_per_sm: int | None
    total_block: int
    reason: str


def inductor_rule(
    *,
    n_regs: int | None,
    num_warps: int,
    xnumel: int,
    xblock: int,
    rblocks: Mapping[str, int],
    sm_count: int,
    regs_per_sm: int = 65536,
    max_threads_per_sm: int = 2048,
    warp_size: int = 32,
) -> InductorDecision:
    """Inductor's decision for one config (its gate on the config, in its order).

    ``xnumel`` is ``size_hints["x"]``, ``rblocks`` the config's ``R*_BLOCK`` kwargs. Halves the
    largest R block when the register bound says the grid does not fit in one wave.
    """
    total = math.ceil(xnumel / xblock)
    same = dict(rblocks)
    if n_regs is None:
        return InductorDecision(False, same, None, total, "n_regs unknown (kernel not loaded): skipped")
    if math.prod(rblocks.values()) <= INDUCTOR_MIN_RBLOCK_PRODUCT:
        return InductorDecision(
            False, same, None, total, f"prod(R blocks) = {math.prod(rblocks.values())} <= 64: skipped"
        )
    if n_regs <= regs_per_sm // max_threads_per_sm:
        return InductorDecision(
            False,
            same,
            None,
            total,
            f"{n_regs} registers <= {regs_per_sm // max_threads_per_sm}: registers cannot limit occupancy",
        )
    per_block = n_regs * warp_size * num_warps
    max_blocks = max(regs_per_sm // per_block, 1)
    if total <= max_blocks * sm_count:
        return InductorDecision(
            False,
            same,
            max_blocks,
            total,
            f"{total} CTAs fit in {max_blocks} x {sm_count} SMs: no need to improve occupancy",
        )
    largest = max(rblocks, key=lambda k: rblocks[k])
    new = dict(rblocks)
    new[largest] //= 2
    return InductorDecision(
        True,
        new,
        max_blocks,
        total,
        f"{total} CTAs > {max_blocks} x {sm_count} SMs by 65536 // ({n_regs} * 32 * {num_warps}): "
        f"{largest} {rblocks[largest]} -> {new[largest]}",
    )


def inductor_skips_for_spills(stack_bytes: int, threshold: int = INDUCTOR_SPILL_THRESHOLD) -> bool:
    """Inductor's benchmark-time filter: ``n_spills = LOCAL_SIZE_BYTES // 4 > threshold``."""
    return stack_bytes // 4 > threshold


# ----------------------------------------------------------------------------------- exact rule
@dataclass(frozen=True)
class ExactDecision:
    """ktriage's decision from the exact occupancy: scale, and why, in one sentence."""

    scale: bool
    ctas_per_sm: int
    ctas_needed: int
    limiter: str
    spills: bool
    reason: str


def ctas_needed_per_sm(grid_ctas: int, sm_count: int) -> int:
    """CTAs one SM must hold for the grid to run in a single wave."""
    return math.ceil(grid_ctas / sm_count)


def exact_rule(
    occ: Occupancy, *, grid_ctas: int, sm_count: int, spill_store_bytes: int | None, max_spill_bytes: int = 0
) -> ExactDecision:
    """Scale when the kernel spills beyond ``max_spill_bytes``, or when registers or shared memory
    (not the hardware warp/CTA caps, which smaller blocks cannot lift) cap CTAs/SM below the grid's need."""
    need = ctas_needed_per_sm(grid_ctas, sm_count)
    spills = (spill_store_bytes or 0) > max_spill_bytes
    capped = occ.ctas_per_sm < need and occ.limiter in ("registers", "shared_memory")
    lim = occ.limiter.replace("_", " ")
    if spills:
        why = f"it spills {spill_store_bytes} B per thread at {occ.registers} registers"
    elif capped:
        why = (
            f"{lim} cap it at {plural(occ.ctas_per_sm, 'CTA')}/SM while the grid of {plural(grid_ctas, 'CTA')} on {plural(sm_count, 'SM')} "
            f"needs {need}"
        )
    else:
        why = (
            f"no spills and {plural(occ.ctas_per_sm, 'CTA')}/SM ({lim}) for a grid needing {need}: nothing to gain "
            "from smaller blocks"
        )
    return ExactDecision(spills or capped, occ.ctas_per_sm, need, occ.limiter, spills, why)


# ----------------------------------------------------------------------------------- acting on it
class ScaleConfig(Protocol):
    """What the scaling loop needs of a config: its warps, a label and JSON (TuneConfig, or a
    benchmark's own (XBLOCK, RBLOCK, warps) triple)."""

    @property
    def num_warps(self) -> int: ...

    def label(self) -> str: ...

    def to_json(self) -> JSONObject: ...


C = TypeVar("C", bound=ScaleConfig)


@dataclass
class ScaleStep(Generic[C]):
    """One proposal: the config tried, what it compiled to, and whether it was kept (and why)."""

    config: C
    registers: int | None
    spill_store_bytes: int | None
    ctas_per_sm: int | None
    warps_per_sm: int | None
    kept: bool
    sentence: str

    def to_json(self) -> JSONObject:
        return {
            "config": self.config.to_json(),
            "registers": self.registers,
            "spill_store_bytes": self.spill_store_bytes,
            "ctas_per_sm": self.ctas_per_sm,
            "warps_per_sm": self.warps_per_sm,
            "kept": self.kept,
            "sentence": self.sentence,
        }


@dataclass
class ScaleResult(Generic[C]):
    start: C
    final: C
    steps: list[ScaleStep[C]] = field(default_factory=list)

    @property
    def changed(self) -> bool:
        return self.final != self.start

    def to_json(self) -> JSONObject:
        return {
            "start": self.start.to_json(),
            "final": self.final.to_json(),
            "changed": self.changed,
            "steps": [s.to_json() for s in self.steps],
        }


@dataclass(frozen=True)
class ScalePoint(Generic[C]):
    """A compiled config as the loop sees it; ``occ`` None: it did not compile."""

    config: C
    registers: int | None
    spills: int | None
    occ: Occupancy | None
    grid_ctas: int = 0  # CTAs the config's grid launches


def scale_loop(
    start: C,
    evaluate: Callable[[C], ScalePoint[C]],
    proposals: Callable[[C], list[tuple[C, str]]],
    *,
    sm_count: int,
    max_spill_bytes: int = 0,
    max_steps: int = 6,
) -> ScaleResult[C]:
    """The exact rule applied repeatedly from ``start``: while it says "scale", evaluate each
    proposal and move to the best one that removes spills or raises occupancy, one sentence per
    step. One home for the loop; ``evaluate`` says where the facts come from (a toolchain's
    compile in :func:`scale_blocks`, the installed Triton in a benchmark)."""
    cur = evaluate(start)
    result: ScaleResult[C] = ScaleResult(start, start)
    if cur.occ is None:
        result.steps.append(
            ScaleStep(start, None, None, None, None, False, f"{start.label()} does not compile: nothing to scale")
        )
        return result
    for _ in range(max_steps):
        assert cur.occ is not None
        decision = exact_rule(
            cur.occ,
            grid_ctas=cur.grid_ctas,
            sm_count=sm_count,
            spill_store_bytes=cur.spills,
            max_spill_bytes=max_spill_bytes,
        )
        if not decision.scale:
            result.steps.append(
                ScaleStep(
                    cur.config,
                    cur.registers,
                    cur.spills,
                    cur.occ.ctas_per_sm,
                    cur.occ.warps_per_sm,
                    True,
                    f"{cur.config.label()}: stop, {decision.reason}.",
                )
            )
            break
        best: ScalePoint[C] | None = None
        round_start = len(result.steps)
        for cfg, change in proposals(cur.config):
            p = evaluate(cfg)
            if p.occ is None:
                result.steps.append(
                    ScaleStep(cfg, None, None, None, None, False, f"{change}: does not compile, rejected.")
                )
                continue
            removes = decision.spills and (p.spills or 0) <= max_spill_bytes
            fewer = decision.spills and (p.spills or 0) < (cur.spills or 0)
            raises = p.occ.ctas_per_sm > cur.occ.ctas_per_sm or p.occ.warps_per_sm > cur.occ.warps_per_sm
            ok = (removes or raises or fewer) and (p.spills or 0) <= max(cur.spills or 0, max_spill_bytes)
            what = (
                f"{p.registers} registers, {p.spills or 0} B spills, {plural(p.occ.ctas_per_sm, 'CTA')}/SM "
                f"({p.occ.warps_per_sm} warps)"
            )
            if ok:
                # "removes" only where none is left: 32 B left under --max-spill-bytes 64 read as none
                gain = (
                    "removes the spills"
                    if removes and not p.spills
                    else f"brings the spills within the {max_spill_bytes} B limit (--max-spill-bytes)"
                    if removes
                    else "cuts the spills"
                    if fewer
                    else occupancy_gain(cur.occ, p.occ, decision.ctas_needed)
                )
                sentence = f"{change} because {decision.reason}: {what}, which {gain}."
            else:
                sentence = (
                    f"{change} because {decision.reason}: {what}, neither fewer spills nor more occupancy; rejected."
                )
            result.steps.append(
                ScaleStep(cfg, p.registers, p.spills, p.occ.ctas_per_sm, p.occ.warps_per_sm, ok, sentence)
            )
            if ok and (best is None or _better(p, best)):
                best = p
        if best is None:
            result.steps.append(
                ScaleStep(
                    cur.config,
                    cur.registers,
                    cur.spills,
                    cur.occ.ctas_per_sm,
                    cur.occ.warps_per_sm,
                    True,
                    f"{cur.config.label()}: stop, no proposal helps ({decision.reason}).",
                )
            )
            break
        for step in result.steps[round_start:]:
            if step.kept and step.config != best.config:
                step.kept = False
                step.sentence = step.sentence[:-1] + f"; not chosen: {best.config.label()} is better."
        cur = best
        result.final = cur.config
    return result


def occupancy_gain(before: Occupancy, after: Occupancy, ctas_needed: int) -> str:
    """What a kept step raised, by the numbers: CTAs/SM, or only the warps per SM at the same CTAs/SM.

    Why not "raises occupancy" for both: a step taken because CTAs/SM fall short of the grid's need
    that only adds warps per CTA leaves that shortfall as it was, and the sentence has to say so."""
    if after.ctas_per_sm > before.ctas_per_sm:
        return (
            f"raises CTAs/SM from {before.ctas_per_sm} to {after.ctas_per_sm} "
            f"({before.warps_per_sm} -> {after.warps_per_sm} warps/SM)"
        )
    words = f"raises warps per SM from {before.warps_per_sm} to {after.warps_per_sm} " + (
        f"at the same {plural(after.ctas_per_sm, 'CTA')}/SM"
        if after.ctas_per_sm == before.ctas_per_sm
        else f"while CTAs/SM fall from {before.ctas_per_sm} to {after.ctas_per_sm}"
    )
    if after.ctas_per_sm < ctas_needed:
        words += f", still short of the {ctas_needed} the grid needs"
    return words


def _better(a: ScalePoint[Any], b: ScalePoint[Any]) -> bool:
    """Fewer spill bytes first, then more resident warps, then fewer warps per CTA."""
    assert a.occ is not None and b.occ is not None
    return ((a.spills or 0), -a.occ.warps_per_sm, a.config.num_warps) < (
        (b.spills or 0),
        -b.occ.warps_per_sm,
        b.config.num_warps,
    )


def _evaluate(
    space: ConfigSpace, cfg: TuneConfig, toolchain: Toolchain, compiler: Compiler, sm_count: int
) -> ScalePoint[TuneConfig]:
    from ktriage.analyze.artifact import analyze_artifact
    from ktriage.compile.compiler import CompileFailure

    spec = space.apply(cfg)
    out = compiler.compile(spec, toolchain)
    if isinstance(out, CompileFailure):
        return ScalePoint(cfg, None, None, None)
    res, occ = analyze_artifact(out)
    return ScalePoint(cfg, res.registers, res.spill_store_bytes, occ, _grid_ctas(spec, sm_count, occ))


def scale_proposals(space: ConfigSpace, cfg: TuneConfig) -> list[tuple[TuneConfig, str]]:
    """The next smaller reduction block (largest R knob first) and the next larger num_warps of the
    space (twice the warps in the full space). Why the space's: ``--warps 4,8`` narrows it, and a
    step to 32 warps would recommend a config the user ruled out and the screening never compiled."""
    out: list[tuple[TuneConfig, str]] = []
    blocks = cfg.blocks
    reductions = sorted((k for k in space.knobs if k.reduction and k.name in blocks), key=lambda k: -blocks[k.name])
    for knob in reductions:
        smaller = [v for v in knob.values if v < blocks[knob.name]]
        if smaller:
            new = dict(blocks)
            new[knob.name] = max(smaller)
            out.append(
                (
                    TuneConfig.of(cfg.num_warps, cfg.num_stages, new),
                    f"{knob.name} {blocks[knob.name]} -> {max(smaller)}",
                )
            )
            break
    arch = parse_arch(space.spec.target)
    more = [w for w in space.warps if w > cfg.num_warps and w * arch.warp_size <= arch.max_threads_per_block]
    if more:
        out.append(
            (
                TuneConfig(min(more), cfg.num_stages, cfg.constexprs),
                f"num_warps {cfg.num_warps} -> {min(more)}",
            )
        )
    return out


def _grid_ctas(spec: KernelSpec, sm_count: int, occ: Occupancy) -> int:
    return math.prod(spec.grid) if spec.grid else occ.ctas_per_sm * sm_count


def scale_blocks(
    spec: KernelSpec,
    toolchain: Toolchain,
    compiler: Compiler,
    *,
    space: ConfigSpace | None = None,
    sm_count: int | None = None,
    max_spill_bytes: int = 0,
    max_steps: int = 6,
) -> ScaleResult[TuneConfig]:
    """Apply the exact rule repeatedly from ``spec``'s own config (:func:`scale_loop`), compiling
    each proposal with ``toolchain``."""
    sp = space or config_space(spec)
    sms = spec_sm_count(spec, sm_count)
    return scale_loop(
        sp.default,
        lambda cfg: _evaluate(sp, cfg, toolchain, compiler, sms),
        lambda cfg: scale_proposals(sp, cfg),
        sm_count=sms,
        max_spill_bytes=max_spill_bytes,
        max_steps=max_steps,
    )
