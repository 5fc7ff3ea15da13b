"""RBLOCK scaling on an inductor-style looped reduction: inductor's own rule next to ktriage's exact rule.

Issue 5 acceptance: "a reduction kernel in the style inductor generates (written in this project) where
RBLOCK scaling gives at least 1.5x, next to inductor's own rule applied to the same kernel".

What runs (``python3 benchmarks/tune/inductor_reduction.py --out DIR``, GPU host; ``--dry-run --target
sm_90`` does everything but timing on a machine without a GPU):

1. The kernels below are written the way inductor writes a looped ("red") reduction: ``xnumel``/``rnumel``,
   ``XBLOCK``/``RBLOCK`` constexprs, ``xoffset = program_id(0) * XBLOCK``, ``rbase``, a
   ``for roffset in range(0, rnumel, RBLOCK)`` loop carrying ``[XBLOCK, RBLOCK]`` Welford accumulators
   updated under ``tl.where(rmask & xmask, ...)``, and a cross-lane Welford merge after the loop. The
   Welford helpers are this project's own code.
2. The start config is the one inductor's ``_reduction_configs`` gives such a kernel before any scaling
   (research notes registers_occupancy.md §1.4, checked against torch/_inductor/runtime/triton_heuristics.py):
   an INNER (contiguous-r) reduction with ``rnumel > 2048`` and fewer than 10 loads + reductions gets
   exactly one config, ``contiguous_config = make_config(1, min(rnumel, 2048))``, whose ``num_warps`` is
   ``r // 128 = 16`` (capped at 16 for ``r <= 8192``): XBLOCK=1, RBLOCK=2048, num_warps=16, num_stages=1.
3. Inductor's rule (``ktriage.tune.scaling.inductor_rule``, a faithful reading of
   ``CachingAutotuner._dynamic_scale_rblock``, notes §1.1) is applied as inductor ships it: the start config
   is compiled, its ``n_regs`` tested, and if the test says so ONE halved-RBLOCK config is added (the added
   kernel is not loaded during that pass, so it is never re-tested); inductor then benchmarks both and keeps
   the faster, skipping configs with ``n_spills = stack/4 > 16`` (notes §1.3). For context the rule is also
   iterated to its fixed point ("inductor rule, iterated"), which inductor itself does not do.
4. ktriage's rule (``ktriage.tune.scaling.exact_rule``: exact occupancy of ktriage.analyze.occupancy and
   ptxas's spill-store bytes) runs ``ktriage.tune.scaling.scale_loop``, the loop of ``scale_blocks``: while the rule says scale,
   propose the next smaller RBLOCK and twice the warps, compile both, keep a proposal only if it removes
   spills or raises occupancy, move to the best (fewer spill bytes, more resident warps, fewer warps/CTA).
   ``scale_blocks`` feeds it facts from a ktriage toolchain; here every fact comes from the INSTALLED Triton
   for the current device (``ktriage.tune.autotune.compile_without_launch`` + ``compile_facts``).
5. Timing (GPU only): correctness against a torch reference first, then CUDA-event timing with an L2 flush
   before every launch, configs interleaved round by round, >= 50 samples each; median/p10/p90.

Outputs: DIR/rblock.json (every config: blocks, warps, registers, spill bytes, stack, occupancy, limiter,
median/p10/p90 ms; both rules' step-by-step trails; speedups) and DIR/rblock.md. The JSON is rewritten
after every step, and every step records its error instead of aborting, so a failure never loses results.
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import triton
import triton.language as tl

REPO = Path(__file__).resolve().parents[2]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from ktriage.analyze.occupancy import compute_occupancy
from ktriage.tune.autotune import (
    TensorArg,
    compile_facts,
    compile_without_launch,
    resolve_target,
)
from ktriage.tune.scaling import ScalePoint, inductor_rule, inductor_skips_for_spills, scale_loop

TIME_BUDGET_S = 120.0  # the whole script must finish in < 150 s on an H200, compiles included
RBLOCK_VALUES = (2048, 1024, 512, 256, 128, 64)
MAX_THREADS_PER_CTA = 1024


# ------------------------------------------------------------------------------------------ kernels
@triton.jit
def _welford_step(value, mean, m2, weight, first):
    """One element into a running (mean, m2, weight): the looped-reduction update, per lane."""
    if first:
        new_weight = tl.full(weight.shape, 1.0, tl.float32)
        new_mean = value
        new_m2 = tl.zeros_like(m2)
    else:
        delta = value - mean
        new_weight = weight + 1.0
        new_mean = mean + delta / new_weight
        new_m2 = m2 + delta * (value - new_mean)
    return new_mean, new_m2, new_weight


@triton.jit
def _welford_merge(mean_a, m2_a, w_a, mean_b, m2_b, w_b):
    """Chan's parallel merge of two partial (mean, m2, weight); empty partials have weight 0."""
    w = w_a + w_b
    delta = mean_b - mean_a
    frac = tl.where(w == 0.0, 0.0, w_b / w)
    return mean_a + delta * frac, m2_a + m2_b + delta * delta * w_a * frac, w


