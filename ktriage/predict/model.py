"""THE cost model of ktriage: time of one kernel launch from its compile artifacts, and the ratio
of two toolchains' kernels with a calibrated interval.

One model for every verb: ``explain`` classifies a change by the interval of its predicted ratio,
``triage`` sets the prediction next to the measured slowdown, ``fixes``/``tune`` rank candidates by
predicted gain (the tile and stream rankings of ``predict.configs`` are its config-search part).

**The time estimate** (``estimate``), per kernel and launch, in SM cycles. The SASS opcodes are
grouped into categories (``CATEGORIES``: global loads/stores, local memory, returning atomics and
reductions, cache-control and memory fences, shared memory and LDSM, tensor cores, barriers,
special-function and fp64, the rest). A warp executes each category ``n = rest + trips x loop``
times, where ``loop`` is the count in the main loop's body (``analyze.sass_loops``), ``rest`` the
count outside it and ``trips`` the trip count: for a streaming kernel whose launch names its shapes
(a recorded launch), ``trip_scale x`` its largest tensor's bytes over the grid and over the bytes a
CTA loads an iteration, times its passes (the innermost loops that load: a multi-pass reduction's mean,
variance and normalize loops each stream the row); otherwise (a tensor-core kernel, or no shapes) a
fitted constant. Per SM:

- issue: ``the SM's warps over the launch / 4 schedulers x sum(n x issue cost)``;
- latency: one warp's critical path: its own issue plus ``lambda_global`` per round trip of global
  loads: one for the loads outside the loops, and per loop iteration as many as the iteration waits on
  its own loads (``LoopFacts.load_waits``, summed over the innermost loops that load, at least one
  each; one when the facts do not carry the count): loads issued before a wait overlap, a wait ends a
  round trip. ``lambda_local`` per local load
  (spill reload: an L1 hit while the spill footprint, stack x resident threads, fits in L1, an L2
  round trip for the share that does not), ``lambda_atomic`` per returning atomic (ATOMG: the warp
  waits for the old value; REDG does not), ``lambda_cctl`` per cache invalidation (CCTL.IVALL:
  the next loads miss L1), ``lambda_fence`` per memory fence, ``lambda_barrier`` per barrier,
  ``lambda_mma_wait`` per wait of a warpgroup for its tensor-core ops (``WARPGROUP.DEPBAR``: Triton
  3.3.1's flex attention waits after each of the 12 HGMMAs of its loop, 3.6.0 twice an iteration);
- bandwidth: the global bytes (widths from the opcodes' modifiers: ``LDG.E.128`` is 16 B a thread)
  at the SM's share of DRAM bandwidth (``kappa_l2`` times that for a tensor-core kernel, whose
  operand tiles are re-read from L2), and the local-memory bytes that leave L1 at ``kappa_l2`` times
  the DRAM share. DRAM moves each of the launch's tensors once: where their bytes are known
  (``KernelFacts.tensor_bytes``, a recorded launch), a CTA's global traffic beyond its share of them
  (masked lanes the static loads count, a second pass over a row, a weight row every CTA reads) is
  served at L2's rate to one SM (``arch.Throughput.l2_bytes_per_clk``, no fitted parameter); where they
  are not, the later passes of a multi-pass loop are. Without it TritonBench's inductor layer_norm
  reduction (three passes over each row, issue-bound on the H200: DRAM at 37 % of peak) was priced
  DRAM-bound and Triton 3.3.1's 12 % fewer instructions showed as -2 % (measured -5..-9 %).

- serialization (only where every index the launch reads is one value: a recorded replay's large
  integer tensors are zeros, ``KernelFacts.uniform_indices``): all its atomics hit the same addresses
  and the L2 executes them one after another, ``lambda_serial`` GPU cycles per warp atomic, returning
  or not: the term that makes REDG -> ATOMG+CCTL cost +40..80 % with random indices (the returning
  atomic's wait) and nothing with one index (the queue at the L2 dominates both).
- bank conflicts: the SM's shared-memory pipe serves one 128-byte wavefront a cycle; a request that
  ``analyze.shared_banks`` finds f-fold conflicted in the SASS addresses (``KernelFacts.shared_wavefronts``)
  costs (f - 1) x its conflict-free wavefronts more, all the SM's warps together (Triton 3.3.1's 8-way
  conflicted layout conversion in TritonBench's inductor ``mul_sum``: +14..18 % on the H200). The
  conflict-free part is priced with the instruction (issue), as the fit always had it.

The busiest SM runs ``ceil(grid / SMs)`` CTAs in ``ceil(that / CTAs per SM)`` waves (occupancy from
``analyze.occupancy``, the grid from the launch): issue and bandwidth count all its warps, the
latency path is paid once per wave (more resident CTAs hide it: fewer waves), with ``lambda_wave`` a wave's
fixed cost (a CTA's launch, its first round trip to memory, its drain: fitted 4.0k cycles, about 2.0 us at
1.98 GHz, 4.5x the 0.41..0.46 us a wave of small CTAs measures on the H200, where waves streaming from DRAM cost
only their bytes: ``benchmarks/calibration/wave_cost/``; the fitted value stands in for the latency a small
launch exposes and the 1/132 share of DRAM bandwidth leaves out). Without it a launch of 2 CTAs whose loop
waits 3 times an iteration (TritonBench's inductor cross-entropy, Triton 3.3.1) was priced by its bandwidth
share and the waits barely showed (+5 % predicted, +8..9 % measured; ncu: 0.1 % of DRAM peak). The launch
takes the soft maximum of the terms (``(a^p + b^p + c^p + d^p + e^p)^(1/p)``, ``p`` fitted: how much they overlap). GPU facts (clock, bandwidth, SM count, L1 size) come from ``ktriage.arch``.

**The ratio** (``predict``) is ``t(new) / t(ref)`` for the same launch. Kernels whose facts are
identical get exactly 1 with a zero-width interval. Otherwise the interval is
``ratio x exp(+-(a + b |log ratio|))``: ``a`` is a quantile of the leave-one-operator-out residuals of
the fit (``predict.calibration``, each operator weighing alike); the fit sets ``b`` to 0 (a width
growing with the effect let one mis-sized operator make every interval straddle the gate).
A change is a regression only where the whole interval lies above ``1 + threshold``, an
improvement only where it lies below ``1 / (1 + threshold)``; anything else is predicted neutral.

**Contributors**: for each aspect (``ASPECTS``: main-loop instructions, local memory, atomics and
fences, global memory widths, occupancy, shared memory/tensor cores, barriers, waits for the tensor cores) the new kernel's
time is recomputed with that aspect's inputs taken from the reference; the share of the change
each aspect accounts for is reported with its evidence ("+38 %: 830 more LDL/STL in the main loop").

The free parameters (``Params``) are fitted on GPU-measured cells (``ktriage calibrate``); the
package ships a fit (``params.json``), ``KTRIAGE_MODEL`` or ``--model`` name another.
"""

from __future__ import annotations

import json
import math
import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import lru_cache
from pathlib import Path
from typing import Any

from ktriage.arch import parse_arch
from ktriage.errors import FormatError, SpecError
from ktriage.predict.facts import KernelFacts, LoopFacts
from ktriage.schema.jsontypes import JSONObject
from ktriage.stats.gate import gate_band

