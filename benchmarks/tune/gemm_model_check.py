"""Issue 10 point 12, GPU acceptance: is the tuning model's recommendation for a fp16 4096^3 matmul
within 10% of the best of the Triton matmul tutorial's own configs?

The kernel is the catalog's ``tutorial.matmul`` (ktriage/catalog/kernels/matmul.py); every config is
timed with ``triton.testing.do_bench`` on real torch tensors, checked against ``torch.matmul``.
The recommended config comes from the one cost model (ktriage.predict.configs) that ``ktriage tune`` and
the autotune hook share:

- default, ``--from-tune FILE`` (default ``results/gemm_model/tune_4096.json`` beside this script):
  the ``recommended`` (and the other kept) configs of the compile-only run
  ``ktriage tune tutorial.matmul --fwd --dtype fp16 -i 3 -t triton==3.4.0 --compile-only --warps 4,8 --all -f json -o FILE`` (CPU);
- ``--rank-on-host``: the prune hook ranks tune's config space (``ktriage.tune.space.config_space``
  of the same catalog spec, 4 and 8 warps: 144 configs, a few minutes of compiles) with the host's
  Triton for the active GPU, and its rank 1 is timed.

    python3 benchmarks/tune/gemm_model_check.py --out DIR              # on the GPU (H200), torch + triton
    python3 benchmarks/tune/gemm_model_check.py --dry-run              # no GPU: the plan; with triton
                                                                       # importable also the ranking for sm_90
Needs only the repository (ktriage is imported from it; no toolchain, no network) plus torch and
triton for the GPU run. Prints one line per config and the verdict; writes DIR/gemm_model_check.json.
Exit status 0 when the recommendation is within 10% (or in --dry-run), 1 when it is not.
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from ktriage.catalog import expand_op
from ktriage.tune.space import config_space

M = N = K = 4096
# Triton's tutorial 03 (get_cuda_autotune_config, fp16) and the catalog's own start config, as
# (BLOCK_M, BLOCK_N, BLOCK_K, GROUP_M, num_stages, num_warps).
TUTORIAL = [
    (128, 256, 64, 8, 3, 8),
    (64, 256, 32, 8, 4, 4),
    (128, 128, 32, 8, 4, 4),
    (128, 64, 32, 8, 4, 4),
    (64, 128, 32, 8, 4, 4),
    (128, 32, 32, 8, 4, 4),
    (64, 32, 32, 8, 5, 2),
    (32, 64, 32, 8, 5, 2),
]
START = (128, 128, 64, 8, 3, 8)
TOLERANCE = 1.10
DEFAULT_TUNE = Path(__file__).resolve().parent / "results" / "gemm_model" / "tune_4096.json"


def label(c: tuple[int, ...]) -> str:
    return f"{c[0]}x{c[1]}x{c[2]} G{c[3]} s{c[4]} w{c[5]}"


def tune_space() -> list[tuple[int, int, int, int, int, int]]:
    """Every config ``ktriage tune`` searches for the catalog matmul at 4096^3 (blocks x warps x stages)."""
    spec = expand_op("tutorial.matmul", mode="fwd", dtype="fp16", inputs=["3"])[0]
    space = config_space(spec, warps=[4, 8])  # 1-2 warps spill and 16-32 never win for these tiles
    out = []
    for cfg in space.configs():
        b = cfg.blocks
        out.append((b["BLOCK_M"], b["BLOCK_N"], b["BLOCK_K"], 8, cfg.num_stages, cfg.num_warps))
    return out


def from_tune(path: Path) -> list[tuple[int, int, int, int, int, int]]:
    """The recommended config first, then the other kept ones, from a `ktriage tune -f json` report."""
    data = json.loads(path.read_text())
    report = data["inputs"][0] if "inputs" in data else data
    rows = [report["recommended"]] + [c for c in report.get("candidates", []) if c.get("kept")]
    out: list[tuple[int, int, int, int, int, int]] = []
    for row in rows:
        cfg = row["config"]
        c = cfg["constexprs"]
        t = (c["BLOCK_M"], c["BLOCK_N"], c["BLOCK_K"], 8, cfg["num_stages"], cfg["num_warps"])
        if t not in out:
            out.append(t)
    return out


def hook_rank(configs: list[tuple[int, ...]], target: Any) -> list[dict[str, Any]]:
    """The prune hook's ranking of ``configs`` (the shared tile model), best first."""
    import triton

    from ktriage.catalog.kernels.matmul import matmul_kernel
    from ktriage.tune.autotune import TensorArg, ktriage_prune

    cfgs = [
        triton.Config(
            {"BLOCK_M": c[0], "BLOCK_N": c[1], "BLOCK_K": c[2], "GROUP_M": c[3]}, num_stages=c[4], num_warps=c[5]
        )
        for c in configs
    ]
    args = {
        "a_ptr": TensorArg("fp16"),
        "b_ptr": TensorArg("fp16"),
        "c_ptr": TensorArg("fp16"),
        "M": M,
        "N": N,
        "K": K,
        "stride_am": K,
        "stride_ak": 1,
        "stride_bk": N,
        "stride_bn": 1,
        "stride_cm": N,
        "stride_cn": 1,
    }
    hook = ktriage_prune(keep=len(cfgs), target=target, kernel=matmul_kernel)["ktriage"]
    hook(cfgs, args, grid=lambda meta: (triton.cdiv(M, meta["BLOCK_M"]) * triton.cdiv(N, meta["BLOCK_N"]),))
    rows = [dict(s.to_json(), cfg=list(c)) for s, c in zip(hook.last_report, configs, strict=True)]
    return sorted(rows, key=lambda r: r["rank"] or 10**6)