@triton.jit
def red_fused_add_layer_norm(
    in_ptr0,
    in_ptr1,
    in_ptr2,
    in_ptr3,
    out_ptr0,
    out_ptr1,
    out_ptr2,
    out_ptr3,
    xnumel,
    rnumel,
    XBLOCK: tl.constexpr,
    RBLOCK: tl.constexpr,
):
    """y = LayerNorm(a + b) * w + c with h = a + b also stored, like inductor's looped
    ``triton_red_fused_add_native_layer_norm``: pass 1 Welford statistics, pass 2 normalize."""
    xoffset = tl.program_id(0) * XBLOCK
    xindex = xoffset + tl.arange(0, XBLOCK)[:, None]
    xmask = xindex < xnumel
    rbase = tl.arange(0, RBLOCK)[None, :]
    x0 = xindex
    tmp_mean = tl.zeros([XBLOCK, RBLOCK], tl.float32)
    tmp_m2 = tl.zeros([XBLOCK, RBLOCK], tl.float32)
    tmp_weight = tl.zeros([XBLOCK, RBLOCK], tl.float32)
    for roffset in range(0, rnumel, RBLOCK):
        rindex = roffset + rbase
        rmask = rindex < rnumel
        r1 = rindex
        tmp0 = tl.load(in_ptr0 + (r1 + rnumel * x0), rmask & xmask, eviction_policy="evict_last", other=0.0).to(
            tl.float32
        )
        tmp1 = tl.load(in_ptr1 + (r1 + rnumel * x0), rmask & xmask, eviction_policy="evict_last", other=0.0).to(
            tl.float32
        )
        tmp2 = tmp0 + tmp1
        tmp3 = tl.broadcast_to(tmp2, [XBLOCK, RBLOCK])
        tmp_mean_next, tmp_m2_next, tmp_weight_next = _welford_step(tmp3, tmp_mean, tmp_m2, tmp_weight, roffset == 0)
        tmp_mean = tl.where(rmask & xmask, tmp_mean_next, tmp_mean)
        tmp_m2 = tl.where(rmask & xmask, tmp_m2_next, tmp_m2)
        tmp_weight = tl.where(rmask & xmask, tmp_weight_next, tmp_weight)
        tl.store(out_ptr0 + (r1 + rnumel * x0), tmp2.to(out_ptr0.dtype.element_ty), rmask & xmask)
    tmp4, tmp5, _tmp6 = tl.reduce((tmp_mean, tmp_m2, tmp_weight), 1, _welford_merge)
    tmp4 = tmp4[:, None]
    tmp5 = tmp5[:, None]
    tmp7 = tmp5 / rnumel
    tmp8 = 1e-05
    tmp9 = tmp7 + tmp8
    tmp10 = tl.extra.cuda.libdevice.rsqrt(tmp9)
    tl.store(out_ptr1 + x0, tmp4, xmask)
    tl.store(out_ptr2 + x0, tmp10, xmask)
    for roffset in range(0, rnumel, RBLOCK):
        rindex = roffset + rbase
        rmask = rindex < rnumel
        r1 = rindex
        tmp11 = tl.load(out_ptr0 + (r1 + rnumel * x0), rmask & xmask, eviction_policy="evict_first", other=0.0).to(
            tl.float32
        )
        tmp12 = tl.load(in_ptr2 + r1, rmask, eviction_policy="evict_last", other=0.0).to(tl.float32)
        tmp13 = tl.load(in_ptr3 + r1, rmask, eviction_policy="evict_last", other=0.0).to(tl.float32)
        tmp14 = (tmp11 - tmp4) * tmp10
        tmp15 = tmp14 * tmp12 + tmp13
        tl.store(out_ptr3 + (r1 + rnumel * x0), tmp15.to(out_ptr3.dtype.element_ty), rmask & xmask)