PARAMS_FILE = Path(__file__).with_name("params.json")
MODEL_ENV = "KTRIAGE_MODEL"
DEFAULT_THRESHOLD = 0.05

# base opcode -> category
CATEGORIES: dict[str, tuple[str, ...]] = {
    "ldg": ("LDG", "LD", "LDGSTS", "UTMALDG", "UBLKCP"),
    "stg": ("STG", "ST", "UTMASTG"),
    "ldl": ("LDL",),
    "stl": ("STL",),
    "atom": ("ATOMG", "ATOM"),
    "red": ("REDG", "RED", "UTMAREDG", "UBLKRED"),
    "atoms": ("ATOMS", "REDAS"),
    "cctl": ("CCTL",),
    "fence": ("MEMBAR", "FENCE", "ERRBAR"),
    "lds": ("LDS",),
    "ldsm": ("LDSM",),
    "sts": ("STS", "STSM"),
    "mma": ("HMMA", "IMMA", "DMMA", "HGMMA", "IGMMA", "QGMMA", "UTCHMMA", "UTCIMMA", "UTCQMMA", "UTCOMMA", "UTCMMA"),
    "bar": ("BAR", "SYNCS", "WARPGROUP"),  # CTA barriers and mbarrier waits (DEPBAR is a scoreboard wait: issue only)
    # a warpgroup's wait for its own wgmma ops (WARPGROUP.DEPBAR); ``profile`` sorts it out of "bar" by modifier
    "mmawait": ("WARPGROUP.DEPBAR",),
    "sfu": ("MUFU",),
    "fp64": ("DFMA", "DADD", "DMUL"),
}
_CATEGORY_OF = {op: cat for cat, ops in CATEGORIES.items() for op in ops}
ALL_CATEGORIES = tuple(CATEGORIES) + ("alu",)
# the categories of arithmetic and control: a loop of these only loads, stores and waits on nothing
_ARITHMETIC = frozenset({"alu", "sfu", "fp64"})
# Issue cycles of one warp instruction on its scheduler (fixed facts, not fitted): an SM sub-partition
# issues one instruction a cycle; MUFU runs at a quarter of the ALU rate, fp64 at half on sm_90 (a
# small fraction on consumer parts: the per-arch refinement is left to the fit's lambda terms),
# a warpgroup MMA occupies the tensor core for many cycles.
ISSUE_COST: dict[str, float] = {
    "sfu": 4.0,
    "fp64": 2.0,
    "mma": 32.0,
    "lds": 2.0,
    "ldsm": 1.0,
    "sts": 2.0,
    "ldl": 2.0,
    "stl": 2.0,
    "atom": 2.0,
    "red": 2.0,
    "atoms": 4.0,
}
_WIDTH = re.compile(r"\.(8|16|32|64|128)\b|(?:F|BF|U|S)?(8|16|32|64)x(\d+)")
# A launch whose grid is unknown (a spec without one) is priced as this many CTAs per SM: the same
# for both kernels of a comparison (sizing it by either kernel's occupancy would make occupancy change
# the work), and enough waves that occupancy still changes the latency exposed.
UNKNOWN_GRID_PER_SM = 64
# The fewest iterations the non-anchor kernel's loops are priced at (``_cycles``): a loop's share of one
# pass, not a whole pass, so that both kernels of a comparison move the anchor's bytes
MIN_TRIPS_OF_THE_OTHER = 1.0 / 64
L1_BYTES_PER_SM = 256 * 1024  # unified L1/shared per SM on sm_80..sm_100 (the part shared memory does not take)

#: aspect -> (the categories it swaps, words). Occupancy and the main loop's length are handled apart.
ASPECTS: dict[str, tuple[tuple[str, ...], str]] = {
    "local": (("ldl", "stl"), "local memory (spills)"),
    "atomics": (("atom", "red", "atoms", "cctl", "fence"), "atomics and fences"),
    "global": (("ldg", "stg"), "global memory instructions"),
    "shared": (("lds", "ldsm", "sts", "mma"), "shared memory / tensor cores"),
    "barriers": (("bar",), "barriers"),
    "mma_waits": (("mmawait",), "waits for the tensor cores"),
}


@dataclass(frozen=True)
class Params:
    """The model's free parameters (cycles unless said) and the interval calibration.

    Defaults are GPU facts for Hopper where one exists (the loaded DRAM latency of ``arch``, an L1
    hit, an L2 round trip), and the fitted values replace them (``params.json``)."""

    trips: float = 8.0  # effective iterations of the main loop per warp (when the data size is unknown)
    trip_scale: float = (
        1.0  # with the data size: trips = trip_scale x passes x data bytes / (grid x bytes a CTA loads an iteration)
    )
    lambda_global: float = 1000.0  # a round of global loads
    lambda_local_l1: float = 30.0  # a local load that hits L1
    lambda_local_l2: float = 300.0  # a local load that goes to L2
    lambda_atomic: float = 600.0  # a returning global atomic (ATOMG)
    lambda_reduction: float = 20.0  # a fire-and-forget reduction (REDG)
    lambda_cctl: float = 300.0  # an L1 invalidation (CCTL.IVALL)
    lambda_fence: float = 50.0  # a memory fence (MEMBAR)
    lambda_barrier: float = 20.0  # a CTA barrier
    lambda_mma_wait: float = 100.0  # a warpgroup's wait for its wgmma ops (WARPGROUP.DEPBAR): about one HGMMA's latency
    lambda_wave: float = 1000.0  # a wave's fixed cost on its latency path: CTA launch, first round trip, drain
    lambda_serial: float = 4.0  # GPU cycles per warp atomic when all of a launch's atomics hit the same addresses
    kappa_l2: float = 3.0  # L2 bandwidth for spill traffic, in multiples of the DRAM share
    softmax_p: float = 4.0  # the soft maximum's exponent (fitted: how much the terms overlap)
    interval_a: float = 0.02  # log half-width of the interval at a tiny effect
    interval_b: float = 0.5  # ... growing with |log ratio|
    fitted_on: str = "defaults (not fitted)"
    cv: dict[str, Any] = field(default_factory=dict)

    FREE = (
        "trips",
        "trip_scale",
        "lambda_global",
        "lambda_local_l1",
        "lambda_local_l2",
        "lambda_atomic",
        "lambda_reduction",
        "lambda_cctl",
        "lambda_fence",
        "lambda_barrier",
        "kappa_l2",
        "lambda_serial",
        "softmax_p",
        "lambda_mma_wait",
        "lambda_wave",
    )

    def to_json(self) -> JSONObject:
        return {k: getattr(self, k) for k in self.__dataclass_fields__}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Params:
        known = set(cls.__dataclass_fields__)
        return cls(**{k: v for k, v in data.items() if k in known})

    def with_free(self, values: Mapping[str, float]) -> Params:
        data = self.to_json()
        data.update({k: float(v) for k, v in values.items()})
        return Params.from_json(data)


def model_path(path: str | Path | None = None) -> Path | None:
    """The model file a report's predictions come from: ``path``, else ``$KTRIAGE_MODEL``; None: the fit
    shipped with ktriage. One resolution for ``load_params`` and the reports that name the model."""
    given = path or os.environ.get(MODEL_ENV) or None
    return Path(given) if given else None


def load_params(path: str | Path | None = None) -> Params:
    """The parameters: ``path``, else ``$KTRIAGE_MODEL``, else the fit shipped with ktriage."""
    given = model_path(path)
    return _load(str(given) if given else str(PARAMS_FILE))


