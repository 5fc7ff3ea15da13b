"""A roofline-style time estimate per candidate config, from compile-side facts only.

Why an estimate and not a timing: screening runs on CPU machines, and its job is to cut the
candidates a GPU must time from dozens to a handful, not to pick the winner. The model keeps only
effects that differ between configs of ONE kernel at ONE problem size, because everything else
(the useful bytes, the arithmetic) is the same for all of them:

- **waves** = ceil(grid / (ctas_per_sm * sm_count)): a grid that needs 2.1 waves pays for 3;
- **latency hiding** (Little's law): an SM reaches full memory bandwidth only with enough bytes in
  flight, ``BW * latency / sm_count``. Bytes in flight per SM ~ resident warps x 32 threads x the
  global-load bytes one thread issues per pass of the kernel body (static SASS count: the loads a
  warp can have outstanding at once). ``efficiency = min(1, in_flight / needed)``;
- **bytes per CTA** over the CTA's **bandwidth share** (``BW / (sm_count * resident CTAs)``):
  useful bytes (static SASS global loads+stores x threads, a one-pass lower bound) plus the spill
  traffic (ptxas spill store+load bytes x threads): spills are real memory traffic;
- **compute**: static SASS instructions x warps / (4 warp-instructions per clock per SM x clock).

``estimate_us = waves * max(memory_us_per_wave / efficiency, compute_us_per_wave)``. Static counts
ignore loop trip counts, so the number is a ranking score in microsecond units, not a prediction.
Device numbers are per compute capability for the usual datacenter part (sm_90: H200).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any

from ktriage.analyze.occupancy import Occupancy
from ktriage.analyze.resources import Resources
from ktriage.arch import parse_arch

# (DRAM bandwidth bytes/s, SM clock Hz, DRAM latency s) per CC, for the arch's default part.
DEVICE: dict[tuple[int, int], tuple[float, float, float]] = {
    (7, 0): (0.90e12, 1.53e9, 500e-9),
    (8, 0): (2.04e12, 1.41e9, 550e-9),
    (8, 6): (0.77e12, 1.80e9, 550e-9),
    (8, 9): (0.86e12, 2.52e9, 550e-9),
    (9, 0): (4.80e12, 1.98e9, 600e-9),  # H200 SXM (H100 SXM: 3.35e12)
    (10, 0): (8.00e12, 1.96e9, 600e-9),
}
_FALLBACK = (2.0e12, 1.5e9, 600e-9)
_GLOBAL_MEM = re.compile(r"^(LDG|STG|ATOMG|REDG)\b")
_WIDTH = re.compile(r"\.(8|16|32|64|128)\b")


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

    def to_json(self) -> dict[str, Any]:
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
        w = _WIDTH.search(op[len(m.group(1)):])
        size = int(w.group(1)) // 8 if w else 4
        if m.group(1) == "LDG":
            loads += size * count
        else:
            stores += size * count
    return loads, stores


def estimate(res: Resources, occ: Occupancy, *, num_warps: int, grid: tuple[int, ...] | None, target: str,
             sm_count: int | None = None) -> Estimate:
    """The model above for one compiled candidate. ``grid`` None: assume enough CTAs to fill the GPU."""
    arch = parse_arch(target)
    sms = sm_count or arch.default_sm_count or 1
    bw, clock, latency = DEVICE.get((arch.major, arch.minor), _FALLBACK)
    ctas_per_sm = max(occ.ctas_per_sm, 0)
    grid_ctas = math.prod(grid) if grid else max(ctas_per_sm, 1) * sms
    if ctas_per_sm == 0:  # cannot launch: infinitely slow
        return Estimate(grid_ctas, 0, 0, 0, 0, 0.0, math.inf, math.inf, math.inf)
    slots = ctas_per_sm * sms
    waves = math.ceil(grid_ctas / slots)
    resident = min(ctas_per_sm, math.ceil(grid_ctas / sms))  # CTAs an SM actually holds at once
    threads = 32 * num_warps
    load_b, store_b = global_bytes_per_thread(res)
    spill_b = (res.spill_store_bytes or 0) + (res.spill_load_bytes or 0)
    bytes_cta = (load_b + store_b) * threads
    spill_cta = spill_b * threads
    need_in_flight = bw * latency / sms
    in_flight = resident * threads * max(load_b, 4)
    eff = min(1.0, in_flight / need_in_flight)
    share = bw / (sms * resident)  # bytes/s one resident CTA gets
    mem_us_wave = (bytes_cta + spill_cta) / share * 1e6
    comp_us_wave = res.sass_instructions * num_warps * resident / (4 * clock) * 1e6
    est = waves * max(mem_us_wave / max(eff, 1e-6), comp_us_wave)
    return Estimate(grid_ctas, waves, resident, bytes_cta, spill_cta, eff, waves * mem_us_wave, waves * comp_us_wave, est)