@triton.jit
def red_fused_var_mean_4(
    in_ptr0, in_ptr1, in_ptr2, in_ptr3, out_ptr0, out_ptr1, xnumel, rnumel, XBLOCK: tl.constexpr, RBLOCK: tl.constexpr
):
    """Four horizontally fused var_mean reductions over the same rows (inductor fuses reductions
    with the same (xnumel, rnumel) into one kernel): 4 loads, 4 Welford reductions."""
    xoffset = tl.program_id(0) * XBLOCK
    xindex = xoffset + tl.arange(0, XBLOCK)[:, None]
    xmask = xindex < xnumel
    rbase = tl.arange(0, RBLOCK)[None, :]
    x0 = xindex
    mean0 = tl.zeros([XBLOCK, RBLOCK], tl.float32)
    m20 = tl.zeros([XBLOCK, RBLOCK], tl.float32)
    w0 = tl.zeros([XBLOCK, RBLOCK], tl.float32)
    mean1 = tl.zeros([XBLOCK, RBLOCK], tl.float32)
    m21 = tl.zeros([XBLOCK, RBLOCK], tl.float32)
    w1 = tl.zeros([XBLOCK, RBLOCK], tl.float32)
    mean2 = tl.zeros([XBLOCK, RBLOCK], tl.float32)
    m22 = tl.zeros([XBLOCK, RBLOCK], tl.float32)
    w2 = tl.zeros([XBLOCK, RBLOCK], tl.float32)
    mean3 = tl.zeros([XBLOCK, RBLOCK], tl.float32)
    m23 = tl.zeros([XBLOCK, RBLOCK], tl.float32)
    w3 = tl.zeros([XBLOCK, RBLOCK], tl.float32)
    for roffset in range(0, rnumel, RBLOCK):
        rindex = roffset + rbase
        rmask = rindex < rnumel
        r1 = rindex
        m = rmask & xmask
        tmp0 = tl.load(in_ptr0 + (r1 + rnumel * x0), m, eviction_policy="evict_first", other=0.0).to(tl.float32)
        tmp1 = tl.load(in_ptr1 + (r1 + rnumel * x0), m, eviction_policy="evict_first", other=0.0).to(tl.float32)
        tmp2 = tl.load(in_ptr2 + (r1 + rnumel * x0), m, eviction_policy="evict_first", other=0.0).to(tl.float32)
        tmp3 = tl.load(in_ptr3 + (r1 + rnumel * x0), m, eviction_policy="evict_first", other=0.0).to(tl.float32)
        a0, b0, c0 = _welford_step(tmp0, mean0, m20, w0, roffset == 0)
        mean0 = tl.where(m, a0, mean0)
        m20 = tl.where(m, b0, m20)
        w0 = tl.where(m, c0, w0)
        a1, b1, c1 = _welford_step(tmp1, mean1, m21, w1, roffset == 0)
        mean1 = tl.where(m, a1, mean1)
        m21 = tl.where(m, b1, m21)
        w1 = tl.where(m, c1, w1)
        a2, b2, c2 = _welford_step(tmp2, mean2, m22, w2, roffset == 0)
        mean2 = tl.where(m, a2, mean2)
        m22 = tl.where(m, b2, m22)
        w2 = tl.where(m, c2, w2)
        a3, b3, c3 = _welford_step(tmp3, mean3, m23, w3, roffset == 0)
        mean3 = tl.where(m, a3, mean3)
        m23 = tl.where(m, b3, m23)
        w3 = tl.where(m, c3, w3)
    s0, q0, _n0 = tl.reduce((mean0, m20, w0), 1, _welford_merge)
    s1, q1, _n1 = tl.reduce((mean1, m21, w1), 1, _welford_merge)
    s2, q2, _n2 = tl.reduce((mean2, m22, w2), 1, _welford_merge)
    s3, q3, _n3 = tl.reduce((mean3, m23, w3), 1, _welford_merge)
    tl.store(out_ptr0 + 4 * x0 + 0, s0[:, None], xmask)
    tl.store(out_ptr0 + 4 * x0 + 1, s1[:, None], xmask)
    tl.store(out_ptr0 + 4 * x0 + 2, s2[:, None], xmask)
    tl.store(out_ptr0 + 4 * x0 + 3, s3[:, None], xmask)
    tl.store(out_ptr1 + 4 * x0 + 0, (q0 / rnumel)[:, None], xmask)
    tl.store(out_ptr1 + 4 * x0 + 1, (q1 / rnumel)[:, None], xmask)
    tl.store(out_ptr1 + 4 * x0 + 2, (q2 / rnumel)[:, None], xmask)
    tl.store(out_ptr1 + 4 * x0 + 3, (q3 / rnumel)[:, None], xmask)


# ------------------------------------------------------------------------------------------ cases
Tensor = Any  # torch.Tensor on the GPU host, TensorArg for compile-only screening


@dataclass(frozen=True)
class Case:
    """One kernel on one shape: how to build its arguments, its torch reference, its bytes moved."""

    name: str
    kernel: Any
    xnumel: int
    rnumel: int
    what: str
    make_inputs: Callable[[Any, int, int], dict[str, Tensor]]
    reference: Callable[[dict[str, Tensor], int, int], dict[str, Tensor]]
    compare: dict[str, tuple[float, float]]  # output name -> (atol, rtol)
    bytes_moved: Callable[[int, int], int]
    ptr_dtypes: dict[str, str]
    num_load: int  # what inductor counts for its MAX_R0_BLOCK / register_intensive heuristic
    num_reduction: int
    start: Config | None = None  # another config of inductor's lists (default: its INNER contiguous config)
    start_why: str = ""

    def compile_args(self, cfg: Config, tensors: dict[str, Tensor] | None = None) -> dict[str, Any]:
        args: dict[str, Any] = {}
        for name, dt in self.ptr_dtypes.items():
            args[name] = tensors[name] if tensors is not None else TensorArg(dt)
        args.update(
            xnumel=self.xnumel,
            rnumel=self.rnumel,
            XBLOCK=cfg.xblock,
            RBLOCK=cfg.rblock,
            num_warps=cfg.num_warps,
            num_stages=1,
        )
        return args


def _var_mean4_inputs(torch: Any, xn: int, rn: int) -> dict[str, Tensor]:
    g = torch.Generator(device="cuda").manual_seed(0)
    t = {
        f"in_ptr{i}": (torch.randn(xn, rn, device="cuda", generator=g) * (i + 1) + i).to(torch.bfloat16)
        for i in range(4)
    }
    t["out_ptr0"] = torch.empty(xn, 4, device="cuda", dtype=torch.float32)
    t["out_ptr1"] = torch.empty(xn, 4, device="cuda", dtype=torch.float32)
    return t


def _var_mean4_ref(t: dict[str, Tensor], xn: int, rn: int) -> dict[str, Tensor]:
    import torch

    means, vars_ = [], []
    for i in range(4):
        v, m = torch.var_mean(t[f"in_ptr{i}"].float(), dim=1, correction=0)
        means.append(m)
        vars_.append(v)
    return {"out_ptr0": torch.stack(means, 1), "out_ptr1": torch.stack(vars_, 1)}