@lru_cache(maxsize=8)
def _load(path: str) -> Params:
    p = Path(path)
    try:
        data = json.loads(p.read_text())
    except OSError as exc:
        if p == PARAMS_FILE:
            return Params()
        raise FormatError(
            f"cannot read the model parameters {p}: {exc.strerror}",
            f"pass a file written by `ktriage calibrate -o FILE`, or unset {MODEL_ENV}",
        ) from exc
    except ValueError as exc:
        raise FormatError(
            f"the model parameters {p} are not JSON ({exc})", "regenerate them with `ktriage calibrate -o FILE`"
        ) from exc
    if not isinstance(data, dict) or "params" not in data:
        raise FormatError(
            f"{p} has no 'params' object: not a ktriage model file", "regenerate it with `ktriage calibrate -o FILE`"
        )
    return Params.from_json(_as_fitted(_checked(p, data["params"])))


def _checked(p: Path, params: Any) -> Mapping[str, Any]:
    """A model file's parameters as the model can use them: ``from_json`` drops a name it does not know (a
    misspelt ``lamda_wave`` left the default in place without a word) and the model divides by ``softmax_p``
    and ``kappa_l2``, so a name that is no parameter, or a value that is no finite non-negative number (or
    zero where the model divides), is refused here, naming the file, the parameter and the fix."""
    fix = "regenerate it with `ktriage calibrate -o FILE`, or correct the file (docs/model.md lists the parameters)"
    if not isinstance(params, dict):
        raise FormatError(f"{p}: 'params' is not an object of parameter values", fix)
    unknown = sorted(set(params) - set(Params.__dataclass_fields__))
    if unknown:
        raise FormatError(
            f"{p}: {', '.join(repr(k) for k in unknown)} is no parameter of the cost model, and would be ignored",
            f"name the parameters as ktriage does: {', '.join((*Params.FREE, 'interval_a', 'interval_b'))}",
        )
    for name in (*Params.FREE, "interval_a", "interval_b"):
        if name not in params:
            continue
        value = params[name]
        positive = name in ("softmax_p", "kappa_l2")  # the model divides by them
        if (
            isinstance(value, bool)
            or not isinstance(value, int | float)
            or not math.isfinite(value)
            or value < 0
            or (positive and value == 0)
        ):
            need = "a positive number" if positive else "a finite number, 0 or more"
            raise FormatError(f"{p}: {name} is {json.dumps(value)}, not {need}", fix)
    return params


def _as_fitted(params: Mapping[str, Any]) -> Mapping[str, Any]:
    """A fitted model file (``fitted_on``) is read as it was fitted: a term the fit did not have prices nothing.
    ``ktriage calibrate`` wrote files without ``lambda_wave`` before the term existed; the default (1000 cycles, the
    fit's prior) would move their predictions, 0 keeps them. A hand-written file gets the defaults."""
    if "fitted_on" in params and "lambda_wave" not in params:
        return {**params, "lambda_wave": 0.0}
    return params


# --------------------------------------------------------------------------------------- profile


