"""The config-ranking part of ktriage's one cost model (``predict.model``): ``ktriage tune``
(tune/screen.py), the ``triton.autotune`` prune hook (tune/autotune.py) and ``explain --fixes`` rank
a config set with it, so every entry point ranks the same way.

Every estimate is a ranking score for configs of ONE kernel at ONE problem size, from compile-side
facts only (screening runs on CPU machines; its job is to cut the candidates a GPU must time).

**Tensor-core kernels (``tl.dot``: the SASS has HGMMA/HMMA, the PTX wgmma/mma.sync) whose config names
the tile (BLOCK_M/N/K)**: :func:`mma_estimate`, the tile model. Per K step a CTA does ``2*BM*BN*BK``
flops against the tensor-core rate and reads ``(BM+BN)*BK`` elements against the L2 operand bandwidth
(arithmetic intensity); the bandwidth counts as far as ``(num_stages-1)`` pipelined steps of every
resident CTA are in flight (Little's law); the K loop has ``ceil(K/BK)`` steps; CTAs/SM are the exact
occupancy; the grid (``cdiv(M,BM)*cdiv(N,BN)`` for a matmul: derived from the block sizes, never the
start config's grid) runs in ``ceil(tiles / (CTAs/SM * SMs))`` waves. Cycles of the whole launch;
:func:`tile_estimate` is the one entry point both callers use (tune converts cycles to us at the SM
clock).

**Ties** (:func:`ties_first_by`): estimates within the model's interval of the best (``interval_a`` of
the parameters in use: ``--model``, ``$KTRIAGE_MODEL`` or the shipped fit) are ties, ranked by the smallest
change from the start config (:func:`change_from_default`), the start config itself first. ``ktriage tune``
(through ``tune.screen.ties_first``), the spill-free fix search and the autotune hook order with it.

**Everything else** (reductions, pointwise): tune ranks with :func:`estimate`, the time of
``predict.model`` (it has the SASS: the main loop, spills against L1, atomics, occupancy and waves,
with the fitted parameters explain uses); the hook, which has only the ptxas log, ranks with
:func:`stream_estimate` (latency hiding from bytes or warps in flight per SM, idle SMs).

The roofline terms :func:`estimate` still reports as words (the model's own parts are issue,
latency per wave and bandwidth, ``predict/model.py``):

- **waves** = ceil(grid / (ctas_per_sm * sm_count)): a grid that needs 2.1 waves pays for 3;
- **latency hiding** (Little's law): an SM reaches full memory bandwidth only with enough bytes in
  flight, ``BW * latency / sm_count``. Bytes in flight per SM ~ resident warps x 32 threads x the
  global-load bytes one thread issues per pass of the kernel body (static SASS count: the loads a
  warp can have outstanding at once). ``efficiency = min(1, in_flight / needed)``;
- **bytes per CTA** over the CTA's **bandwidth share** (``BW / (sm_count * resident CTAs)``):
  useful bytes (static SASS global loads+stores x threads, a one-pass lower bound) plus the spill
  traffic (ptxas spill store+load bytes x threads): spills are real memory traffic;
- **compute**: static SASS instructions x warps / (4 warp-instructions per clock per SM x clock).

The facts are explain's for the config's launch (``predict.facts.facts_for_launch``): where the launch
names its data (a recorded label, a by-value spec's tensor shapes, a catalog op's shape) the main loop runs
as often as that data over the config's loop step takes, so a smaller BLOCK runs more iterations, not
less data. Where it does not (a spec without tensor shapes or grid), the trip count is the model's fitted
constant, the same for every config: a block size that changes the loop's step cannot be ranked then
(``Estimate.fixed_trips``; tune says so). Either way the number is a ranking score in microsecond units,
not a measurement.
Device speeds are per compute capability for the usual datacenter part (sm_90: H200), from
:class:`ktriage.arch.Throughput` (the one home of GPU-target facts).
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar

from ktriage.analyze.occupancy import Occupancy
from ktriage.analyze.resources import Resources
from ktriage.arch import parse_arch, throughput
from ktriage.predict.facts import element_bytes, facts_for_launch
from ktriage.predict.model import Params, breakdown, load_params, profile
from ktriage.schema.jsontypes import JSONObject
from ktriage.spec.model import KernelSpec

_GLOBAL_MEM = re.compile(r"^(LDG|STG|ATOMG|REDG)\b")
_WIDTH = re.compile(r"\.(8|16|32|64|128)\b")
# Resident warps per SM beyond which a streaming kernel's memory latency is hidden (Little's law on
# Hopper: ~600 ns x ~4.8 TB/s / 132 SMs is ~22 KB in flight per SM, ~16 warps with a few 512 B loads).
DEFAULT_SATURATION_WARPS = 16
# Spilled bytes per thread that cost about as much as the whole kernel (a crude scale, see warps_estimate()).
SPILL_COST_BYTES = 1024
# Bytes of loads in flight per SM that hide DRAM latency on Hopper (Little's law: ~4.8 TB/s x ~700 ns
# / 132 SMs is ~25 KB; rounded up). Used when the tile size is known from BLOCK constexprs.
DEFAULT_SATURATION_BYTES = 32 * 1024
_BLOCK_NAME = {axis: re.compile(rf"^(BLOCK_SIZE_|BLOCK_|TILE_|B){axis}$") for axis in "MNK"}


@dataclass(frozen=True)
class Estimate:
    """The model's pieces for one config (all per launch)."""

    grid_ctas: int
    waves: int
    resident_ctas_per_sm: int
    bytes_per_cta: int
    spill_bytes_per_cta: int
    memory_efficiency: float
    memory_us: float
    compute_us: float
    estimate_us: float
    model: str = "cost model"  # "cost model" (estimate(): predict.model) or "mma" (the tile model, tile_estimate())
    detail: str = ""  # the tile model's inputs in words
    # the main loop ran the model's fitted trip count: the launch names no data size (a spec without tensor
    # shapes) or no grid, so a config's loop step does not change how often it runs (tune says so)
    fixed_trips: bool = False

    def to_json(self) -> JSONObject:
        return {k: (round(v, 4) if isinstance(v, float) else v) for k, v in self.__dict__.items()}