def _add_ln_inputs(torch: Any, xn: int, rn: int) -> dict[str, Tensor]:
    g = torch.Generator(device="cuda").manual_seed(0)
    return {
        "in_ptr0": torch.randn(xn, rn, device="cuda", generator=g).to(torch.bfloat16),
        "in_ptr1": torch.randn(xn, rn, device="cuda", generator=g).to(torch.bfloat16),
        "in_ptr2": (1 + 0.1 * torch.randn(rn, device="cuda", generator=g)).to(torch.bfloat16),
        "in_ptr3": (0.1 * torch.randn(rn, device="cuda", generator=g)).to(torch.bfloat16),
        "out_ptr0": torch.empty(xn, rn, device="cuda", dtype=torch.bfloat16),
        "out_ptr1": torch.empty(xn, device="cuda", dtype=torch.float32),
        "out_ptr2": torch.empty(xn, device="cuda", dtype=torch.float32),
        "out_ptr3": torch.empty(xn, rn, device="cuda", dtype=torch.bfloat16),
    }


def _add_ln_ref(t: dict[str, Tensor], xn: int, rn: int) -> dict[str, Tensor]:
    import torch

    h = t["in_ptr0"].float() + t["in_ptr1"].float()
    var, mean = torch.var_mean(h, dim=1, correction=0)
    rstd = torch.rsqrt(var + 1e-5)
    hb = h.to(torch.bfloat16)
    y = (hb.float() - mean[:, None]) * rstd[:, None] * t["in_ptr2"].float() + t["in_ptr3"].float()
    return {"out_ptr0": hb, "out_ptr1": mean, "out_ptr2": rstd, "out_ptr3": y.to(torch.bfloat16)}


def make_cases(quick: bool) -> list[Case]:
    vm4_ptrs = {**{f"in_ptr{i}": "bf16" for i in range(4)}, "out_ptr0": "fp32", "out_ptr1": "fp32"}
    ln_ptrs = {
        "in_ptr0": "bf16",
        "in_ptr1": "bf16",
        "in_ptr2": "bf16",
        "in_ptr3": "bf16",
        "out_ptr0": "bf16",
        "out_ptr1": "fp32",
        "out_ptr2": "fp32",
        "out_ptr3": "bf16",
    }
    vm4_cmp = {"out_ptr0": (2e-3, 1e-3), "out_ptr1": (2e-2, 2e-3)}
    ln_cmp = {"out_ptr0": (1e-2, 1e-2), "out_ptr1": (1e-3, 1e-3), "out_ptr2": (1e-3, 1e-3), "out_ptr3": (6e-2, 2e-2)}
    vm4_bytes = lambda x, r: 4 * x * r * 2 + 2 * 4 * x * 4  # noqa: E731
    cases = [
        Case(
            "var_mean4_65536x2048",
            red_fused_var_mean_4,
            65536,
            2048,
            "4 fused var_mean of bf16 rows of 2048: inductor's INNER config is XBLOCK=2 x RBLOCK=2048, which spills",
            _var_mean4_inputs,
            _var_mean4_ref,
            vm4_cmp,
            vm4_bytes,
            vm4_ptrs,
            4,
            4,
        ),
        Case(
            "var_mean4_32768x4096_x8r512",
            red_fused_var_mean_4,
            32768,
            4096,
            "4 fused var_mean, started from the (XBLOCK 8, RBLOCK 512) config of inductor's autotuning list, which spills",
            _var_mean4_inputs,
            _var_mean4_ref,
            vm4_cmp,
            vm4_bytes,
            vm4_ptrs,
            4,
            4,
            start=Config(8, 512, 16),
            start_why="inductor's max-autotune reduction list entry (8, 512): "
            "triton_config_reduction(8, 512) gives num_warps = 8*512 // 128 = 32, capped at 16",
        ),
        Case(
            "var_mean4_32768x4096",
            red_fused_var_mean_4,
            32768,
            4096,
            "4 horizontally fused var_mean (Welford) reductions of bf16 rows; 4 loads + 4 reductions",
            _var_mean4_inputs,
            _var_mean4_ref,
            vm4_cmp,
            lambda x, r: 4 * x * r * 2 + 2 * 4 * x * 4,
            vm4_ptrs,
            4,
            4,
        ),
        Case(
            "var_mean4_16384x8192",
            red_fused_var_mean_4,
            16384,
            8192,
            "same kernel, longer rows (4 loop trips at the start config instead of 2)",
            _var_mean4_inputs,
            _var_mean4_ref,
            vm4_cmp,
            lambda x, r: 4 * x * r * 2 + 2 * 4 * x * 4,
            vm4_ptrs,
            4,
            4,
        ),
        Case(
            "add_layer_norm_32768x4096",
            red_fused_add_layer_norm,
            32768,
            4096,
            "residual add + LayerNorm, two passes (Welford stats, then normalize); 5 loads + 1 reduction",
            _add_ln_inputs,
            _add_ln_ref,
            ln_cmp,
            lambda x, r: x * r * 2 * 5 + 2 * r * 2 + 2 * x * 4,
            ln_ptrs,
            5,
            1,
        ),
    ]
    return cases[:1] if quick else cases


# ------------------------------------------------------------------------------------------ configs + facts
@dataclass(frozen=True, order=True)
class Config:
    xblock: int
    rblock: int
    num_warps: int

    def label(self) -> str:
        return f"XBLOCK={self.xblock} RBLOCK={self.rblock} num_warps={self.num_warps}"

    def to_json(self) -> dict[str, int]:
        return {"XBLOCK": self.xblock, "RBLOCK": self.rblock, "num_warps": self.num_warps, "num_stages": 1}


