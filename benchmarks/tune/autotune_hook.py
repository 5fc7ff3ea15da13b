"""Issue 5 acceptance: ktriage's autotune prune hook on realistic config spaces, against exhaustive autotuning.

For a tensor-core matmul (fp16 in, fp32 accumulate; 40 configs in the space Triton's matmul tutorial
and inductor's mm configs span) and an inductor-style row reduction (20 [XBLOCK, RBLOCK] / num_warps
configs, some of which spill), on two shapes each:

1. pruned: ``triton.autotune(..., prune_configs_by=ktriage_prune(keep=ceil(n/3)))``; records how many
   configs were timed, the hook's report (kept/dropped and why) and the winner. Runs FIRST, so the
   hook pays every compile and the exhaustive run below reuses Triton's cache;
2. exhaustive: plain ``triton.autotune`` over all configs; records every config's timing and the winner;
3. head to head: both winners timed interleaved in one process (``triton.testing.do_bench``, several
   rounds, medians); reports ``ratio = t(pruned winner) / t(exhaustive winner)`` (target <= 1.02) and
   ``cut = configs / configs timed`` (target >= 2), plus the tuning wall-clock of both runs.

    python3 benchmarks/tune/autotune_hook.py --out DIR                        # on the GPU (H200)
    python3 benchmarks/tune/autotune_hook.py --dry-run --target sm_90 [--out DIR]  # no GPU: screening only

Writes DIR/autotune.json (after every case, so a failure keeps earlier results) and DIR/autotune.md.
Needs Triton 3.3+ and ktriage importable (PYTHONPATH=<repo>); torch for the GPU run. Every case runs
in try/except and records its error; a time budget (--budget-s) skips cases that would not fit.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import statistics
import sys
import time
import traceback
from pathlib import Path
from typing import Any

import triton
import triton.language as tl

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from ktriage.tune.autotune import TensorArg, ktriage_prune

# ----------------------------------------------------------------------------------------- kernels


@triton.jit
def mm_kernel(
    a_ptr,
    b_ptr,
    c_ptr,
    M,
    N,
    K,
    stride_am,
    stride_ak,
    stride_bk,
    stride_bn,
    stride_cm,
    stride_cn,
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
    BLOCK_K: tl.constexpr,
    GROUP_M: tl.constexpr,
):
    """C = A @ B, fp16 in, fp32 accumulate, fp16 out; tiles walked in bands of GROUP_M rows (L2 reuse)."""
    pid = tl.program_id(0)
    tiles_m = tl.cdiv(M, BLOCK_M)
    tiles_n = tl.cdiv(N, BLOCK_N)
    band = GROUP_M * tiles_n
    first_m = (pid // band) * GROUP_M
    rows_in_band = min(tiles_m - first_m, GROUP_M)
    tm = first_m + (pid % band) % rows_in_band
    tn = (pid % band) // rows_in_band
    rm = (tm * BLOCK_M + tl.arange(0, BLOCK_M)) % M
    rn = (tn * BLOCK_N + tl.arange(0, BLOCK_N)) % N
    rk = tl.arange(0, BLOCK_K)
    a = a_ptr + rm[:, None] * stride_am + rk[None, :] * stride_ak
    b = b_ptr + rk[:, None] * stride_bk + rn[None, :] * stride_bn
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(tl.cdiv(K, BLOCK_K)):
        left = K - k * BLOCK_K
        x = tl.load(a, mask=rk[None, :] < left, other=0.0)
        y = tl.load(b, mask=rk[:, None] < left, other=0.0)
        acc = tl.dot(x, y, acc)
        a += BLOCK_K * stride_ak
        b += BLOCK_K * stride_bk
    om = tm * BLOCK_M + tl.arange(0, BLOCK_M)
    on = tn * BLOCK_N + tl.arange(0, BLOCK_N)
    c = c_ptr + om[:, None] * stride_cm + on[None, :] * stride_cn
    tl.store(c, acc.to(tl.float16), mask=(om[:, None] < M) & (on[None, :] < N))


@triton.jit
def rms_kernel(in_ptr, out_ptr, xnumel, rnumel, XBLOCK: tl.constexpr, RBLOCK: tl.constexpr):
    """out[row] = sqrt(mean(x[row, :]^2)), in the style inductor generates: an [XBLOCK, RBLOCK] fp32
    accumulator tile reduced once after the loop (big tiles spill)."""
    rows = tl.program_id(0) * XBLOCK + tl.arange(0, XBLOCK)[:, None]
    rmask = rows < xnumel
    cols = tl.arange(0, RBLOCK)[None, :]
    acc = tl.zeros([XBLOCK, RBLOCK], dtype=tl.float32)
    for off in range(0, rnumel, RBLOCK):
        idx = off + cols
        v = tl.load(in_ptr + rows * rnumel + idx, rmask & (idx < rnumel), other=0.0)
        acc += v * v
    total = tl.sum(acc, 1)[:, None]
    tl.store(out_ptr + rows, tl.sqrt(total / rnumel), rmask)


# ------------------------------------------------------------------------------------ config spaces


def mm_configs() -> list[Any]:
    """40 configs: the tile shapes of Triton's matmul tutorial / inductor's mm list, with BLOCK_K 32/64,
    3-5 stages and 4/8 warps; includes tiles that spill (256x256, 128x256 with 4 warps) and ones whose
    stages do not fit in shared memory (5 x 48 KB)."""
    space: list[tuple[int, int, int, int, int]] = []
    for bm, bn in ((128, 256), (256, 128)):
        space += [
            (bm, bn, 64, 3, 8),
            (bm, bn, 64, 4, 8),
            (bm, bn, 32, 4, 8),
            (bm, bn, 32, 5, 8),
            (bm, bn, 64, 3, 4),
            (bm, bn, 64, 5, 8),
        ]
    space += [
        (128, 128, 64, 3, 4),
        (128, 128, 64, 4, 4),
        (128, 128, 64, 3, 8),
        (128, 128, 64, 4, 8),
        (128, 128, 32, 4, 4),
        (128, 128, 32, 5, 8),
    ]
    for bm, bn in ((64, 256), (256, 64)):
        space += [(bm, bn, 64, 3, 4), (bm, bn, 64, 4, 8), (bm, bn, 32, 4, 4), (bm, bn, 32, 5, 8)]
    for bm, bn in ((128, 64), (64, 128)):
        space += [(bm, bn, 64, 3, 4), (bm, bn, 64, 4, 4), (bm, bn, 32, 4, 4), (bm, bn, 32, 5, 8)]
    space += [(64, 64, 64, 3, 4), (64, 64, 32, 4, 4), (64, 64, 32, 5, 4)]
    space += [(256, 256, 64, 3, 8), (256, 256, 32, 3, 8), (128, 256, 64, 4, 4)]
    return [
        triton.Config({"BLOCK_M": bm, "BLOCK_N": bn, "BLOCK_K": bk, "GROUP_M": 8}, num_stages=s, num_warps=w)
        for bm, bn, bk, s, w in space
    ]


def rms_configs() -> list[Any]:
    """20 configs of an inductor-style reduction: one row per CTA with long RBLOCK, a few rows with
    shorter RBLOCK, and big [XBLOCK, RBLOCK] fp32 tiles that spill."""
    space = [
        (1, 512, 4),
        (1, 1024, 4),
        (1, 2048, 8),
        (1, 4096, 8),
        (1, 4096, 16),
        (2, 512, 4),
        (2, 1024, 8),
        (4, 256, 4),
        (4, 512, 4),
        (4, 1024, 8),
        (8, 128, 4),
        (8, 256, 4),
        (8, 512, 8),
        (16, 256, 8),
        (16, 1024, 4),
        (64, 128, 4),
        (64, 256, 4),
        (32, 512, 4),
        (128, 128, 4),
        (64, 512, 8),
    ]
    return [triton.Config({"XBLOCK": x, "RBLOCK": r}, num_warps=w, num_stages=1) for x, r, w in space]


def label(config: Any) -> str:
    kw = config.kwargs
    if "BLOCK_M" in kw:
        return f"{kw['BLOCK_M']}x{kw['BLOCK_N']}x{kw['BLOCK_K']} s{config.num_stages} w{config.num_warps}"
    return f"X{kw['XBLOCK']} R{kw['RBLOCK']} w{config.num_warps}"


def mm_grid(meta: dict[str, Any]) -> tuple[int]:
    return (triton.cdiv(meta["M"], meta["BLOCK_M"]) * triton.cdiv(meta["N"], meta["BLOCK_N"]),)


def rms_grid(meta: dict[str, Any]) -> tuple[int]:
    return (triton.cdiv(meta["xnumel"], meta["XBLOCK"]),)


CASES: list[dict[str, Any]] = [
    {"name": "mm_4096x4096x4096", "kind": "mm", "shape": (4096, 4096, 4096)},
    {"name": "mm_8192x8192x1024", "kind": "mm", "shape": (8192, 8192, 1024)},
    {"name": "rms_32768x4096", "kind": "rms", "shape": (32768, 4096)},
    {"name": "rms_2048x65536", "kind": "rms", "shape": (2048, 65536)},
]


def keep_for(configs: list[Any]) -> int:
    """A third of the space, rounded up: the cut is >= 2x by construction (issue 5 asks for that)."""
    return math.ceil(len(configs) / 3)


def mm_named_args(m: int, n: int, k: int, a: Any = None, b: Any = None, c: Any = None) -> dict[str, Any]:
    a = a if a is not None else TensorArg("fp16")
    b = b if b is not None else TensorArg("fp16")
    c = c if c is not None else TensorArg("fp16")
    return {
        "a_ptr": a,
        "b_ptr": b,
        "c_ptr": c,
        "M": m,
        "N": n,
        "K": k,
        "stride_am": k,
        "stride_ak": 1,
        "stride_bk": n,
        "stride_bn": 1,
        "stride_cm": n,
        "stride_cn": 1,
    }


def rms_named_args(rows: int, cols: int, x: Any = None, out: Any = None) -> dict[str, Any]:
    return {
        "in_ptr": x if x is not None else TensorArg("fp32"),
        "out_ptr": out if out is not None else TensorArg("fp32"),
        "xnumel": rows,
        "rnumel": cols,
    }


def hook_rows(hook: Any) -> list[dict[str, Any]]:
    rows = []
    for s in hook.last_report:
        rows.append(
            {
                "config": label(s.config),
                "kept": s.kept,
                "rank": s.rank,
                "estimate": s.estimate,
                "registers": s.registers,
                "spill_store_bytes": s.spill_store_bytes,
                "shared_bytes": s.shared_bytes,
                "ctas_per_sm": None if s.occupancy is None else s.occupancy.ctas_per_sm,
                "model": s.model,
                "grid": s.grid,
                "reason": s.reason,
                "error": s.error,
            }
        )
    return rows


# ----------------------------------------------------------------------------------------- outputs


def write_outputs(out: Path, result: dict[str, Any]) -> None:
    out.mkdir(parents=True, exist_ok=True)
    (out / "autotune.json").write_text(json.dumps(result, indent=1, default=str))
    (out / "autotune.md").write_text(render_md(result))


def render_md(result: dict[str, Any]) -> str:
    lines = [
        "# ktriage autotune hook vs exhaustive triton.autotune",
        "",
        f"mode: {result.get('mode')}, env: {result.get('env')}",
        "",
    ]
    if result.get("mode") == "gpu":
        lines += [
            (
                "| case | configs | timed (pruned) | cut | pruned winner | exhaustive winner | ratio (h2h median) "
                "| exhaustive rank of pruned winner | tune s pruned / exhaustive | ok |"
            ),
            "|---|---|---|---|---|---|---|---|---|---|",
        ]
        for c in result["cases"]:
            if "error" in c and "ratio" not in c:
                lines.append(f"| {c['name']} | error: {str(c['error']).splitlines()[0][:120]} |||||||||")
                continue
            lines.append(
                f"| {c['name']} | {c.get('configs')} | {c.get('timed_pruned')} | {c.get('cut', 0):.2f}x | "
                f"{c.get('pruned_winner')} | {c.get('exhaustive_winner')} | {c.get('ratio', float('nan')):.4f} | "
                f"{c.get('pruned_winner_exhaustive_rank')} | {c.get('tune_s_pruned', 0):.1f} / "
                f"{c.get('tune_s_exhaustive', 0):.1f} | {c.get('ok')} |"
            )
        lines += [
            "",
            (
                "ratio = median time of the pruned run's winner / the exhaustive run's winner, timed head to head "
                "(interleaved rounds of triton.testing.do_bench). Target: ratio <= 1.02 and cut >= 2. "
                "The pruned run goes first and pays every compile (the hook compiles all configs without "
                "launching); the exhaustive run reuses Triton's cache, so its tuning time is mostly GPU "
                "timing."
            ),
            "",
        ]
    for c in result["cases"]:
        lines += [f"## {c['name']}", ""]
        if c.get("error"):
            lines += ["```", str(c["error"])[-1500:], "```", ""]
        rows = c.get("hook_report") or []
        exh = c.get("exhaustive_ms") or {}
        if rows:
            lines += [
                "| config | kept | rank | estimate | regs | spill B | CTAs/SM | exhaustive ms | why |",
                "|---|---|---|---|---|---|---|---|---|",
            ]
            for r in sorted(rows, key=lambda r: (r["rank"] is None, r["rank"] or 0)):
                ms = exh.get(r["config"])
                lines.append(
                    f"| {r['config']} | {'keep' if r['kept'] else 'drop'} | {r['rank']} | {r['estimate']} | "
                    f"{r['registers']} | {r['spill_store_bytes']} | {r['ctas_per_sm']} | "
                    f"{'' if ms is None else f'{ms:.4f}'} | {r['reason'][:160]} |"
                )
            lines.append("")
    return "\n".join(lines) + "\n"


# ----------------------------------------------------------------------------------------- dry run


def dry_run(target: str, out: Path | None, only: list[str] | None = None) -> dict[str, Any]:
    """Screen every case's configs for ``target`` without a GPU and print what the hook would keep."""
    result: dict[str, Any] = {
        "mode": "dry-run",
        "target": target,
        "env": {"triton": triton.__version__, "python": platform.python_version()},
        "cases": [],
    }
    hooks: dict[str, Any] = {}
    for case in CASES:
        if only and case["name"] not in only:
            continue
        entry: dict[str, Any] = {"name": case["name"]}
        result["cases"].append(entry)
        t0 = time.time()
        try:
            configs = mm_configs() if case["kind"] == "mm" else rms_configs()
            kernel = mm_kernel if case["kind"] == "mm" else rms_kernel
            if case["kind"] not in hooks:
                hooks[case["kind"]] = ktriage_prune(keep=keep_for(configs), target=target, kernel=kernel)["ktriage"]
            hook = hooks[case["kind"]]
            named = mm_named_args(*case["shape"]) if case["kind"] == "mm" else rms_named_args(*case["shape"])
            grid = mm_grid if case["kind"] == "mm" else rms_grid
            kept = hook(configs, named, grid=grid, warmup=False)
            entry.update(
                configs=len(configs),
                timed_pruned=len(kept),
                cut=len(configs) / len(kept),
                kept=[label(c) for c in kept],
                hook_report=hook_rows(hook),
                screen_s=round(time.time() - t0, 2),
            )
            print(f"\n== {case['name']}: keep {len(kept)} of {len(configs)} ({entry['screen_s']} s)")
            for r in sorted(entry["hook_report"], key=lambda r: (r["rank"] is None, r["rank"] or 0)):
                print(
                    f"{'keep' if r['kept'] else 'drop'} {r['rank']!s:>3} {r['config']:<22} {r['estimate']!s:>12}  {r['reason'][:150]}"
                )
        except Exception:
            entry["error"] = traceback.format_exc()
            print(entry["error"], file=sys.stderr)
        if out is not None:
            write_outputs(out, result)
    return result