def global_bytes_per_thread(res: Resources) -> tuple[int, int]:
    """(load bytes, store bytes) one thread issues per pass of the body, from the SASS opcodes.

    ``LDG.E.128`` moves 16 bytes, ``LDG.E`` 4 (no width suffix means 32 bits).
    """
    loads = stores = 0
    for op, count in res.sass_opcodes_detailed.items():
        m = _GLOBAL_MEM.match(op)
        if not m:
            continue
        w = _WIDTH.search(op[len(m.group(1)) :])
        size = int(w.group(1)) // 8 if w else 4
        if m.group(1) == "LDG":
            loads += size * count
        else:
            stores += size * count
    return loads, stores


def estimate(
    res: Resources,
    occ: Occupancy,
    spec: KernelSpec,
    *,
    sm_count: int | None = None,
    params: Params | None = None,
) -> Estimate:
    """One compiled candidate priced by THE cost model (``predict.model``: issue, latency per wave,
    bandwidth, spills against L1, atomics, from the SASS and the launch), in microseconds at the SM
    clock; the roofline numbers (bytes per CTA, latency hiding) are kept as words. ``spec``: the config's
    launch (its grid, num_warps, constexprs and tensors), priced from the facts explain builds for it
    (``predict.facts.facts_for_launch``), so the main loop runs as often as the launch's data over the
    config's loop step takes. A spec without a grid: the words count enough CTAs to fill the GPU."""
    target, num_warps, grid = spec.target, spec.num_warps, spec.grid
    arch = parse_arch(target)
    sms = sm_count or arch.default_sm_count or 1
    figures = arch.throughput
    bw, clock, latency = figures.dram_bytes_per_s, figures.sm_clock_hz, figures.dram_latency_s
    ctas_per_sm = max(occ.ctas_per_sm, 0)
    grid_ctas = math.prod(grid) if grid else max(ctas_per_sm, 1) * sms
    if ctas_per_sm == 0:  # cannot launch: infinitely slow
        return Estimate(grid_ctas, 0, 0, 0, 0, 0.0, math.inf, math.inf, math.inf)
    resident = min(ctas_per_sm, math.ceil(grid_ctas / sms))  # CTAs an SM actually holds at once
    threads = 32 * num_warps
    load_b, store_b = global_bytes_per_thread(res)
    spill_b = (res.spill_store_bytes or 0) + (res.spill_load_bytes or 0)
    in_flight = resident * threads * max(load_b, 4)
    eff = min(1.0, in_flight / (bw * latency / sms))
    facts = facts_for_launch(res, occ, spec, sm_count=sms)
    parts = breakdown(profile(facts), params or load_params())
    to_us = 1e6 / clock
    return Estimate(
        grid_ctas,
        int(parts["waves"]),
        resident,
        (load_b + store_b) * threads,
        spill_b * threads,
        eff,
        parts["bandwidth"] * to_us,
        parts["issue"] * to_us,
        parts["total"] * to_us,
        model="cost model",
        detail=(
            f"issue {parts['issue'] * to_us:.1f} us, latency {parts['latency'] * to_us:.1f} us, "
            f"bandwidth {parts['bandwidth'] * to_us:.1f} us per SM"
        ),
        fixed_trips=bool(parts["fixed_trips"]),
    )