def _width(opcode: str) -> int:
    """Bytes a thread moves: ``.128`` 16 B, ``F32x4`` 16 B, no width suffix 4 B."""
    best = 0
    for m in _WIDTH.finditer(opcode):
        if m.group(1):
            best = max(best, int(m.group(1)) // 8)
        else:
            best = max(best, int(m.group(2)) * int(m.group(3)) // 8)
    return best or 4


@dataclass(frozen=True)
class Profile:
    """What ``estimate`` reads: per category the count outside the main loop and inside it,
    bytes per instruction of the memory categories, and the launch."""

    rest: dict[str, float]
    loop: dict[str, float]
    width: dict[str, float]
    data_bytes: int
    stack_bytes: int
    shared_bytes: int
    ctas_per_sm: int
    num_warps: int
    grid_ctas: int | None
    sm_count: int
    target: str
    # the loads (bytes a thread) outside / inside the loops of the pair's anchor kernel (``anchored``):
    # both kernels of a comparison move the same data, so their trip counts follow from one of them
    anchor_rest_bytes: float | None = None
    anchor_loop_bytes: float | None = None
    anchor_num_warps: int | None = None  # a CTA moves the data: a fix with more warps moves less a thread
    tensor_bytes: float = 0.0  # all tensor arguments' bytes (0: unknown)
    passes: float = 1.0  # innermost loops that load: each streams the data (a two-pass reduction reads it twice)
    anchor_passes: float | None = None
    uniform_indices: bool = False  # every index the launch reads is one value (KernelFacts.uniform_indices)
    # dependent round trips of global loads a loop iteration makes (``load_rounds``); 1: not counted
    load_rounds: float = 1.0
    # shared-memory bank conflicts (``KernelFacts.shared_wavefronts``): mean wavefronts over ideal of the
    # LDS and STS requests (1.0: conflict-free, or not read), and whether every access was rated
    conflict_lds: float = 1.0
    conflict_sts: float = 1.0
    banks_read: bool = False
    # the innermost loops of arithmetic and control only (no memory, barrier or tensor-core instruction),
    # per category, already counted in ``loop``: their trip count does not follow the data the kernel
    # streams (``arithmetic_loop_unrolled_elsewhere``)
    arithmetic_loop: dict[str, float] = field(default_factory=dict)
    arithmetic_loops: int = 0  # how many innermost loops ``arithmetic_loop`` sums
    innermost_loops: int = 0


def load_rounds(f: KernelFacts) -> float:
    """Round trips of global loads per iteration: over the innermost loops that load, the waits an
    iteration makes on its own loads (``LoopFacts.load_waits``), at least one per loop (a loop whose
    loads are consumed only by the next iteration still waits once). 1.0 when any of those loops was
    not counted (facts from an older report: the model's former assumption, one round an iteration)."""
    loading = _loading_loops(f)
    if not loading or any(x.load_waits is None for x in loading):
        return 1.0
    return float(sum(max(1, x.load_waits or 0) for x in loading))


def _loading_loops(f: KernelFacts) -> list[LoopFacts]:
    """The innermost loops that load from global memory: each is a pass over the data, with its own waits."""
    loops = [x for x in ([f.main_loop] if f.main_loop is not None else []) + list(f.other_loops) if x.innermost]
    return [x for x in loops if any(_CATEGORY_OF.get(op) == "ldg" for op in x.opcodes)]


def _load_bytes(p: Profile) -> tuple[float, float]:
    w = p.width.get("ldg", 4.0)
    return p.rest["ldg"] * w, p.loop["ldg"] * w


def arithmetic_loop_unrolled_elsewhere(ref: Profile, new: Profile) -> tuple[Profile, Profile]:
    """The pair with an arithmetic-only loop priced by what the other kernel shows of it, where one kernel
    has such a loop and the other none: the other's assembler unrolled it fully, so its straight-line
    code holds every iteration, and the loop runs as often as that code is longer than the loop kernel's
    own straight-line code. Every innermost loop is otherwise priced at the trip count of
    the data the kernel streams; a loop that loads nothing does not stream it. Seen in inductor's
    cross-entropy backward: a one-hot sum over the vocabulary, 25 iterations, fully unrolled by one ptxas
    (+600 straight-line instructions) and unrolled 12x into a 331-instruction loop by another, was priced
    as 25 x 331 more instructions (0.26x predicted where both measured the same). Not where the other
    kernel keeps as many loops (fla's kkt solve: its loops gained a shared-memory access), nor where its
    straight-line code is not one iteration longer."""
    ra, na = sum(ref.arithmetic_loop.values()), sum(new.arithmetic_loop.values())
    if (ra > 0) == (na > 0):
        return ref, new
    looped, other = (ref, new) if ra > 0 else (new, ref)
    body = ra if ra > 0 else na
    grown = sum(other.rest.values()) - sum(looped.rest.values())
    # unrolled, not rewritten: the other kernel lacks as many innermost loops, and its straight-line code
    # holds at least one iteration's worth more (a loop that gained a shared-memory access is still a loop)
    if other.innermost_loops > looped.innermost_loops - looped.arithmetic_loops or grown < body:
        return ref, new
    trips = grown / body
    moved = replace(
        looped,
        rest={c: looped.rest[c] + trips * looped.arithmetic_loop.get(c, 0.0) for c in ALL_CATEGORIES},
        loop={c: looped.loop[c] - looped.arithmetic_loop.get(c, 0.0) for c in ALL_CATEGORIES},
        arithmetic_loop={},
        arithmetic_loops=0,
        innermost_loops=looped.innermost_loops - looped.arithmetic_loops,
    )
    return (moved, new) if ra > 0 else (ref, moved)


def anchored(ref: Profile, new: Profile) -> tuple[Profile, Profile]:
    """The pair with one anchor for the trip counts: the kernel without a loop that loads, if one of
    them has none (its loads are the whole work, exactly), else the reference. The other kernel's
    loop then runs as often as moving the same bytes takes: a loop unrolled 2x by one toolchain
    runs half as often (less than once, where its static loads exceed one pass of the anchor's: the
    extra copies are predicated off), and a loop against a fully unrolled kernel runs as many times as it
    needs."""
    ref, new = arithmetic_loop_unrolled_elsewhere(ref, new)
    r_rest, r_loop = _load_bytes(ref)
    n_rest, n_loop = _load_bytes(new)
    rest, loop, warps, passes = (
        (n_rest, n_loop, new.num_warps, new.passes)
        if (n_loop <= 0 < r_loop)
        else (r_rest, r_loop, ref.num_warps, ref.passes)
    )
    return (
        replace(ref, anchor_rest_bytes=rest, anchor_loop_bytes=loop, anchor_num_warps=warps, anchor_passes=passes),
        replace(new, anchor_rest_bytes=rest, anchor_loop_bytes=loop, anchor_num_warps=warps, anchor_passes=passes),
    )


def profile(f: KernelFacts) -> Profile:
    total: dict[str, float] = dict.fromkeys(ALL_CATEGORIES, 0.0)
    wsum: dict[str, float] = {}
    warpgroup_ops = waits = 0.0
    for op, n in f.opcodes.items():
        base = op.split(".", 1)[0]
        cat = _CATEGORY_OF.get(base, "alu")
        if base == "WARPGROUP":
            warpgroup_ops += n
            if op.startswith("WARPGROUP.DEPBAR"):
                cat = "mmawait"
                waits += n
        total[cat] += n
        if cat in ("ldg", "stg", "ldl", "stl", "atom", "red", "lds", "sts"):
            wsum[cat] = wsum.get(cat, 0.0) + n * _width(op)
    width = {c: wsum[c] / total[c] for c in wsum if total[c]}
    # Every innermost loop iterates (a two-pass reduction has two, and which one analyze calls "main"
    # can flip between toolchains); innermost loops are disjoint, so no instruction counts twice.
    loop: dict[str, float] = dict.fromkeys(ALL_CATEGORIES, 0.0)
    loops = ([f.main_loop] if f.main_loop is not None else []) + list(f.other_loops)
    innermost = [x for x in loops if x.innermost]
    for body in innermost:
        for op, n in body.opcodes.items():
            if op == "WARPGROUP" and warpgroup_ops:
                # a loop's opcodes carry no modifiers: its WARPGROUP ops are waits in the kernel's proportion
                loop["mmawait"] += n * waits / warpgroup_ops
                loop["bar"] += n * (1.0 - waits / warpgroup_ops)
            else:
                loop[_CATEGORY_OF.get(op, "alu")] += n
    arithmetic: dict[str, float] = {}
    arithmetic_bodies = [x for x in innermost if all(_CATEGORY_OF.get(op, "alu") in _ARITHMETIC for op in x.opcodes)]
    for body in arithmetic_bodies:
        for op, n in body.opcodes.items():
            cat = _CATEGORY_OF.get(op, "alu")
            arithmetic[cat] = arithmetic.get(cat, 0.0) + n
    rest = {c: max(0.0, total[c] - loop[c]) for c in ALL_CATEGORIES}
    return Profile(
        rest,
        loop,
        width,
        f.data_bytes or 0,
        f.stack_bytes,
        f.shared_bytes,
        f.ctas_per_sm,
        f.num_warps,
        f.grid_ctas,
        f.sm_count,
        f.target,
        uniform_indices=f.uniform_indices,
        passes=float(max(1, len(_loading_loops(f)))),
        tensor_bytes=float(f.tensor_bytes or 0),
        load_rounds=load_rounds(f),
        conflict_lds=f.shared_wavefronts.get("LDS", 1.0),
        conflict_sts=f.shared_wavefronts.get("STS", 1.0),
        banks_read=bool(f.shared_wavefronts) and not f.shared_wavefronts.get("unrated", 0.0),
        arithmetic_loop=arithmetic,
        arithmetic_loops=len(arithmetic_bodies),
        innermost_loops=len(innermost),
    )


# --------------------------------------------------------------------------------------- estimate


@lru_cache(maxsize=32)
def _throughput(target: str) -> tuple[float, float, float]:
    """(DRAM bytes per SM cycle per SM, SM count default, L2 bytes per SM cycle to one SM) of the target's usual
    part (``arch.Throughput``)."""
    try:
        arch = parse_arch(target)
    except SpecError:
        arch = parse_arch("sm_90")
    t = arch.throughput
    sms = arch.default_sm_count or 132
    return t.dram_bytes_per_s / (t.sm_clock_hz * sms), float(sms), t.l2_bytes_per_clk


_MEMORY_CATS = ("ldg", "stg", "atom", "red")


class _Scalar:
    """The four array functions the formula needs, for plain floats (one kernel: explain, tune).
    numpy provides the same names for arrays (a dataset: the fit), so the formula is written once
    (``_cycles``) and explain does not pay numpy's import."""

    @staticmethod
    def ceil(x: Any) -> Any:
        return float(math.ceil(x))

    @staticmethod
    def maximum(a: Any, b: Any) -> Any:
        return max(a, b)

    @staticmethod
    def minimum(a: Any, b: Any) -> Any:
        return min(a, b)

    @staticmethod
    def where(cond: Any, a: Any, b: Any) -> Any:
        return a if cond else b


def _soft_max(terms: Sequence[Any], q: float, xp: Any) -> Any:
    """``(sum of the terms' q-th powers)^(1/q)``: the launch's cycles from its overlapping bounds. Where that
    overflows (a large exponent: the fit may reach 80, a hand-edited file more, and a launch's cycles to such a
    power exceed a float; Python raised OverflowError, numpy gave inf), the same value relative to the largest
    term. Only there: elsewhere the direct form is kept, so the committed fit reproduces to the bit."""
    try:
        direct = sum(t**q for t in terms) ** (1.0 / q)
    except OverflowError:  # plain floats (explain, tune); numpy's arrays give inf instead
        direct = math.inf
    if math.isfinite(direct) if xp is _Scalar else bool(xp.isfinite(direct).all()):
        return direct  # the usual case: the fit's loss, evaluated thousands of times, pays for nothing more
    largest = terms[0]
    for t in terms[1:]:
        largest = xp.maximum(largest, t)
    scale = xp.maximum(largest, 1e-30)
    relative = scale * sum((t / scale) ** q for t in terms) ** (1.0 / q)
    return relative if xp is _Scalar else xp.where(xp.isfinite(direct), direct, relative)


def _cycles(c: Mapping[str, Any], params: Params, xp: Any) -> dict[str, Any]:
    """The model of the module docstring over columns ``c`` (floats, or numpy arrays with ``xp=numpy``):
    ``rest_<cat>``, ``loop_<cat>``, ``width_<cat>``, ``stack``, ``shared``, ``ctas``, ``num_warps``,
    ``grid``, ``sms``, ``bw``. Cycles of the launch on its busiest SM (``total``; ``ctas`` > 0: the
    caller answers inf where no CTA fits) and its parts."""
    ctas = xp.maximum(c["ctas"], 1.0)
    per_sm = xp.ceil(c["grid"] / c["sms"])  # CTAs the busiest SM runs over the launch
    waves = xp.ceil(per_sm / ctas)
    resident = xp.minimum(ctas, per_sm)
    warps = resident * c["num_warps"]
    # trips: the data the main loop streams through, shared by the grid, over what a CTA loads an
    # iteration (bytes, so a change of load width keeps the count); the fitted constant without a size
    cta_loop_bytes = 32.0 * c["anchor_num_warps"] * c["anchor_loop_bytes"]
    streamed = params.trip_scale * c["anchor_passes"] * c["data"] / (c["grid"] * xp.maximum(cta_loop_bytes, 1.0))
    # (a tensor-core kernel re-reads its tiles, so its data size says nothing of its K loop: the constant)
    no_tensor_core = (c["rest_mma"] + c["loop_mma"]) <= 0
    streams = (c["data"] > 0) & (c["grid_known"] > 0) & (c["anchor_loop_bytes"] > 0) & no_tensor_core
    anchor_trips = xp.where(streams, xp.minimum(xp.maximum(streamed, 1.0), 4096.0), params.trips)
    # a loop that streams whose data size or grid is unknown runs the fitted constant: said by tune (1.0),
    # since its trip count then does not follow a config's loop step
    fixed_trips = xp.where(streams, 0.0, xp.where((c["anchor_loop_bytes"] > 0) & no_tensor_core, 1.0, 0.0))
    # the bytes the anchor loads a thread, and this kernel's loop runs as often as loading them takes, even
    # less than once: where its loops' static loads exceed what the anchor moves in one pass (Triton 3.3.1's
    # layer_norm fwd unrolls its variance loop 4x further than 3.6.0 at N=1024..2048, where each of the three
    # loops runs once), the extra copies are predicated off; a floor of 1 priced them as +49 %
    moved = (c["anchor_rest_bytes"] + anchor_trips * c["anchor_loop_bytes"]) * c["anchor_num_warps"] / c["num_warps"]
    own_loop = c["loop_ldg"] * c["width_ldg"]
    own_rest = c["rest_ldg"] * c["width_ldg"]
    trips = xp.where(
        own_loop > 0,
        xp.minimum(xp.maximum((moved - own_rest) / xp.maximum(own_loop, 1e-9), MIN_TRIPS_OF_THE_OTHER), 4096.0),
        params.trips,
    )
    n = {cat: c[f"rest_{cat}"] + trips * c[f"loop_{cat}"] for cat in ALL_CATEGORIES}
    issue = sum(n[cat] * ISSUE_COST.get(cat, 1.0) for cat in ALL_CATEGORIES)
    # local memory: the share of the spill footprint that does not fit next to shared memory in L1
    footprint = c["stack"] * 32.0 * warps
    l1 = xp.maximum(16 * 1024.0, L1_BYTES_PER_SM - c["shared"] * resident)
    out = xp.where(footprint > l1, (footprint - l1) / xp.maximum(footprint, 1.0), 0.0)
    lam_local = params.lambda_local_l1 + out * (params.lambda_local_l2 - params.lambda_local_l1)
    rounds = xp.where(c["rest_ldg"] > 0, 1.0, 0.0) + xp.where(c["loop_ldg"] > 0, trips * c["load_rounds"], 0.0)
    latency = (
        issue
        + params.lambda_global * rounds
        + lam_local * n["ldl"]
        + params.lambda_atomic * n["atom"]
        + params.lambda_reduction * n["red"]
        + params.lambda_cctl * n["cctl"]
        + params.lambda_fence * n["fence"]
        + params.lambda_barrier * n["bar"]
        + params.lambda_mma_wait * n["mmawait"]
    )
    global_bytes = 32.0 * sum(n[cat] * c[f"width_{cat}"] for cat in _MEMORY_CATS)
    local_bytes = 32.0 * (n["ldl"] * c["width_ldl"] + n["stl"] * c["width_stl"]) * out
    all_warps = per_sm * c["num_warps"]  # the SM's warps over the whole launch
    # a tensor-core kernel re-reads its operand tiles: its loads are served by L2 (kappa_l2 x the DRAM share)
    global_bw = c["bw"] * xp.where(no_tensor_core, 1.0, params.kappa_l2)
    # DRAM moves each of the launch's tensors once: where their bytes are known (a recorded launch), a CTA's global
    # traffic beyond its share of them re-reads what is already on chip (masked lanes the static loads count, a
    # second and third pass over a row, a row of weights every CTA reads) and is served at L2's rate; where they
    # are not, the later passes of a multi-pass streaming loop (``passes``) are
    unique = c["tensor_bytes"] / (c["grid"] * c["num_warps"])
    known = (c["tensor_bytes"] > 0) & (c["grid_known"] > 0) & no_tensor_core
    passes_reread = (
        xp.where(streams, 1.0 - 1.0 / xp.maximum(c["anchor_passes"], 1.0), 0.0) * 32.0 * n["ldg"] * c["width_ldg"]
    )
    reread = xp.where(known, xp.maximum(global_bytes - unique, 0.0), passes_reread)
    bandwidth = all_warps * (
        (global_bytes - reread) / global_bw + reread / c["l2_bw"] + local_bytes / (c["bw"] * params.kappa_l2)
    )
    issue_sm = all_warps / 4.0 * issue
    latency_sm = waves * (latency + params.lambda_wave)  # each wave of resident CTAs: its fixed cost, its critical path
    # same-address atomics (a scatter whose indices are all one value): the L2 executes them one after
    # another, GPU-wide, returning (ATOMG) or not (REDG) alike, so their latency difference is hidden
    serial = c["uniform"] * c["grid"] * c["num_warps"] * (n["atom"] + n["red"]) * params.lambda_serial
    # bank conflicts: the SM's shared-memory pipe serves one 128-byte wavefront a cycle; a conflict-free
    # request of w bytes a lane takes w/4 of them (priced with the instruction, as the fit has it), a
    # request conflicted f-fold (f - 1) times that more, which only this term prices
    # (a broadcast can take fewer wavefronts than conflict-free: no excess then, never a negative one)
    excess_lds = xp.maximum(c["conflict_lds"] - 1.0, 0.0) * xp.maximum(c["width_lds"] / 4.0, 1.0)
    excess_sts = xp.maximum(c["conflict_sts"] - 1.0, 0.0) * xp.maximum(c["width_sts"] / 4.0, 1.0)
    excess_waves = n["lds"] * excess_lds + n["sts"] * excess_sts
    shared_sm = all_warps * excess_waves
    total = _soft_max((issue_sm, latency_sm, bandwidth, serial, shared_sm), params.softmax_p, xp)
    return {
        "total": total,
        "issue": issue_sm,
        "latency": latency_sm,
        "bandwidth": bandwidth,
        "serial": serial,
        "shared": shared_sm,
        "waves": waves,
        "resident_ctas": resident,
        "spill_out_of_l1": out,
        "fixed_trips": fixed_trips,
    }


def _columns(p: Profile) -> dict[str, float]:
    bw, _, l2_bw = _throughput(p.target)
    cols = {
        "data": float(p.data_bytes),
        "grid_known": 1.0 if p.grid_ctas else 0.0,
        "stack": float(p.stack_bytes),
        "shared": float(p.shared_bytes),
        "ctas": float(p.ctas_per_sm),
        "num_warps": float(p.num_warps),
        "grid": float(p.grid_ctas or UNKNOWN_GRID_PER_SM * p.sm_count),
        "sms": float(p.sm_count),
        "bw": bw,
        "l2_bw": l2_bw,
        "uniform": 1.0 if p.uniform_indices else 0.0,
        "load_rounds": p.load_rounds,
        "tensor_bytes": p.tensor_bytes,
        "anchor_passes": p.passes if p.anchor_passes is None else p.anchor_passes,
        "conflict_lds": p.conflict_lds,
        "conflict_sts": p.conflict_sts,
    }
    own_rest, own_loop = _load_bytes(p)
    cols["anchor_rest_bytes"] = own_rest if p.anchor_rest_bytes is None else p.anchor_rest_bytes
    cols["anchor_loop_bytes"] = own_loop if p.anchor_loop_bytes is None else p.anchor_loop_bytes
    cols["anchor_num_warps"] = float(p.num_warps if p.anchor_num_warps is None else p.anchor_num_warps)
    for cat in ALL_CATEGORIES:
        cols[f"rest_{cat}"] = p.rest[cat]
        cols[f"loop_{cat}"] = p.loop[cat]
        cols[f"width_{cat}"] = p.width.get(cat, 4.0)
    return cols


@dataclass(frozen=True)
class Batch:
    """Profiles stacked into numpy columns: ``estimate_many`` prices a whole dataset in one pass."""

    columns: dict[str, Any]
    fits: Any  # ctas > 0

    def take(self, idx: Any) -> Batch:
        return Batch({k: v[idx] for k, v in self.columns.items()}, self.fits[idx])


def stack(profiles: list[Profile]) -> Batch:
    import numpy as np

    rows = [_columns(p) for p in profiles]
    keys = rows[0].keys() if rows else _columns(profile_of_nothing()).keys()
    return Batch(
        {k: np.array([r[k] for r in rows], dtype=float) for k in keys},
        np.array([p.ctas_per_sm > 0 for p in profiles], dtype=bool),
    )


def profile_of_nothing() -> Profile:
    zero = dict.fromkeys(ALL_CATEGORIES, 0.0)
    return Profile(zero, dict(zero), {}, 0, 0, 0, 1, 1, 1, 1, "sm_90")


def estimate_many(b: Batch, params: Params) -> Any:
    """Cycles of each launch of the batch (inf where no CTA fits), as a numpy array."""
    import numpy as np

    with np.errstate(over="ignore"):
        cycles = _cycles(b.columns, params, np)["total"]
    return np.where(b.fits, cycles, np.inf)


def estimate(p: Profile, params: Params) -> float:
    """Cycles of one kernel at its launch (pure Python: no numpy in explain's path)."""
    if p.ctas_per_sm <= 0:
        return math.inf
    return float(_cycles(_columns(p), params, _Scalar)["total"])


def breakdown(p: Profile, params: Params) -> dict[str, float]:
    """``estimate`` with its parts (issue, latency, bandwidth cycles; waves; resident CTAs per SM;
    the share of spill traffic that leaves L1; ``fixed_trips`` 1.0 where a loading loop ran the fitted trip
    count for want of the data size or the grid): what tune's screening prints."""
    if p.ctas_per_sm <= 0:
        return {
            "total": math.inf,
            "issue": math.inf,
            "latency": math.inf,
            "bandwidth": math.inf,
            "serial": 0.0,
            "shared": 0.0,
            "waves": 0.0,
            "resident_ctas": 0.0,
            "spill_out_of_l1": 0.0,
            "fixed_trips": 0.0,
        }
    return {k: float(v) for k, v in _cycles(_columns(p), params, _Scalar).items()}


# --------------------------------------------------------------------------------------- predict


@dataclass(frozen=True)
class Contributor:
    """One aspect's share of a predicted change: ``share`` is t(new)/t(new, aspect as in ref) - 1."""

    aspect: str
    share: float
    evidence: str

    def text(self) -> str:
        """``1134 more LDL/STL in the main loop (local memory (spills)), +304% on its own``: the one home of
        how a contributor reads, wherever a prediction is written (explain, bisect, triage, fixes).

        Why the evidence first and "on its own": written ``+304%: 1134 more ...`` right after the prediction's
        own ``predicted +467% [+449%, +486%]``, two percentages stood in a row with different meanings (the
        kernel's predicted change, then this aspect's), and a -23% contributor of a +4% prediction read as a
        second prediction. The share is how much this aspect alone moves the new kernel's time, written as
        the prediction is (``percent_text``: under one percent with a decimal), so a -0.6% prediction's
        contributor never reads "-1% on its own"."""
        return f"{self.evidence}, {percent_text(self.share * 100)} on its own"

    def to_json(self) -> JSONObject:
        return {"aspect": self.aspect, "share": round(self.share, 4), "evidence": self.evidence, "text": self.text()}


@dataclass(frozen=True)
class Prediction:
    """The predicted new/ref time ratio of one kernel, its interval and what drives it."""

    ratio: float
    low: float
    high: float
    kind: str  # regression | improvement | neutral
    identical: bool
    threshold: float
    contributors: tuple[Contributor, ...] = ()
    # what the model cannot see in this pair, said where it matters: a change predicted neutral
    # whose shared-memory accesses changed (``blind_spot``)
    blind_spot: str | None = None
    # a neutral prediction whose point is beyond the gate: which way, and how often such leans held (``lean_text``)
    lean_note: str | None = None

    @property
    def impact(self) -> float:
        """|log ratio|: how much the change is predicted to matter, for ranking."""
        return abs(math.log(self.ratio)) if self.ratio > 0 and math.isfinite(self.ratio) else math.inf

    @property
    def lean(self) -> str | None:
        """For a change predicted neutral whose point lies beyond the gate but whose interval reaches
        inside it: the side the point is on ("regression" or "improvement"), else None. A user reads
        "-8% [-11%, -4.6%], neutral" differently from "+0.2% [-3%, +3%], neutral": the first is
        likely faster, only not certainly beyond the gate."""
        if self.kind != "neutral" or self.identical:
            return None
        return beyond_gate(self.ratio, self.threshold)

    def percent(self) -> str:
        return pct(self.ratio)

    def interval_text(self) -> str:
        """``[-11%, -4.6%]`` (``interval_text``: one decimal within a point of the gate, rounded outward)."""
        return interval_text(self.low, self.high, self.threshold)

    def text(self, limit: int = 3, *, blind_spot: bool = True, at: str = "") -> str:
        """``predicted +38% [+25%, +52%]: 830 more LDL/STL in the main loop (local memory (spills)), +30% on its
        own; ...`` (``Contributor.text``); ``at``: which
        input of several this is (``at N=8192, the largest of 8 inputs``)."""
        if self.identical:
            return "identical kernels: no change predicted"
        head = f"predicted {pct(self.ratio)} {self.interval_text()}" + (f" {at}" if at else "")
        parts = [c.text() for c in self.contributors[:limit] if abs(c.share) >= 0.005]
        spot = f"; blind spot: {self.blind_spot}" if blind_spot and self.blind_spot else ""
        return head + (": " + "; ".join(parts) if parts else "") + spot

    def to_json(self) -> JSONObject:
        def num(v: float) -> float | None:  # JSON has no inf: a kernel that cannot launch has no ratio
            return round(v, 4) if math.isfinite(v) else None

        return {
            "ratio": num(self.ratio),
            "low": num(self.low),
            "high": num(self.high),
            "kind": self.kind,
            "lean": self.lean,
            "identical": self.identical,
            "threshold": self.threshold,
            "contributors": [c.to_json() for c in self.contributors],
            "blind_spot": self.blind_spot,
            "lean_note": self.lean_note,
            "text": self.text(),
        }


def pct(r: float) -> str:
    """A ratio as a signed change, ``+38%``; under one percent with a decimal, ``-0.4%``. A change that
    rounds to nothing reads ``+0.0%``, never ``-0.0%`` (a ratio of 0.9999 is no speedup to report)."""
    if not math.isfinite(r):
        return "n/a"
    return percent_text((r - 1) * 100)


def percent_text(x: float) -> str:
    """A signed change already in percent (``pct``'s rule: whole percent from one up, one decimal under
    it, ``+0.0%`` for nothing), for a change that is no ratio (a contributor's share)."""
    if not math.isfinite(x):
        return "n/a"
    if abs(x) >= 1:
        return f"{x:+.0f}%"
    return f"{round(x, 1):+.1f}%" if round(x, 1) != 0 else "+0.0%"


def pct_bound(r: float, *, upper: bool, threshold: float = DEFAULT_THRESHOLD) -> str:
    """One end of an interval as ``pct`` writes it, except within a point of the gate (``+threshold``
    above, ``1/(1+threshold) - 1`` below): there with one decimal, rounded outward (the low end down, the
    high end up). Why: rounded to the nearest percent, a neutral prediction's interval 0.893..0.953 read
    "[-11%, -5%]", wholly beyond a -5% gate, next to words that say it reaches inside it."""
    if not math.isfinite(r):
        return "n/a"
    x = (r - 1.0) * 100.0
    gates = (threshold * 100.0, (1.0 / (1.0 + threshold) - 1.0) * 100.0)
    if not any(abs(x - g) < 1.0 for g in gates):
        return pct(r)
    tenths = math.ceil(x * 10.0 - 1e-9) if upper else math.floor(x * 10.0 + 1e-9)
    return f"{tenths / 10.0:+.1f}%"


def interval_text(low: float, high: float, threshold: float = DEFAULT_THRESHOLD) -> str:
    """``[-11%, -4.6%]``: a predicted interval, each end as ``pct_bound`` writes it."""
    return f"[{pct_bound(low, upper=False, threshold=threshold)}, {pct_bound(high, upper=True, threshold=threshold)}]"


def beyond_gate(ratio: float, threshold: float) -> str | None:
    """The side of the gate a ratio lies beyond ("regression" above ``1+threshold``, "improvement" below
    its inverse), or None inside it or where there is no finite ratio."""
    if not math.isfinite(ratio):
        return None
    gate = 1.0 + threshold
    if ratio > gate:
        return "regression"
    if ratio < 1.0 / gate:
        return "improvement"
    return None


def classify(low: float, high: float, threshold: float) -> str:
    """regression when the whole interval is above the gate, improvement when below, else neutral."""
    gate = 1.0 + threshold
    if low > gate:
        return "regression"
    if high < 1.0 / gate:
        return "improvement"
    return "neutral"


def interval(ratio: float, params: Params) -> tuple[float, float]:
    half = params.interval_a + params.interval_b * abs(math.log(ratio))
    return ratio * math.exp(-half), ratio * math.exp(half)


def predict(
    ref: KernelFacts,
    new: KernelFacts,
    params: Params | None = None,
    *,
    threshold: float = DEFAULT_THRESHOLD,
    contributors: bool = True,
) -> Prediction:
    """The predicted ratio of ``new`` against ``ref`` (same kernel, same launch)."""
    params = params or load_params()
    if ref.digest() == new.digest():
        return Prediction(1.0, 1.0, 1.0, "neutral", True, threshold)
    pr, pn = anchored(profile(ref), profile(new))
    variants = _counterfactuals(pr, pn) if contributors else []
    times = [estimate(v, params) for v in [pr, pn] + [v for _, v, _ in variants]]
    t_ref, t_new = times[0], times[1]
    if not (math.isfinite(t_ref) and math.isfinite(t_new)) or t_ref <= 0:
        ratio = math.inf if not math.isfinite(t_new) else 1.0
        return Prediction(ratio, ratio, ratio, "regression" if ratio > 1 else "neutral", False, threshold)
    ratio = t_new / t_ref
    low, high = interval(ratio, params)
    parts: list[Contributor] = []
    for (aspect, _, words), t in zip(variants, times[2:]):
        parts.append(Contributor(aspect, t_new / float(t) - 1.0 if t > 0 and math.isfinite(t) else 0.0, words))
    parts.sort(key=lambda c: -abs(c.share))
    kind = classify(low, high, threshold)
    blind = blind_spot_text(params) if kind == "neutral" and in_blind_spot(pr, pn) else None
    prediction = Prediction(ratio, low, high, kind, False, threshold, tuple(parts), blind)
    return (
        replace(prediction, lean_note=lean_text(prediction.lean, threshold, params)) if prediction.lean else prediction
    )


def lean_text(lean: str, threshold: float, params: Params | None = None) -> str:
    """What a neutral prediction leaning one way says: the side, and, at the threshold the calibration used,
    how many of its held-out leans that side measured so (``Params.cv["leans"]``): a lean is weak evidence
    (held out, most of the leans to faster were Liger's layer_norm bwd at N >= 8704, which measure the same)."""
    side = "slower" if lean == "regression" else "faster"
    words = f"leans {side}: the point is beyond the {gate_band(threshold)} gate, the interval reaches inside it"
    counts = ((params.cv.get("leans") or {}).get(lean) or {}) if params else {}
    if counts.get("neutral") and params and params.cv.get("threshold") == threshold:
        words += (
            f"; {counts.get(f'measured_{lean}', 0)} of {counts['neutral']} such held-out leans measured {side}"
            " in the calibration"
        )
    return words


SHARED_MEMORY_CATEGORIES = ("lds", "ldsm", "sts")


def shared_memory_changed(pr: Profile, pn: Profile) -> bool:
    """Whether the pair's shared-memory accesses differ (LDS/LDSM/STS/STSM counts, in or out of the
    loops, or widths). Their bank conflicts depend on the addresses: on the H200, Triton 3.3.1's layout
    conversions through shared memory are 4-8-way conflicted where 3.6.0's are not (+14..47 %,
    ``benchmarks/calibration/misses``); the model prices them where ``analyze.shared_banks`` read every
    address (``in_blind_spot`` otherwise)."""
    return any(
        pr.rest[c] != pn.rest[c] or pr.loop[c] != pn.loop[c] or pr.width.get(c) != pn.width.get(c)
        for c in SHARED_MEMORY_CATEGORIES
    )


def in_blind_spot(pr: Profile, pn: Profile) -> bool:
    """The pair's shared-memory accesses changed and the bank analysis could not read every address of
    both kernels (or the facts predate it): their conflicts are then unpriced (``blind_spot``)."""
    return shared_memory_changed(pr, pn) and not (pr.banks_read and pn.banks_read)


def blind_spot_text(params: Params) -> str:
    """What a neutral prediction with changed shared-memory accesses says, with the calibration's
    held-out rate of such cells that measured a regression when the fit recorded it
    (``Params.cv["blind_spots"]``)."""
    words = "shared-memory accesses changed and not all their addresses could be read: bank conflicts unpriced"
    spots = params.cv.get("blind_spots") or {}
    seen, other = spots.get("shared_memory") or {}, spots.get("other") or {}
    if seen.get("neutral"):
        words += (
            f"; {seen['measured_regression']} of {seen['neutral']} such neutral predictions measured slower"
            " in the calibration"
            + (f" ({other['measured_regression']} of {other['neutral']} other ones)" if other.get("neutral") else "")
        )
    return words + "; `ktriage profile` counts them"


def _swap(p: Profile, q: Profile, cats: tuple[str, ...]) -> Profile:
    rest, loop, width = dict(p.rest), dict(p.loop), dict(p.width)
    for c in cats:
        rest[c], loop[c] = q.rest[c], q.loop[c]
        if c in q.width:
            width[c] = q.width[c]
        else:
            width.pop(c, None)
    swapped = replace(p, rest=rest, loop=loop, width=width)
    if "lds" in cats:  # the shared-memory aspect takes the reference's bank conflicts too
        swapped = replace(swapped, conflict_lds=q.conflict_lds, conflict_sts=q.conflict_sts)
    return swapped


def _count_words(cats: tuple[str, ...], pr: Profile, pn: Profile) -> str:
    """What moved in these categories, in the words of the SASS."""
    in_loop = sum(pn.loop[c] - pr.loop[c] for c in cats)
    total = sum(pn.loop[c] + pn.rest[c] - pr.loop[c] - pr.rest[c] for c in cats)
    names = "/".join(dict.fromkeys(op for c in cats for op in CATEGORIES.get(c, ())[:1]))
    if in_loop and abs(in_loop) >= abs(total) / 2:
        return f"{abs(in_loop):.0f} {'more' if in_loop > 0 else 'fewer'} {names} in the main loop"
    if total:
        return f"{abs(total):.0f} {'more' if total > 0 else 'fewer'} {names}"
    return f"{names} variants changed"


def _counterfactuals(pr: Profile, pn: Profile) -> list[tuple[str, Profile, str]]:
    """(aspect, the new kernel with that aspect as in the reference, evidence in words)."""
    out: list[tuple[str, Profile, str]] = []
    if (pr.ctas_per_sm, pr.stack_bytes) != (pn.ctas_per_sm, pn.stack_bytes):
        words = f"CTAs/SM {pr.ctas_per_sm} -> {pn.ctas_per_sm}" if pr.ctas_per_sm != pn.ctas_per_sm else "occupancy"
        if pr.stack_bytes != pn.stack_bytes:
            words += f", stack {pr.stack_bytes} -> {pn.stack_bytes} B (spill footprint in L1)"
        out.append(("occupancy", replace(pn, ctas_per_sm=pr.ctas_per_sm, stack_bytes=pr.stack_bytes), words))
    if pr.load_rounds != pn.load_rounds:
        words = (
            f"an iteration waits on its global loads {pr.load_rounds:.0f} -> {pn.load_rounds:.0f} times"
            " (dependent round trips to memory)"
        )
        out.append(("load_rounds", replace(pn, load_rounds=pr.load_rounds), words))
    for aspect, (cats, title) in ASPECTS.items():
        banks_moved = "lds" in cats and (pr.conflict_lds, pr.conflict_sts) != (pn.conflict_lds, pn.conflict_sts)
        if not banks_moved and all(
            pr.rest[c] == pn.rest[c] and pr.loop[c] == pn.loop[c] and pr.width.get(c) == pn.width.get(c) for c in cats
        ):
            continue
        moved = _count_words(cats, pr, pn)
        if banks_moved:
            moved += (
                f", bank conflicts LDS x{pr.conflict_lds:.1f} -> x{pn.conflict_lds:.1f}, "
                f"STS x{pr.conflict_sts:.1f} -> x{pn.conflict_sts:.1f} (wavefronts a request over conflict-free)"
            )
        if aspect == "global" and any(pr.width.get(c) != pn.width.get(c) for c in ("ldg", "stg")):
            moved += f" (bytes per load {pr.width.get('ldg', 0):.0f} -> {pn.width.get('ldg', 0):.0f})"
        if aspect == "atomics":

            def tot(p: Profile, c: str) -> float:
                return p.rest[c] + p.loop[c]

            moved = (
                f"returning atomics {tot(pr, 'atom'):.0f} -> {tot(pn, 'atom'):.0f}, reductions "
                f"{tot(pr, 'red'):.0f} -> {tot(pn, 'red'):.0f}, CCTL {tot(pr, 'cctl'):.0f} -> {tot(pn, 'cctl'):.0f}"
            )
        out.append((aspect, _swap(pn, pr, cats), f"{moved} ({title})"))
    covered = {c for cats, _ in ASPECTS.values() for c in cats}
    others = tuple(c for c in ALL_CATEGORIES if c not in covered)
    if any(pr.rest[c] != pn.rest[c] or pr.loop[c] != pn.loop[c] for c in others):
        # Counted as the swap prices them: the arithmetic and control categories only, over every innermost
        # loop (``profile``). The words said "main loop" and counted every category, so that beside the
        # evidence's "main loop 824 -> 782 (-42)" with LDL/STL -2 (Liger's cross entropy, which has three
        # innermost loops) they read "main loop -41 instructions (arithmetic and control)": neither count.
        li = sum(pn.loop[c] - pr.loop[c] for c in others)
        ti = sum(pn.loop[c] + pn.rest[c] - pr.loop[c] - pr.rest[c] for c in others)
        words = f"{li if li else ti:+.0f} arithmetic and control instructions" + (
            " in the innermost loops" if li else ""
        )
        out.append(("instructions", _swap(pn, pr, others), words))
    return out