def time_configs(configs: list[tuple[int, ...]], rounds: int) -> dict[str, dict[str, Any]]:
    import torch
    import triton

    from ktriage.catalog.kernels.matmul import matmul_kernel

    torch.manual_seed(0)
    a = torch.randn((M, K), device="cuda", dtype=torch.float16)
    b = torch.randn((K, N), device="cuda", dtype=torch.float16)
    ref = torch.matmul(a, b)
    c = torch.empty((M, N), device="cuda", dtype=torch.float16)

    def launch(cfg: tuple[int, ...]) -> Any:
        bm, bn, bk, gm, stages, warps = cfg
        grid = (triton.cdiv(M, bm) * triton.cdiv(N, bn),)
        return lambda: matmul_kernel[grid](
            a,
            b,
            c,
            M,
            N,
            K,
            a.stride(0),
            a.stride(1),
            b.stride(0),
            b.stride(1),
            c.stride(0),
            c.stride(1),
            BLOCK_M=bm,
            BLOCK_N=bn,
            BLOCK_K=bk,
            GROUP_M=gm,
            num_warps=warps,
            num_stages=stages,
        )

    out: dict[str, dict[str, Any]] = {}
    fns = {}
    for cfg in configs:
        try:
            fn = launch(cfg)
            fn()
            torch.cuda.synchronize()
            ok = bool(torch.allclose(c, ref, atol=1.0, rtol=1e-2))
            fns[label(cfg)] = fn
            out[label(cfg)] = {"config": list(cfg), "correct": ok, "ms": []}
        except Exception as exc:
            out[label(cfg)] = {"config": list(cfg), "error": f"{type(exc).__name__}: {str(exc)[:200]}"}
    for _ in range(rounds):  # interleaved rounds: clocks and heat hit every config alike
        for name, fn in fns.items():
            out[name]["ms"].append(triton.testing.do_bench(fn, warmup=25, rep=100))
    flops = 2.0 * M * N * K
    for row in out.values():
        if row.get("ms"):
            row["median_ms"] = statistics.median(row["ms"])
            row["tflops"] = flops / (row["median_ms"] * 1e-3) / 1e12
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument(
        "--dry-run", action="store_true", help="no GPU: print the plan (and the sm_90 ranking if triton imports)"
    )
    ap.add_argument(
        "--from-tune",
        type=Path,
        default=DEFAULT_TUNE,
        help="a `ktriage tune -f json` report whose recommendation to time (default: %(default)s)",
    )
    ap.add_argument("--rank-on-host", action="store_true", help="rank tune's space with the hook on this host instead")
    ap.add_argument(
        "--target", default=None, help="compile target for the hook (default: the active GPU; dry run: sm_90)"
    )
    ap.add_argument("--top", type=int, default=3, help="also time the model's next best configs (default 3)")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--out", type=Path, help="directory for gemm_model_check.json")
    args = ap.parse_args(argv)

    result: dict[str, Any] = {
        "shape": [M, N, K],
        "dtype": "fp16",
        "tutorial": [label(c) for c in TUTORIAL],
        "start": label(START),
        "host": platform.node(),
    }
    ranking: list[dict[str, Any]] = []
    if not args.rank_on_host and not args.from_tune.exists():
        print(f"(no tune report at {args.from_tune}: ranking tune's space with the hook on this host)")
    if not args.rank_on_host and args.from_tune.exists():
        picked = from_tune(args.from_tune)
        result["source"] = f"ktriage tune report {args.from_tune}"
    else:
        space = tune_space()
        result["source"] = f"prune hook over tune's space ({len(space)} configs)"
        target = args.target or ("sm_90" if args.dry_run else None)
        try:
            t0 = time.time()
            ranking = hook_rank(space, target)
            result["rank_s"] = round(time.time() - t0, 1)
        except ImportError as exc:
            if not args.dry_run:
                raise
            print(f"(dry run: no ranking, {exc}; {len(space)} configs would be ranked by the hook)")
        picked = [tuple(r["cfg"]) for r in ranking if r.get("kept") and r.get("estimate") is not None]
    recommended = picked[0] if picked else None
    result["recommended"] = label(recommended) if recommended else None
    result["ranking"] = [
        {k: r[k] for k in ("cfg", "rank", "estimate", "registers", "spill_store_bytes", "detail")} for r in ranking
    ]
    for r in ranking[:12]:
        print(f"rank {r['rank']:>3}  {label(tuple(r['cfg'])):<22} estimate {r['estimate']}  {r['detail']}")
    print(f"recommended: {result['recommended']} ({result['source']})")
    to_time = list(dict.fromkeys([*picked[: 1 + args.top], START, *TUTORIAL]))
    result["timed"] = [label(c) for c in to_time]
    if args.dry_run:
        print("would time:", ", ".join(result["timed"]))
        _write(args.out, result)
        return 0
    timings = time_configs(to_time, args.rounds)
    result["timings"] = timings
    tutorial_rows = [timings[label(c)] for c in TUTORIAL + [START] if timings[label(c)].get("median_ms")]
    best_tut = min(tutorial_rows, key=lambda r: r["median_ms"])
    for name, row in sorted(timings.items(), key=lambda kv: kv[1].get("median_ms", 1e9)):
        tag = " <- recommended" if recommended and name == label(recommended) else ""
        if "error" in row:
            print(f"{name:<22} error {row['error']}{tag}")
        else:
            print(
                f"{name:<22} {row['median_ms'] * 1e3:8.1f} us  {row['tflops']:6.1f} TFLOP/s  correct={row['correct']}{tag}"
            )
    rec = timings.get(label(recommended)) if recommended else None
    ok = bool(rec and rec.get("median_ms") and rec["correct"] and rec["median_ms"] <= TOLERANCE * best_tut["median_ms"])
    ratio = rec["median_ms"] / best_tut["median_ms"] if rec and rec.get("median_ms") else None
    result.update(best_tutorial=label(tuple(best_tut["config"])), ratio=ratio, within_10_percent=ok)
    print(
        f"best tutorial config: {result['best_tutorial']} {best_tut['median_ms'] * 1e3:.1f} us; recommended/best = "
        f"{ratio if ratio is None else round(ratio, 3)} -> {'PASS' if ok else 'FAIL'} (within 10%: {ok})"
    )
    _write(args.out, result)
    return 0 if ok else 1


def _write(out: Path | None, result: dict[str, Any]) -> None:
    if out is None:
        return
    out.mkdir(parents=True, exist_ok=True)
    (out / "gemm_model_check.json").write_text(json.dumps(result, indent=1, default=str))


if __name__ == "__main__":
    raise SystemExit(main())