# ----------------------------------------------------------------------------------------- GPU run


def _median_ms(timing: Any) -> float:
    """The autotuner stores do_bench's (median, p20, p80) list; a float when quantiles are off."""
    if isinstance(timing, (list, tuple)):
        return float(timing[0])
    return float(timing)


def gpu_case(case: dict[str, Any], tuners: dict[str, Any], entry: dict[str, Any], rounds: int) -> None:
    import torch
    from triton.testing import do_bench

    kind = case["kind"]
    configs = mm_configs() if kind == "mm" else rms_configs()
    kernel = mm_kernel if kind == "mm" else rms_kernel
    grid = mm_grid if kind == "mm" else rms_grid
    key = ["M", "N", "K"] if kind == "mm" else ["xnumel", "rnumel"]
    if kind not in tuners:
        prune = ktriage_prune(keep=keep_for(configs))
        tuners[kind] = {
            "hook": prune["ktriage"],
            "pruned": triton.autotune(configs=configs, key=key, prune_configs_by=prune)(kernel),
            "exhaustive": triton.autotune(configs=configs, key=key)(kernel),
        }
    hook, pruned, exhaustive = tuners[kind]["hook"], tuners[kind]["pruned"], tuners[kind]["exhaustive"]
    torch.manual_seed(0)
    if kind == "mm":
        m, n, k = case["shape"]
        a = torch.randn(m, k, device="cuda", dtype=torch.float16) / k**0.25
        b = torch.randn(k, n, device="cuda", dtype=torch.float16) / k**0.25
        c = torch.empty(m, n, device="cuda", dtype=torch.float16)
        args = tuple(mm_named_args(m, n, k, a, b, c).values())
        reference = (a.float() @ b.float()).half()
        output = c
        flops = 2.0 * m * n * k
    else:
        rows, cols = case["shape"]
        x = torch.randn(rows, cols, device="cuda", dtype=torch.float32)
        out = torch.empty(rows, device="cuda", dtype=torch.float32)
        args = tuple(rms_named_args(rows, cols, x, out).values())
        reference = x.pow(2).mean(1).sqrt()
        output = out
        flops = 0.0
    entry.update(configs=len(configs), keep=keep_for(configs))

    torch.cuda.synchronize()
    t0 = time.perf_counter()
    pruned[grid](*args)
    torch.cuda.synchronize()
    entry["tune_s_pruned"] = time.perf_counter() - t0
    entry["bench_s_pruned"] = getattr(pruned, "bench_time", None)
    entry["hook_report"] = hook_rows(hook)
    entry["timed_pruned"] = len(pruned.configs_timings)
    entry["cut"] = len(configs) / max(1, entry["timed_pruned"])
    entry["pruned_ms"] = {label(cfg): _median_ms(t) for cfg, t in pruned.configs_timings.items()}
    win_p = pruned.best_config
    entry["pruned_winner"] = label(win_p)
    entry["pruned_correct"] = bool(torch.allclose(output.float(), reference.float(), atol=3e-2, rtol=2e-2))
    print(
        f"  pruned: timed {entry['timed_pruned']} of {len(configs)} in {entry['tune_s_pruned']:.1f} s -> {label(win_p)}",
        flush=True,
    )

    torch.cuda.synchronize()
    t0 = time.perf_counter()
    exhaustive[grid](*args)
    torch.cuda.synchronize()
    entry["tune_s_exhaustive"] = time.perf_counter() - t0
    entry["bench_s_exhaustive"] = getattr(exhaustive, "bench_time", None)
    entry["timed_exhaustive"] = len(exhaustive.configs_timings)
    entry["exhaustive_ms"] = {label(cfg): _median_ms(t) for cfg, t in exhaustive.configs_timings.items()}
    win_e = exhaustive.best_config
    entry["exhaustive_winner"] = label(win_e)
    entry["exhaustive_correct"] = bool(torch.allclose(output.float(), reference.float(), atol=3e-2, rtol=2e-2))
    finite = sorted((ms, name) for name, ms in entry["exhaustive_ms"].items() if math.isfinite(ms))
    order = [name for _, name in finite]
    entry["exhaustive_order"] = order
    entry["pruned_winner_exhaustive_rank"] = order.index(label(win_p)) + 1 if label(win_p) in order else None
    kept = [r["config"] for r in entry["hook_report"] if r["kept"]]
    entry["exhaustive_winner_was_kept"] = label(win_e) in kept
    kept_ms = [entry["exhaustive_ms"][name] for name in kept if name in entry["exhaustive_ms"]]
    if kept_ms and finite:
        entry["best_kept_vs_best_in_exhaustive_run"] = min(kept_ms) / finite[0][0]
    print(
        f"  exhaustive: timed {entry['timed_exhaustive']} in {entry['tune_s_exhaustive']:.1f} s -> {label(win_e)}",
        flush=True,
    )

    # Head to head, interleaved rounds in this process.
    def launcher(cfg: Any) -> Any:
        meta = cfg.all_kwargs()
        return lambda: kernel[grid](*args, **meta)

    if label(win_p) == label(win_e):
        entry.update(same_config=True, ratio=1.0, h2h_ms_pruned=[], h2h_ms_exhaustive=[])
    else:
        run_p, run_e = launcher(win_p), launcher(win_e)
        tp: list[float] = []
        te: list[float] = []
        for i in range(rounds):
            first, second = (run_p, run_e) if i % 2 == 0 else (run_e, run_p)
            t_first = do_bench(first, warmup=10, rep=60, return_mode="median")
            t_second = do_bench(second, warmup=10, rep=60, return_mode="median")
            (tp, te)[0 if first is run_p else 1].append(t_first)
            (te, tp)[0 if first is run_p else 1].append(t_second)
        entry.update(
            same_config=False,
            h2h_ms_pruned=tp,
            h2h_ms_exhaustive=te,
            ratio=statistics.median(tp) / statistics.median(te),
        )
    if flops:
        best_ms = min(entry["exhaustive_ms"].values())
        entry["exhaustive_best_tflops"] = flops / (best_ms * 1e-3) / 1e12
    entry["ok"] = entry["ratio"] <= 1.02 and entry["cut"] >= 2.0
    print(f"  ratio {entry['ratio']:.4f}, cut {entry['cut']:.2f}x, ok={entry['ok']}", flush=True)