# --------------------------------------------------------------------------- ties


def tie_tolerance(params: Params | None = None) -> float:
    """How far apart two estimates must be for the model to tell them apart: the half-width of its
    held-out interval at a small effect (``interval_a`` of ``params``, in log; None: :func:`load_params`,
    i.e. ``$KTRIAGE_MODEL`` or the shipped fit). Closer estimates are a tie: the model's record on measured
    pairs cannot order them. The parameters are the caller's (``--model``), so that a user's fit, which
    prices the estimates, also says which of them it cannot tell apart."""
    return float((params or load_params()).interval_a)


def tie_fraction(params: Params | None = None) -> float:
    """:func:`tie_tolerance` as a fraction of the best estimate (0.034: within +-3.4 %), as reports say it."""
    return math.expm1(tie_tolerance(params))


class Knobs(Protocol):
    """What :func:`change_from_default` reads of a config: ``tune.space.TuneConfig``, or the hook's view
    of a ``triton.Config``."""

    @property
    def num_warps(self) -> int: ...

    @property
    def num_stages(self) -> int: ...

    @property
    def blocks(self) -> Mapping[str, int]: ...


def change_from_default(config: Knobs, default: Knobs) -> tuple[int, float, int]:
    """How far ``config`` moves from the start config ``default`` (the library's own): the knobs it changes
    (constexprs, warps, stages), then how far it moves warps (in powers of two) and stages."""
    ref = default.blocks
    changed = sum(1 for k, v in config.blocks.items() if ref.get(k) != v)
    changed += int(config.num_warps != default.num_warps) + int(config.num_stages != default.num_stages)
    warps = abs(math.log2(config.num_warps / default.num_warps)) if config.num_warps and default.num_warps else 0.0
    return changed, warps, abs(config.num_stages - default.num_stages)


_Row = TypeVar("_Row")


def ties_first_by(
    ranked: Sequence[_Row],
    estimate_of: Callable[[_Row], float],
    tie_order: Callable[[_Row], Any],
    tolerance: float,
) -> tuple[list[_Row], int]:
    """``ranked`` (best estimate first) with the rows whose estimate is within ``tolerance`` (a log
    half-width: :func:`tie_tolerance`) of the best moved to the front and ordered by ``tie_order`` (the
    start config first, then the smallest :func:`change_from_default`, then the caller's usual order); the
    others follow as ranked. Also returns how many rows tie (0 when fewer than two do).

    Why: an estimate 1 % under another is inside the model's error, and ranking by it chose configs by
    noise (Liger layer_norm bwd at N=4608: 32, 16 and 8 warps estimated 52.0, 52.4 and 52.7 us; the H200
    measured 8 warps fastest and 32 warps 27 % slower). Where the model cannot choose, changing the start
    config least risks the least of what it does not see. The one rule of ``ktriage tune`` and the
    autotune hook, each with its own rows (pure: no compile, no GPU)."""
    rows = list(ranked)
    if len(rows) < 2:
        return rows, 0
    limit = estimate_of(rows[0]) * math.exp(tolerance)
    tied = [i for i, r in enumerate(rows) if estimate_of(r) <= limit]
    if len(tied) < 2:
        return rows, 0
    tied.sort(key=lambda i: tie_order(rows[i]))
    rest = sorted(set(range(len(rows))) - set(tied))
    return [rows[i] for i in tied + rest], len(tied)