def inductor_start_config(xnumel: int, rnumel: int, num_load: int, num_reduction: int) -> Config:
    """Inductor's one config for an INNER looped reduction, before any RBLOCK scaling (notes §1.4):
    ``make_config(2 if rnumel <= 2048 else 1, min(rnumel, MAX_R0_BLOCK))`` with MAX_R0_BLOCK 1024 and
    register_intensive (warps capped at 8) when xnumel >= 1024 and loads + reductions >= 10, else 2048;
    ``num_warps = next_pow2(clamp(r // 128, 2, 16 if r <= 8192 else 32))``, halved cap if register_intensive."""
    intensive = xnumel >= 1024 and num_load + num_reduction >= 10
    r = min(rnumel, 1024 if intensive else 2048)
    x = 2 if rnumel <= 2048 else 1
    cap = 16 if r <= 8192 else 32
    if intensive:
        cap //= 2
    warps = triton.next_power_of_2(min(max(r // 128, 2), cap))
    return Config(x, r, warps)


@dataclass
class Facts:
    config: Config
    registers: int | None = None
    spill_store_bytes: int | None = None
    spill_load_bytes: int | None = None
    stack_bytes: int | None = None
    shared_bytes: int | None = None
    occupancy: Any = None
    compile_s: float | None = None
    error: str | None = None

    def to_json(self) -> dict[str, Any]:
        occ = self.occupancy
        return {
            **self.config.to_json(),
            "registers": self.registers,
            "spill_store_bytes": self.spill_store_bytes,
            "spill_load_bytes": self.spill_load_bytes,
            "stack_bytes": self.stack_bytes,
            "shared_bytes": self.shared_bytes,
            "ctas_per_sm": None if occ is None else occ.ctas_per_sm,
            "warps_per_sm": None if occ is None else occ.warps_per_sm,
            "occupancy": None if occ is None else occ.occupancy,
            "limiter": None if occ is None else occ.limiter,
            "compile_s": self.compile_s,
            "error": self.error,
        }


class FactCache:
    """Compile each (case, config) once with the installed Triton for the target; read ptxas -v facts."""

    def __init__(self, target: Any) -> None:
        self.target = target
        self.cc = int(target.arch)
        self._facts: dict[tuple[str, Config], Facts] = {}

    def get(self, case: Case, cfg: Config) -> Facts:
        key = (case.name, cfg)
        if key in self._facts:
            return self._facts[key]
        f = Facts(cfg)
        t0 = time.perf_counter()
        try:
            if cfg.num_warps * 32 > MAX_THREADS_PER_CTA:
                raise ValueError(f"{cfg.num_warps} warps exceed {MAX_THREADS_PER_CTA} threads per CTA")
            ck = compile_without_launch(case.kernel, case.compile_args(cfg), self.target)
            cf = compile_facts(ck, self.cc)
            f.registers, f.spill_store_bytes, f.spill_load_bytes = (
                cf.registers,
                cf.spill_store_bytes,
                cf.spill_load_bytes,
            )
            f.stack_bytes, f.shared_bytes = cf.stack_bytes, cf.shared_bytes
            f.occupancy = compute_occupancy(self.cc, cf.registers, cf.num_warps, cf.shared_bytes, barriers=cf.barriers)
        except Exception as exc:
            f.error = f"{type(exc).__name__}: {exc}".splitlines()[0][:400]
        f.compile_s = round(time.perf_counter() - t0, 2)
        self._facts[key] = f
        return f


# ------------------------------------------------------------------------------------------ the two rules
def grid_ctas(case: Case, cfg: Config) -> int:
    return math.ceil(case.xnumel / cfg.xblock)


def inductor_shipped(case: Case, facts: FactCache, start: Config, sm_count: int) -> dict[str, Any]:
    """What inductor's precompile() does: test the start config once, add one halved-RBLOCK config."""
    f = facts.get(case, start)
    d = inductor_rule(
        n_regs=f.registers,
        num_warps=start.num_warps,
        xnumel=case.xnumel,
        xblock=start.xblock,
        rblocks={"R0_BLOCK": start.rblock},
        sm_count=sm_count,
    )
    candidates = [start]
    if d.scale:
        candidates.append(Config(start.xblock, d.new_rblocks["R0_BLOCK"], start.num_warps))
    for c in candidates:
        facts.get(case, c)
    skipped = [
        c
        for c in candidates
        if facts.get(case, c).stack_bytes is not None and inductor_skips_for_spills(facts.get(case, c).stack_bytes or 0)
    ]
    return {
        "decision": {
            "scale": d.scale,
            "reason": d.reason,
            "max_blocks_per_sm": d.max_blocks_per_sm,
            "total_block": d.total_block,
        },
        "candidates": [c.to_json() for c in candidates],
        "skipped_for_spills": [c.to_json() for c in skipped],
        "_candidates": candidates,
        "_skipped": skipped,
    }


def inductor_iterated(case: Case, facts: FactCache, start: Config, sm_count: int, max_steps: int = 6) -> dict[str, Any]:
    """Inductor's test applied until it says stop (context only: inductor halves once per precompile)."""
    cur, steps = start, []
    for _ in range(max_steps):
        f = facts.get(case, cur)
        d = inductor_rule(
            n_regs=f.registers,
            num_warps=cur.num_warps,
            xnumel=case.xnumel,
            xblock=cur.xblock,
            rblocks={"R0_BLOCK": cur.rblock},
            sm_count=sm_count,
        )
        steps.append({"config": cur.to_json(), "registers": f.registers, "scale": d.scale, "reason": d.reason})
        if not d.scale:
            break
        cur = Config(cur.xblock, d.new_rblocks["R0_BLOCK"], cur.num_warps)
    return {"final": cur.to_json(), "steps": steps, "_final": cur}


def _proposals(cfg: Config) -> list[tuple[Config, str]]:
    """As scale_blocks: the next smaller reduction block, and twice the warps (<= 1024 threads)."""
    out: list[tuple[Config, str]] = []
    smaller = [v for v in RBLOCK_VALUES if v < cfg.rblock]
    if smaller:
        out.append((Config(cfg.xblock, max(smaller), cfg.num_warps), f"RBLOCK {cfg.rblock} -> {max(smaller)}"))
    if cfg.num_warps * 2 * 32 <= MAX_THREADS_PER_CTA:
        out.append(
            (Config(cfg.xblock, cfg.rblock, cfg.num_warps * 2), f"num_warps {cfg.num_warps} -> {cfg.num_warps * 2}")
        )
    return out


def ktriage_exact(case: Case, facts: FactCache, start: Config, sm_count: int, max_steps: int = 6) -> dict[str, Any]:
    """ktriage's loop (``scale_loop``, the one scale_blocks runs) on facts from the installed Triton."""

    def evaluate(cfg: Config) -> ScalePoint[Config]:
        f = facts.get(case, cfg)
        return ScalePoint(cfg, f.registers, f.spill_store_bytes, f.occupancy, grid_ctas(case, cfg))

    res = scale_loop(start, evaluate, _proposals, sm_count=sm_count, max_steps=max_steps)
    steps = [{"config": s.config.to_json(), "kept": s.kept, "sentence": s.sentence} for s in res.steps]
    return {"final": res.final.to_json(), "steps": steps, "_final": res.final}


# ------------------------------------------------------------------------------------------ timing (GPU)
def _launch(case: Case, cfg: Config, t: dict[str, Tensor]) -> None:
    grid = (grid_ctas(case, cfg),)
    args = [t[n] for n in case.ptr_dtypes]
    case.kernel[grid](
        *args, case.xnumel, case.rnumel, XBLOCK=cfg.xblock, RBLOCK=cfg.rblock, num_warps=cfg.num_warps, num_stages=1
    )


def check_outputs(case: Case, cfg: Config, t: dict[str, Tensor], ref: dict[str, Tensor]) -> str | None:
    """None when every output matches the torch reference; else what differs."""
    import torch

    for name in case.compare:
        t[name].fill_(float("nan"))
    _launch(case, cfg, t)
    torch.cuda.synchronize()
    for name, (atol, rtol) in case.compare.items():
        got, want = t[name].float(), ref[name].float()
        if not torch.allclose(got, want, atol=atol, rtol=rtol):
            err = (got - want).abs().nan_to_num(float("inf")).max().item()
            return f"{name}: max abs error {err:.3g} (atol {atol}, rtol {rtol})"
    return None


def time_configs(
    case: Case, configs: list[Config], t: dict[str, Tensor], samples: int, deadline: float
) -> dict[Config, list[float]]:
    """CUDA-event times (ms) with an L2 flush before each launch; configs interleaved per round,
    the order rotated each round so no config always follows the flush of the same neighbour."""
    import torch

    flush = torch.empty(256 * 1024 * 1024 // 4, dtype=torch.int32, device="cuda")
    out: dict[Config, list[float]] = {c: [] for c in configs}
    if not configs:
        return out
    for c in configs:  # warm-up (JIT load) outside the samples
        _launch(case, c, t)
    torch.cuda.synchronize()
    for rnd in range(samples):
        order = configs[rnd % len(configs) :] + configs[: rnd % len(configs)]
        evs = []
        for c in order:
            flush.zero_()
            s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            s.record()
            _launch(case, c, t)
            e.record()
            evs.append((c, s, e))
        torch.cuda.synchronize()
        for c, s, e in evs:
            out[c].append(s.elapsed_time(e))
        if time.perf_counter() > deadline and rnd + 1 >= 20:
            break
    return out


def _pct(xs: list[float], q: float) -> float:
    ys = sorted(xs)
    return ys[min(len(ys) - 1, max(0, round(q * (len(ys) - 1))))]


# ------------------------------------------------------------------------------------------ driver
def run_case(
    case: Case,
    facts: FactCache,
    sm_count: int,
    dry_run: bool,
    samples: int,
    deadline: float,
    log: Callable[[str], None],
) -> dict[str, Any]:
    res: dict[str, Any] = {
        "case": case.name,
        "what": case.what,
        "xnumel": case.xnumel,
        "rnumel": case.rnumel,
        "kernel": case.kernel.fn.__name__ if hasattr(case.kernel, "fn") else str(case.kernel),
    }
    n_load, n_red = case.num_load, case.num_reduction
    start = case.start or inductor_start_config(case.xnumel, case.rnumel, n_load, n_red)
    res["start"] = {
        **start.to_json(),
        "why": case.start_why
        or (
            f"inductor INNER contiguous_config for rnumel={case.rnumel}, "
            f"{n_load} loads + {n_red} reductions (< 10: MAX_R0_BLOCK 2048, num_warps = r // 128 capped at 16)"
        ),
    }
    log(f"[{case.name}] start {start.label()}")
    try:
        ind = inductor_shipped(case, facts, start, sm_count)
        res["inductor"] = {k: v for k, v in ind.items() if not k.startswith("_")}
    except Exception as exc:
        ind = {"_candidates": [start], "_skipped": []}
        res["inductor"] = {"error": traceback.format_exc(limit=3)}
        log(f"  inductor rule failed: {exc}")
    try:
        it = inductor_iterated(case, facts, start, sm_count)
        res["inductor_iterated"] = {k: v for k, v in it.items() if not k.startswith("_")}
    except Exception:
        it = {"_final": start}
        res["inductor_iterated"] = {"error": traceback.format_exc(limit=3)}
    try:
        kt = ktriage_exact(case, facts, start, sm_count)
        res["ktriage"] = {k: v for k, v in kt.items() if not k.startswith("_")}
        for s in kt["steps"]:
            log("  ktriage: " + s["sentence"])
    except Exception as exc:
        kt = {"_final": start}
        res["ktriage"] = {"error": traceback.format_exc(limit=3)}
        log(f"  ktriage rule failed: {exc}")
    log(f"  inductor: {res['inductor'].get('decision', {}).get('reason')}")
    # timed set: start, inductor's candidates, ktriage's final, the iterated rule's final, a few neighbours
    # ktriage's kept proposals (compile-side: each removes spills or raises occupancy) are all timed:
    # like `ktriage tune`, the GPU picks among the few configs the screening kept
    kept = [
        Config(s["config"]["XBLOCK"], s["config"]["RBLOCK"], s["config"]["num_warps"])
        for s in res.get("ktriage", {}).get("steps", [])
        if "because" in s["sentence"] and "rejected" not in s["sentence"]
    ]
    timed: list[Config] = []
    for c in [
        start,
        *ind["_candidates"],
        kt["_final"],
        it["_final"],
        *kept,
        Config(start.xblock, max(start.rblock // 2, 64), max(start.num_warps // 2, 2)),
    ]:
        if c not in timed and len(timed) < 9:
            timed.append(c)
    res["ktriage_kept"] = [c.to_json() for c in kept]
    rows = {c: facts.get(case, c) for c in timed}
    res["configs"] = [rows[c].to_json() for c in timed]
    if dry_run:
        res["timing"] = "skipped (--dry-run)"
        return res
    import torch

    try:
        t = case.make_inputs(torch, case.xnumel, case.rnumel)
        ref = case.reference(t, case.xnumel, case.rnumel)
    except Exception:
        res["timing_error"] = traceback.format_exc(limit=3)
        return res
    ok: list[Config] = []
    for c, row in zip(timed, res["configs"]):
        if rows[c].error:
            row["correct"] = None
            continue
        try:
            bad = check_outputs(case, c, t, ref)
            row["correct"] = bad is None
            row["mismatch"] = bad
            if bad is None:
                ok.append(c)
            else:
                log(f"  {c.label()}: WRONG OUTPUT {bad}")
        except Exception as exc:
            row["correct"] = None
            row["error"] = f"launch/check: {type(exc).__name__}: {exc}"[:400]
            log(f"  {c.label()}: {row['error']}")
    try:
        times = time_configs(case, ok, t, samples, deadline)
    except Exception:
        res["timing_error"] = traceback.format_exc(limit=3)
        return res
    nbytes = case.bytes_moved(case.xnumel, case.rnumel)
    for c, row in zip(timed, res["configs"]):
        xs = times.get(c)
        if xs:
            med = statistics.median(xs)
            row.update(
                median_ms=round(med, 5),
                p10_ms=round(_pct(xs, 0.1), 5),
                p90_ms=round(_pct(xs, 0.9), 5),
                samples=len(xs),
                gbps=round(nbytes / med / 1e6, 1),
            )
            log(
                f"  {c.label():38s} {row['registers']:>4} regs {row['ctas_per_sm']} CTA/SM "
                f"{row['warps_per_sm']:>2} warps  median {med:.4f} ms  ({row['gbps']} GB/s)"
            )
    med = {c: statistics.median(times[c]) for c in times if times[c]}
    if start in med:
        # inductor benchmarks its candidates and keeps the fastest, spilling ones (n_spills > 16) skipped
        cands = [c for c in ind["_candidates"] if c in med and c not in ind["_skipped"]] or [
            c for c in ind["_candidates"] if c in med
        ]
        ind_pick = min(cands, key=lambda c: med[c]) if cands else None
        res["summary"] = {
            "start_ms": round(med[start], 5),
            "inductor_pick": None if ind_pick is None else ind_pick.to_json(),
            "inductor_ms": None if ind_pick is None else round(med[ind_pick], 5),
            "speedup_inductor_vs_start": None if ind_pick is None else round(med[start] / med[ind_pick], 3),
            "inductor_iterated_final": it["_final"].to_json(),
            "speedup_inductor_iterated_vs_start": round(med[start] / med[it["_final"]], 3)
            if it["_final"] in med
            else None,
            "ktriage_final": kt["_final"].to_json(),
            "ktriage_ms": round(med[kt["_final"]], 5) if kt["_final"] in med else None,
            "speedup_ktriage_vs_start": round(med[start] / med[kt["_final"]], 3) if kt["_final"] in med else None,
            "best_timed": min(med, key=lambda c: med[c]).to_json(),
        }
        # the start config competes too: a proposal is adopted only when it is measured faster
        kept_timed = [c for c in dict.fromkeys([start, kt["_final"], *kept]) if c in med]
        if kept_timed:
            pick = min(kept_timed, key=lambda c: med[c])
            res["summary"].update(
                ktriage_timed_pick=pick.to_json(),
                ktriage_timed_ms=round(med[pick], 5),
                speedup_ktriage_timed_vs_start=round(med[start] / med[pick], 3),
                ktriage_configs_timed=len(kept_timed),
            )
        log(
            f"  => ktriage x{res['summary']['speedup_ktriage_vs_start']} vs start, "
            f"inductor x{res['summary']['speedup_inductor_vs_start']}"
        )
    return res


def write_md(path: Path, doc: dict[str, Any]) -> None:
    lines = [f"# RBLOCK scaling on inductor-style reductions ({doc.get('device')}, Triton {doc.get('triton')})", ""]
    if doc.get("dry_run"):
        lines += ["Dry run: compile-side only, no timing.", ""]
    for c in doc.get("cases", []):
        lines += [
            f"## {c['case']}",
            "",
            c.get("what", ""),
            "",
            f"Start (inductor's config): {c.get('start', {}).get('why', '')}.",
            "",
        ]
        ind = c.get("inductor", {})
        if "decision" in ind:
            lines.append(f"- inductor rule: {ind['decision']['reason']}")
        kt = c.get("ktriage", {})
        for s in kt.get("steps", []):
            lines.append(f"- ktriage: {s['sentence']}")
        lines += [
            "",
            "| XBLOCK | RBLOCK | warps | regs | spill B | stack B | CTAs/SM | warps/SM | limiter | median ms | p10 | p90 | GB/s | ok |",
            "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
        ]
        for r in c.get("configs", []):
            lines.append(
                f"| {r['XBLOCK']} | {r['RBLOCK']} | {r['num_warps']} | {r['registers']} | {r['spill_store_bytes']} | "
                f"{r['stack_bytes']} | {r['ctas_per_sm']} | {r['warps_per_sm']} | {r['limiter']} | "
                f"{r.get('median_ms', '-')} | {r.get('p10_ms', '-')} | {r.get('p90_ms', '-')} | {r.get('gbps', '-')} | "
                f"{r.get('correct', '-')} |"
            )
        s = c.get("summary")
        if s:
            lines += [
                "",
                (
                    f"**ktriage** {s['ktriage_final']} : x{s['speedup_ktriage_vs_start']} vs start; "
                    f"**inductor** (as shipped) {s['inductor_pick']} : x{s['speedup_inductor_vs_start']}; "
                    f"inductor rule iterated {s['inductor_iterated_final']} : "
                    f"x{s['speedup_inductor_iterated_vs_start']}."
                ),
            ]
        for k in ("timing_error",):
            if c.get(k):
                lines += ["", f"{k}: `{c[k].splitlines()[-1]}`"]
        lines.append("")
    path.write_text("\n".join(lines))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True, type=Path)
    ap.add_argument("--dry-run", action="store_true", help="compile and decide only, no GPU timing")
    ap.add_argument("--target", default=None, help="compile target, e.g. sm_90 (default: the current GPU)")
    ap.add_argument("--samples", type=int, default=100)
    ap.add_argument("--quick", action="store_true", help="the first case only")
    a = ap.parse_args(argv)
    t0 = time.perf_counter()
    deadline = t0 + TIME_BUDGET_S
    a.out.mkdir(parents=True, exist_ok=True)

    def log(m: str) -> None:
        print(f"[{time.perf_counter() - t0:5.1f}s] {m}", flush=True)

    doc: dict[str, Any] = {
        "triton": triton.__version__,
        "dry_run": a.dry_run,
        "samples_requested": a.samples,
        "cases": [],
    }
    try:
        target = resolve_target(a.target)
        doc["target"] = f"sm_{target.arch}"
        sm_count = None
        if not a.dry_run:
            import torch

            props = torch.cuda.get_device_properties(0)
            sm_count = props.multi_processor_count
            doc["device"] = props.name
            doc["torch"] = torch.__version__
        if sm_count is None:
            from ktriage.arch import parse_arch

            sm_count = parse_arch(f"sm_{target.arch}").default_sm_count
            doc["device"] = f"none (dry run, {sm_count} SMs assumed)"
        doc["sm_count"] = sm_count
    except Exception:
        doc["error"] = traceback.format_exc(limit=4)
        (a.out / "rblock.json").write_text(json.dumps(doc, indent=2))
        print(doc["error"], file=sys.stderr)
        return 1
    facts = FactCache(target)
    for case in make_cases(a.quick):
        if time.perf_counter() > deadline:
            doc["cases"].append({"case": case.name, "skipped": "time budget spent"})
            continue
        try:
            doc["cases"].append(run_case(case, facts, sm_count, a.dry_run, a.samples, deadline, log))
        except Exception:
            doc["cases"].append({"case": case.name, "error": traceback.format_exc(limit=4)})
            log(f"[{case.name}] failed:\n{doc['cases'][-1]['error']}")
        doc["elapsed_s"] = round(time.perf_counter() - t0, 1)
        (a.out / "rblock.json").write_text(json.dumps(doc, indent=2, default=str))
        write_md(a.out / "rblock.md", doc)
    log(f"done: {a.out / 'rblock.json'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
