"""Theoretical occupancy of a kernel launch, by the CUDA occupancy rules, without a GPU.

A register or shared-memory regression matters through occupancy: 255 instead of 168 registers
per thread takes a 4-warp kernel on Hopper from 3 to 2 resident CTAs per SM. This module computes
what ``cuOccupancyMaxActiveBlocksPerMultiprocessor`` would return, which resource limits it, and
what change would lift it. The rules follow ``cuda_occupancy.h`` (research notes §3.2-3.3, [OCC]):

- registers: ``regs * 32`` rounded up to 256 per warp; a CTA must fit in the per-block register
  file even with its warp count rounded up to the 4 sub-partitions (the header's "hardware
  check"); the SM's registers are split over 4 sub-partitions, each holding whole warps;
- warps: ``max_warps_per_sm // warps_per_cta`` (0 if the block exceeds 1024 threads);
- blocks: the per-SM CTA cap;
- shared memory: the kernel's bytes plus the driver's reserved 1 KB per block (CC >= 8), rounded
  up to the allocation unit; a CTA over the opt-in per-block limit (+ the reservation) cannot run;
  the SM capacity is the carveout preference (by default the largest carveout), or, when one CTA
  needs more than the preference, the smallest carveout step that fits it;
- barriers (CC >= 9 only, when the kernel uses named barriers): ``2 * max_ctas`` (or ``max_ctas``)
  barriers per SM shared by the CTAs.

It imports only the standard library, so it also runs on the GPU host for the check against the
driver (benchmarks/gpu/occupancy_vs_cuda.py).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TypeAlias

from ktriage.arch import Arch, parse_arch
from ktriage.errors import SpecError
from ktriage.wording import plural

#: What :meth:`Occupancy.to_json` returns, spelled here rather than as
#: ``ktriage.schema.jsontypes.JSONObject``: this module imports only the standard library and
#: ktriage.arch/errors/wording (see the module docstring). Every value is a JSON value, so the dict can be
#: stored wherever a ``JSONObject`` value goes.
OccupancyJSON: TypeAlias = dict[str, str | int | float | dict[str, int]]

#: Limiter names, in the order used to pick one when several resources allow the same count and
#: the count is > 0. Hardware caps come first: when they bind, lowering a kernel resource can't help.
TIE_ORDER = ("warps", "blocks", "registers", "shared_memory", "barriers")
#: Order used when no CTA fits: the kernel resource that makes the launch impossible.
ZERO_ORDER = ("registers", "shared_memory", "warps", "blocks", "barriers")

_UNLIMITED = 1 << 30
_POW2_WARPS = (1, 2, 4, 8, 16, 32)


def _round_up(x: int, unit: int) -> int:
    return -(-x // unit) * unit


@dataclass(frozen=True)
class Occupancy:
    """Resident CTAs and warps per SM for one (arch, registers, warps, shared) and why.

    ``limits`` maps each resource to the CTAs per SM it alone allows (a resource that imposes no
    limit reports the hardware CTA cap; the others may exceed it). ``barriers`` appears only for CC >= 9 when barriers > 0.
    """

    arch: str
    registers: int
    num_warps: int
    shared_bytes: int
    ctas_per_sm: int
    warps_per_sm: int
    max_warps_per_sm: int
    occupancy: float
    limiter: str
    limits: dict[str, int]
    registers_per_warp_allocated: int
    registers_per_cta_allocated: int
    shared_per_cta_allocated: int
    reserved_shared: int
    carveout_bytes: int
    lift: str

    def describe(self) -> str:
        """One line for tables: ``2 CTAs/SM, 8/64 warps (12.5%), limited by registers``."""
        return (
            f"{plural(self.ctas_per_sm, 'CTA')}/SM, "
            f"{self.warps_per_sm}/{self.max_warps_per_sm} warps ({self.occupancy:.1%}), "
            f"limited by {self.limiter.replace('_', ' ')}"
        )

    def to_json(self) -> OccupancyJSON:
        """Plain JSON-able dict (stable keys; what ``ktriage occupancy --format json`` prints)."""
        return {
            "arch": self.arch,
            "registers": self.registers,
            "num_warps": self.num_warps,
            "shared_bytes": self.shared_bytes,
            "ctas_per_sm": self.ctas_per_sm,
            "warps_per_sm": self.warps_per_sm,
            "max_warps_per_sm": self.max_warps_per_sm,
            "occupancy": round(self.occupancy, 6),
            "limiter": self.limiter,
            "limits": dict(self.limits),
            "registers_per_warp_allocated": self.registers_per_warp_allocated,
            "registers_per_cta_allocated": self.registers_per_cta_allocated,
            "shared_per_cta_allocated": self.shared_per_cta_allocated,
            "reserved_shared": self.reserved_shared,
            "carveout_bytes": self.carveout_bytes,
            "lift": self.lift,
        }


# --------------------------------------------------------------------------- per-resource limits


def _check_inputs(arch: Arch, registers: int, num_warps: int, shared_bytes: int) -> None:
    if not isinstance(registers, int) or not 0 <= registers <= arch.max_regs_per_thread:
        raise SpecError(
            f"registers per thread must be 0..{arch.max_regs_per_thread}, got {registers!r}",
            "pass the count ptxas reports ('Used N registers', at most 255)",
        )
    if not isinstance(num_warps, int) or not 1 <= num_warps <= arch.max_warps_per_block:
        raise SpecError(
            f"warps per CTA must be 1..{arch.max_warps_per_block}, got {num_warps!r}",
            "pass Triton's num_warps (a CTA has at most 1024 threads = 32 warps)",
        )
    if not isinstance(shared_bytes, int) or shared_bytes < 0:
        raise SpecError(
            f"shared memory per CTA must be a byte count >= 0, got {shared_bytes!r}",
            "pass Triton's metadata.shared (static + dynamic bytes per CTA)",
        )


def _registers_per_warp(arch: Arch, registers: int) -> int:
    return _round_up(registers * arch.warp_size, arch.reg_alloc_unit)


def _register_limit(arch: Arch, registers: int, num_warps: int) -> int:
    """CTAs per SM the register file allows (cudaOccMaxBlocksPerSMRegsLimit, partitioned GC off)."""
    per_warp = _registers_per_warp(arch, registers)
    if registers > arch.max_regs_per_thread:
        return 0
    if per_warp == 0:
        return _UNLIMITED
    # The hardware checks the per-block register file as if the CTA's warps were spread over all
    # sub-partitions at once, i.e. with the warp count rounded up to a multiple of 4.
    assumed_per_cta = per_warp * _round_up(num_warps, arch.sub_partitions)
    if assumed_per_cta > arch.regs_per_block or per_warp * num_warps > arch.regs_per_block:
        return 0
    warps_per_sub_partition = (arch.regs_per_sm // arch.sub_partitions) // per_warp
    return (warps_per_sub_partition * arch.sub_partitions) // num_warps


def _warp_limit(arch: Arch, num_warps: int) -> int:
    if num_warps * arch.warp_size > arch.max_threads_per_block:
        return 0
    return arch.max_warps_per_sm // num_warps


def _align_carveout(arch: Arch, size: int) -> int | None:
    """Smallest carveout step >= size (None if none is large enough)."""
    for step in arch.carveouts:
        if step >= size:
            return step
    return None


def _shared_limit(arch: Arch, shared_bytes: int, reserved: int, carveout: int | None) -> tuple[int, int]:
    """(CTAs per SM the shared memory allows, bytes allocated per CTA) (cudaOccMaxBlocksPerSMSmemLimit)."""
    allocated = _round_up(shared_bytes + reserved, arch.shared_alloc_unit)
    per_block_limit = arch.shared_per_block_optin + (reserved if arch.major >= 8 else 0)
    if allocated > per_block_limit:
        return 0, allocated
    preference = _align_carveout(arch, arch.shared_per_sm if carveout is None else carveout)
    assert preference is not None  # carveout validated by the caller
    if preference >= allocated:
        capacity = preference
    else:
        fitted = _align_carveout(arch, allocated)
        if fitted is None:
            return 0, allocated
        capacity = fitted
    if allocated == 0:
        return _UNLIMITED, 0
    return capacity // allocated, allocated


def _barrier_limit(arch: Arch, barriers: int) -> int | None:
    """CTAs per SM the named barriers allow; None where the rule does not apply (CC < 9, none used)."""
    if arch.major < 9 or barriers <= 0:
        return None
    per_cta_cap = arch.max_ctas_per_sm
    # 9.0, 10.0, 10.3 have two barrier sets per CTA slot; 10.1, 11.0, 12.x one ([OCC]).
    available = per_cta_cap * (2 if (arch.major, arch.minor) in ((9, 0), (10, 0), (10, 3)) else 1)
    return available // barriers


def _limits(
    arch: Arch,
    registers: int,
    num_warps: int,
    shared_bytes: int,
    reserved: int,
    carveout: int | None,
    barriers: int,
) -> tuple[dict[str, int], int]:
    smem_ctas, smem_alloc = _shared_limit(arch, shared_bytes, reserved, carveout)
    limits = {
        "registers": _register_limit(arch, registers, num_warps),
        "shared_memory": smem_ctas,
        "warps": _warp_limit(arch, num_warps),
        "blocks": arch.max_ctas_per_sm,
    }
    bar = _barrier_limit(arch, barriers)
    if bar is not None:
        limits["barriers"] = bar
    # Report "no limit" (no registers, no shared memory) as the hardware CTA cap: JSON stays readable.
    return {k: (arch.max_ctas_per_sm if v >= _UNLIMITED else v) for k, v in limits.items()}, smem_alloc


def _pick_limiter(limits: dict[str, int], ctas: int) -> str:
    order = ZERO_ORDER if ctas == 0 else TIE_ORDER
    for name in order:
        if name in limits and limits[name] == ctas:
            return name
    raise AssertionError("unreachable: the minimum is one of the limits")


# --------------------------------------------------------------------------- public API


def compute_occupancy(
    arch: Arch | str | int,
    registers: int,
    num_warps: int,
    shared_bytes: int,
    *,
    reserved_shared: int | None = None,
    carveout: int | None = None,
    barriers: int = 1,
) -> Occupancy:
    """Occupancy of a CTA of ``num_warps`` warps using ``registers`` per thread and ``shared_bytes``
    of shared memory (Triton's ``metadata.shared``: static + dynamic) on ``arch``.

    ``reserved_shared`` overrides the driver's reservation per block (default: the arch's, 1 KB
    from CC 8.0). ``carveout`` is a shared-memory carveout preference in bytes (default: none,
    which the driver treats as the largest carveout). ``barriers`` is the named-barrier count
    ptxas reports (``used N barriers``); it only matters on CC >= 9 with 3 or more.
    """
    a = parse_arch(arch)
    _check_inputs(a, registers, num_warps, shared_bytes)
    reserved = a.reserved_shared_per_block if reserved_shared is None else reserved_shared
    if not isinstance(reserved, int) or reserved < 0:
        raise SpecError(
            f"reserved shared memory must be >= 0 bytes, got {reserved!r}", "omit it to use the arch's value"
        )
    if carveout is not None and not (isinstance(carveout, int) and 0 <= carveout <= a.shared_per_sm):
        raise SpecError(
            f"carveout preference must be 0..{a.shared_per_sm} bytes on {a.name}, got {carveout!r}",
            "omit it to let the driver use the largest carveout",
        )
    if not isinstance(barriers, int) or not 0 <= barriers <= a.max_barriers_per_cta:
        raise SpecError(
            f"barrier count must be 0..{a.max_barriers_per_cta} (the named barriers a CTA can have), got {barriers!r}",
            "pass ptxas's 'used N barriers'",
        )
    return _compute(a, registers, num_warps, shared_bytes, reserved, carveout, barriers, with_lift=True)


def _compute(
    a: Arch,
    registers: int,
    num_warps: int,
    shared_bytes: int,
    reserved: int,
    carveout: int | None,
    barriers: int,
    *,
    with_lift: bool,
) -> Occupancy:
    limits, smem_alloc = _limits(a, registers, num_warps, shared_bytes, reserved, carveout, barriers)
    ctas = min(limits.values())
    limiter = _pick_limiter(limits, ctas)
    per_warp = _registers_per_warp(a, registers)
    warps = ctas * num_warps
    if carveout is None:
        used = _align_carveout(a, ctas * smem_alloc)
        carveout_bytes = used if used is not None else a.shared_per_sm
    else:
        carveout_bytes = max(_align_carveout(a, carveout) or 0, _align_carveout(a, smem_alloc) or 0)
    occ = Occupancy(
        arch=a.name,
        registers=registers,
        num_warps=num_warps,
        shared_bytes=shared_bytes,
        ctas_per_sm=ctas,
        warps_per_sm=warps,
        max_warps_per_sm=a.max_warps_per_sm,
        occupancy=warps / a.max_warps_per_sm,
        limiter=limiter,
        limits=limits,
        registers_per_warp_allocated=per_warp,
        registers_per_cta_allocated=per_warp * num_warps,
        shared_per_cta_allocated=smem_alloc,
        reserved_shared=reserved,
        carveout_bytes=carveout_bytes,
        lift="",
    )
    if not with_lift:
        return occ
    lift = _lift(a, occ, reserved, carveout, barriers)
    return replace(occ, lift=lift)


def registers_for_ctas(arch: Arch | str | int, num_warps: int, ctas: int) -> int | None:
    """Largest registers-per-thread count at which the register file alone allows ``ctas`` CTAs of
    ``num_warps`` warps per SM; None if no count does (e.g. more CTAs than the warp slots hold)."""
    a = parse_arch(arch)
    _check_inputs(a, 0, num_warps, 0)
    if not isinstance(ctas, int) or ctas < 1:
        raise SpecError(f"CTAs per SM must be >= 1, got {ctas!r}", "ask for at least one resident CTA")
    if ctas * num_warps > a.max_warps_per_sm:
        return None
    for regs in range(a.max_regs_per_thread, 0, -1):
        if _register_limit(a, regs, num_warps) >= ctas:
            return regs
    return None


def shared_for_ctas(arch: Arch | str | int, ctas: int, *, reserved_shared: int | None = None) -> int | None:
    """Largest shared-memory bytes per CTA (Triton's ``metadata.shared``) that lets ``ctas`` CTAs
    reside on one SM with the default (largest) carveout; None if even 0 bytes do not."""
    a = parse_arch(arch)
    if not isinstance(ctas, int) or ctas < 1:
        raise SpecError(f"CTAs per SM must be >= 1, got {ctas!r}", "ask for at least one resident CTA")
    reserved = a.reserved_shared_per_block if reserved_shared is None else reserved_shared
    allocated = (a.shared_per_sm // ctas) // a.shared_alloc_unit * a.shared_alloc_unit
    allocated = min(allocated, a.shared_per_block_optin + (reserved if a.major >= 8 else 0))
    best = allocated - reserved
    if best < 0:
        return None
    return best


# --------------------------------------------------------------------------- the "lift" sentence


def _lift(a: Arch, occ: Occupancy, reserved: int, carveout: int | None, barriers: int) -> str:
    """Plain sentence: the smallest change that raises resident warps, found by searching the next
    threshold of each binding resource (not a heuristic: every number is recomputed by the rules)."""
    ctas = occ.ctas_per_sm
    if ctas > 0 and occ.warps_per_sm >= a.max_warps_per_sm:
        return "occupancy is at the hardware maximum"
    target = ctas + 1
    hardware_cap = min(occ.limits["warps"], occ.limits["blocks"])
    if hardware_cap < target:
        return _lift_by_warps(a, occ, reserved, carveout, barriers)

    phrases: list[str] = []
    new_regs, new_shared, new_barriers = occ.registers, occ.shared_bytes, barriers
    if occ.limits["registers"] < target:
        regs = registers_for_ctas(a, occ.num_warps, target)
        if regs is None:
            return _lift_by_warps(a, occ, reserved, carveout, barriers)
        new_regs = regs
        phrases.append(f"≤ {regs} registers per thread")
    if occ.limits["shared_memory"] < target:
        smem = shared_for_ctas(a, target, reserved_shared=reserved)
        if smem is None:
            return _lift_by_warps(a, occ, reserved, carveout, barriers)
        new_shared = smem
        phrases.append(f"≤ {smem} bytes of shared memory per CTA")
        if carveout is not None:
            carveout = None
            phrases.append("no carveout preference")
    if occ.limits.get("barriers", _UNLIMITED) < target:
        bar = _barrier_limit(a, 1)
        assert bar is not None
        new_barriers = max(1, (bar // target))
        phrases.append(f"≤ {new_barriers} named barriers")
    better = _compute(a, new_regs, occ.num_warps, new_shared, reserved, carveout, new_barriers, with_lift=False)
    return (
        f"{' and '.join(phrases)} would allow {plural(better.ctas_per_sm, 'CTA')}/SM "
        f"({plural(better.warps_per_sm, 'warp')})"
    )


def _lift_by_warps(a: Arch, occ: Occupancy, reserved: int, carveout: int | None, barriers: int) -> str:
    """The warp or CTA cap binds for this CTA size: only another num_warps can raise resident warps."""
    best: Occupancy | None = None
    # Nearest warp counts first (in powers of two), so that ties go to the smallest change.
    candidates = sorted(
        (w for w in _POW2_WARPS if w != occ.num_warps and w <= a.max_warps_per_block),
        key=lambda w: (abs(w.bit_length() - occ.num_warps.bit_length()), -w),
    )
    for w in candidates:
        cand = _compute(a, occ.registers, w, occ.shared_bytes, reserved, carveout, barriers, with_lift=False)
        if cand.warps_per_sm > (best.warps_per_sm if best else occ.warps_per_sm):
            best = cand
    if occ.limits["warps"] <= occ.limits["blocks"]:
        cap = f"the SM's {a.max_warps_per_sm} warp slots limit"
    else:
        cap = f"the {a.max_ctas_per_sm}-CTA/SM cap limits"
    bound = f"{cap} {occ.num_warps}-warp CTAs to {occ.ctas_per_sm} per SM"
    if best is None:
        return f"{bound}; no other num_warps does better with these registers and shared memory"
    return (
        f"num_warps={best.num_warps} would allow {plural(best.ctas_per_sm, 'CTA')}/SM "
        f"({plural(best.warps_per_sm, 'warp')}); {bound}"
    )