# --------------------------------------------------------------------------- the tile and stream models


def warps_estimate(occupancy: Occupancy, spill_bytes: int, saturation_warps: int = DEFAULT_SATURATION_WARPS) -> float:
    """Relative time (lower is better) of a roofline-style model: a kernel reaches its roof (memory
    bandwidth or issue rate) once ``saturation_warps`` warps per SM hide latency, runs proportionally
    slower below that, and pays for each spilled byte per thread as extra local-memory traffic.
    Crude on purpose: it orders candidates for timing; it does not predict milliseconds (tile-size
    effects such as wave quantization and data reuse are not in it, so keep > 1 config)."""
    if occupancy.warps_per_sm <= 0:
        return float("inf")
    latency_hiding = min(1.0, occupancy.warps_per_sm / saturation_warps)
    return round((1.0 + spill_bytes / SPILL_COST_BYTES) / latency_hiding, 6)


def stream_estimate(
    occupancy: Occupancy,
    spill_bytes: int,
    *,
    num_sms: int,
    grid: int | None = None,
    tile_bytes: int | None = None,
    saturation_warps: int = DEFAULT_SATURATION_WARPS,
    saturation_bytes: int = DEFAULT_SATURATION_BYTES,
) -> tuple[float, str]:
    """:func:`warps_estimate` for latency-bound (streaming, reduction) kernels, made aware of the launch.

    - A grid smaller than the SM count leaves SMs idle (time / (grid / SMs)); a grid of a few CTAs
      per SM caps the resident CTAs below what the occupancy rules allow.
    - With ``tile_bytes`` (the product of the config's BLOCK constexprs times the element size: what
      one CTA loads per step) latency hiding is bytes in flight per SM against ``saturation_bytes``;
      occupancy alone would rank a 64-element tile with 16 CTAs/SM first, yet it has 4 KB in flight.
      Without it, resident warps against ``saturation_warps`` (the old estimate).

    The bytes curve approaches the roof gradually (:func:`_soft_roof`: 84% at exactly
    ``saturation_bytes``, 98.5% at twice, ~100% from 3x), so that among configs that all look
    saturated those with more margin rank first: the saturation point is a rough figure. The same
    curve over ``resident warps / (saturation_warps / 2)`` asks for enough warps to issue the loads
    (a 2-CTA, 8-warp config with huge tiles is not at the roof however many bytes it names).

    Returns (relative time, lower is better, 1.0 at the roof; a one-line explanation)."""
    if occupancy.ctas_per_sm <= 0:
        return float("inf"), "no CTA fits"
    ctas = occupancy.ctas_per_sm
    busy = 1.0
    if grid is not None and grid > 0:
        ctas = min(ctas, math.ceil(grid / num_sms))
        busy = min(1.0, grid / num_sms)
    if tile_bytes:
        inflight = ctas * tile_bytes
        warps = ctas * occupancy.num_warps
        # Bytes in flight hide latency only if enough warps issue them (each warp has a bounded number
        # of outstanding loads): half the warp saturation point is asked for on top.
        hiding = _soft_roof(inflight / saturation_bytes) * _soft_roof(warps / max(1.0, saturation_warps / 2))
        how = f"{inflight // 1024} KB in flight/SM ({ctas} CTAs x {tile_bytes} B, {warps} warps)"
    else:
        warps = ctas * occupancy.num_warps
        hiding = min(1.0, warps / saturation_warps)
        how = f"{warps} warps/SM ({ctas} CTAs)"
    grid_text = "" if grid is None else f", grid {grid} CTAs on {num_sms} SMs ({busy:.0%} busy)"
    value = round((1.0 + spill_bytes / SPILL_COST_BYTES) / (hiding * busy), 6)
    return value, f"stream: {how}, latency hidden {hiding:.0%}{grid_text}"