def gpu_run(out: Path, budget_s: float, rounds: int, only: list[str] | None) -> dict[str, Any]:
    t_start = time.perf_counter()
    result: dict[str, Any] = {
        "mode": "gpu",
        "cases": [],
        "env": {"triton": triton.__version__, "python": platform.python_version()},
    }
    try:
        import torch

        props = torch.cuda.get_device_properties(0)
        result["env"].update(
            torch=torch.__version__, gpu=props.name, sms=props.multi_processor_count, cc=f"{props.major}.{props.minor}"
        )
    except Exception:
        result["env_error"] = traceback.format_exc()
    write_outputs(out, result)
    tuners: dict[str, Any] = {}
    for case in CASES:
        if only and case["name"] not in only:
            continue
        entry: dict[str, Any] = {"name": case["name"], "shape": list(case["shape"])}
        result["cases"].append(entry)
        elapsed = time.perf_counter() - t_start
        if elapsed > budget_s:
            entry["error"] = f"skipped: {elapsed:.0f} s elapsed > budget {budget_s:.0f} s"
            print(entry["error"], flush=True)
            write_outputs(out, result)
            continue
        print(f"== {case['name']} (t={elapsed:.0f} s)", flush=True)
        try:
            gpu_case(case, tuners, entry, rounds)
        except Exception:
            entry["error"] = traceback.format_exc()
            print(entry["error"], file=sys.stderr, flush=True)
        entry["case_s"] = round(time.perf_counter() - t_start - elapsed, 2)
        write_outputs(out, result)
    done = [c for c in result["cases"] if "ratio" in c]
    result["summary"] = {
        "cases_done": len(done),
        "all_ok": bool(done) and all(c["ok"] for c in done),
        "worst_ratio": max((c["ratio"] for c in done), default=None),
        "min_cut": min((c["cut"] for c in done), default=None),
        "total_s": round(time.perf_counter() - t_start, 1),
    }
    write_outputs(out, result)
    print(json.dumps(result["summary"]), flush=True)
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, help="output directory (autotune.json, autotune.md)")
    parser.add_argument("--dry-run", action="store_true", help="screen only (no GPU); needs --target")
    parser.add_argument("--target", default=None, help="compile target for --dry-run, e.g. sm_90")
    parser.add_argument("--budget-s", type=float, default=140.0, help="skip cases starting after this many seconds")
    parser.add_argument("--rounds", type=int, default=6, help="interleaved head-to-head rounds")
    parser.add_argument("--only", nargs="*", help="case names to run (default: all)")
    args = parser.parse_args()
    if args.dry_run:
        dry_run(args.target or "sm_90", args.out, args.only)
        return
    if args.out is None:
        parser.error("--out DIR is required for the GPU run")
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    gpu_run(args.out, args.budget_s, args.rounds, args.only)


if __name__ == "__main__":
    main()