def _soft_roof(x: float) -> float:
    """Fraction of the roof reached with ``x`` times the saturating work in flight: ``x / (1 + x^4)^(1/4)``
    (x below 1, 1 above, a smooth corner between), rounded to 3 digits so that near-equal configs tie
    and fall to the ranking's tie-breakers (more resident warps, fewer registers, the user's order)."""
    if x <= 0:
        return 1e-9
    fourth_root: float = (1.0 + x**4) ** 0.25  # float ** float is typed Any (a negative base gives a complex)
    return max(1e-9, round(x / fourth_root, 3))


@dataclass(frozen=True)
class MmaTile:
    """What the tile model needs about a tl.dot kernel's config and launch."""

    block_m: int
    block_n: int
    block_k: int
    num_stages: int
    elt_bytes: int
    k: int | None = None  # reduction length (the kernel's K); None: tile overheads are ignored
    tiles: int | None = None  # CTAs in the grid; None: no wave quantization


def mma_estimate(
    occupancy: Occupancy, tile: MmaTile, *, num_sms: int, cc: int, spill_bytes: int = 0
) -> tuple[float, str]:
    """Relative time (SM cycles of the whole launch, lower is better) of a tensor-core kernel.

    Per K step a CTA does ``2*BM*BN*BK`` flops and reads ``(BM+BN)*BK`` elements; the SM runs at
    the slower of its tensor-core rate and its L2 operand bandwidth (arithmetic intensity), where
    the bandwidth only counts as far as the pipeline keeps ``(num_stages-1)`` steps of every resident
    CTA in flight against the loaded memory latency (Little's law: a step cannot be shorter than
    ``latency / (CTAs x (stages-1))``; on the H200 a 128x256x32 tile with 3 stages is latency bound
    and with 4 compute bound, which is what the measurement shows, benchmarks/tune/README_gemm_model.md).
    A tile also pays a fixed latency, its pipeline prologue (``stages-1`` steps loaded before the
    first MMA) and its epilogue store; other resident CTAs hide them. CTAs per SM come from the exact
    occupancy (registers, shared memory: the stages' buffers), and the grid runs in
    ``ceil(tiles / (CTAs/SM * SMs))`` waves (wave quantization). Rates are per compute capability
    (:class:`ktriage.arch.Throughput`); only the order of configs of one kernel is meant, not
    milliseconds."""
    if occupancy.ctas_per_sm <= 0:
        return float("inf"), "no CTA fits"
    figures = throughput(*divmod(cc, 10))
    flops_clk, bytes_clk = figures.mma_flops_per_clk, figures.l2_bytes_per_clk
    latency = figures.dram_latency_cycles
    flops_clk *= 2.0 / max(1, tile.elt_bytes)  # fp8 doubles the rate, tf32 halves it
    bm, bn, bk = tile.block_m, tile.block_n, tile.block_k
    ctas = occupancy.ctas_per_sm
    if tile.tiles is not None and tile.tiles > 0:
        ctas = min(ctas, math.ceil(tile.tiles / num_sms))
    ahead = max(1, tile.num_stages - 1)  # K steps whose loads are in flight while one step computes
    step_bytes = (bm + bn) * bk * tile.elt_bytes
    inflight = ctas * ahead * step_bytes
    pipe = min(1.0, inflight / (bytes_clk * latency))
    compute, memory = 2.0 * bm * bn * bk / flops_clk, step_bytes / (bytes_clk * pipe)
    if tile.num_stages > 1:  # the pipeline overlaps the next steps' loads with this step's MMAs
        step = max(compute, memory)
    else:  # no prefetch: a CTA waits for each step's operands; only other resident CTAs overlap it
        step = max(compute, memory) + min(compute, memory) / ctas
    k_steps = math.ceil(tile.k / bk) if tile.k else 1
    work = k_steps * step
    prologue = min(ahead, k_steps) * step_bytes / bytes_clk
    overhead = (latency + prologue + bm * bn * tile.elt_bytes / bytes_clk) if tile.k else 0.0
    if tile.tiles:
        waves = math.ceil(tile.tiles / (ctas * num_sms))
        total = waves * (ctas * work + overhead)
        wave_text = f", {tile.tiles} tiles = {tile.tiles / (ctas * num_sms):.2f} waves -> {waves}"
    else:
        total, wave_text = work + overhead / ctas, ""
    intensity = bm * bn / ((bm + bn) * tile.elt_bytes)
    bound = "compute" if compute >= memory else ("latency" if pipe < 1.0 else "memory")
    value = round(total * (1.0 + spill_bytes / SPILL_COST_BYTES), 3)
    return value, (
        f"mma: tile {bm}x{bn}x{bk}, {intensity:.0f} flop/B ({bound} bound), pipeline {pipe:.0%}, "
        f"{ctas} CTA/SM{wave_text}"
    )


def find_block(config_kwargs: Mapping[str, Any], axis: str) -> int | None:
    for name, value in config_kwargs.items():
        if _BLOCK_NAME[axis].match(name) and isinstance(value, int):
            return value
    return None


MMA_SASS = ("HGMMA", "HMMA", "UTCHMMA", "UTCQMMA", "UTCOMMA")  # tensor-core SASS (Hopper, Ampere, Blackwell)


def is_mma_sass(opcodes: Mapping[str, int]) -> bool:
    """A tl.dot kernel: its SASS histogram (base opcodes) has tensor-core MMA instructions."""
    return any(op.split(".")[0] in MMA_SASS for op, n in opcodes.items() if n)


def mma_grid(constexprs: Mapping[str, Any], sizes: Mapping[str, Any]) -> int | None:
    """The grid of a matmul launch derived from its block sizes: ``cdiv(M, BLOCK_M) * cdiv(N, BLOCK_N)``
    (None when the config names no BLOCK_M/BLOCK_N or the sizes have no M/N)."""
    bm, bn = find_block(constexprs, "M"), find_block(constexprs, "N")
    m, n = _size(sizes, "M"), _size(sizes, "N")
    if not (bm and bn and m and n):
        return None
    return math.ceil(m / bm) * math.ceil(n / bn)


def _size(sizes: Mapping[str, Any], axis: str) -> int | None:
    for name in (axis, axis.lower()):
        value = sizes.get(name)
        if isinstance(value, int) and not isinstance(value, bool):
            return value
    return None


def tile_estimate(
    occupancy: Occupancy,
    constexprs: Mapping[str, Any],
    *,
    num_stages: int,
    elt_bytes: int,
    sizes: Mapping[str, Any],
    grid: int | None,
    num_sms: int,
    cc: int,
    spill_bytes: int = 0,
) -> tuple[float, str, int | None] | None:
    """The tile model for one config of a tensor-core kernel, as both ``ktriage tune`` and the prune
    hook call it: (cycles of the launch, the inputs in words, the grid in CTAs), or None when the
    config names no BLOCK_M/BLOCK_N/BLOCK_K (then the caller's other estimate applies).

    ``grid``: the launch's own CTA count for this config (its grid function evaluated on the config);
    None infers ``cdiv(M, BLOCK_M) * cdiv(N, BLOCK_N)`` from ``sizes`` (said in the words). ``sizes``
    gives K, the length of the K loop."""
    bm, bn, bk = (find_block(constexprs, axis) for axis in "MNK")
    if not (bm and bn and bk):
        return None
    note = ""
    if grid is None:
        grid = mma_grid(constexprs, sizes)
        note = " (grid inferred from M, N)" if grid is not None else ""
    tile = MmaTile(bm, bn, bk, max(1, int(num_stages or 1)), elt_bytes, k=_size(sizes, "K"), tiles=grid)
    value, detail = mma_estimate(occupancy, tile, num_sms=num_sms, cc=cc, spill_bytes=spill_bytes)
    return value, detail + note, grid


def dtype_bytes(dtype: str) -> int:
    """Bytes per element of a Triton ("fp16", "bf16", "fp8e4nv", "i32", "*fp16") or torch
    ("torch.float16") dtype name; 4 when unknown (the estimates only compare configs of one kernel)."""
    name = dtype.lower().lstrip("*").removeprefix("torch.").replace("bfloat", "bf").replace("float", "fp")
    name = name.replace("int", "i")
    name = {"half": "fp16", "double": "fp64", "long": "i64", "bool": "i1"}.get(name, name)
    return element_bytes(name)
