"""Issue 5, H200 acceptance: Liger 0.5.10 layer_norm backward on Triton 3.4.0, tuned by `ktriage tune`,
against Triton 3.3.1's library config and torch's backward, at every TritonBench fp32 input N=4608..8192.

Three steps (the GPU host cannot compile, this machine has no GPU):

    python benchmarks/tune/layer_norm_tuned.py prepare          # CPU: `ktriage tune` per N -> one merged bundle
    ktriage bench --bundle .bundles/ln-tuned --op layer_norm --bwd --only liger_layer_norm,torch_layer_norm \\
        --artifacts-only --artifact-timing kernel --min-samples 50 --max-time 4 --output-json ln_tuned.json   # GPU
    python benchmarks/tune/layer_norm_tuned.py report ln_tuned.json --out benchmarks/tune/results   # CPU

`prepare` runs the real `ktriage tune liger.layer_norm -t triton==3.4.0 -i N=4608 ... -i N=8192 --compare-with
triton==3.3.1 --bundle ...` (compile-only screening per input; the kept configs become variants of the 3.4.0
toolchain; the per-input bundles are merged so that one GPU process times every input). `report` runs the
same command with `--results` (each input's GPU winner among its kept configs, as `ktriage tune` reports it)
and writes a table: 3.3.1, 3.4.0 library config, 3.4.0 tuned, torch.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
NS = list(range(4608, 8192 + 1, 512))
TUNED, BEFORE = "triton==3.4.0", "triton==3.3.1"


def _tune(bundle: Path, extra: list[str]) -> list[dict]:
    """`ktriage tune` over all N at once: one merged bundle, one report per input."""
    inputs = [x for n in NS for x in ("-i", f"N={n}")]
    cmd = [
        sys.executable,
        "-m",
        "ktriage",
        "tune",
        "liger.layer_norm",
        "-t",
        TUNED,
        *inputs,
        "--compare-with",
        BEFORE,
        "--bundle",
        str(bundle),
        "-f",
        "json",
        *extra,
    ]
    proc = subprocess.run(cmd, capture_output=True, text=True, cwd=REPO)
    if proc.returncode != 0:
        raise SystemExit(f"ktriage tune failed:\n{proc.stderr[-2000:]}")
    return list(json.loads(proc.stdout)["inputs"])


def prepare(args: argparse.Namespace) -> None:
    for n, rep in zip(NS, _tune(Path(args.bundle), []), strict=True):
        rec = rep["recommended"]
        print(
            f"N={n}: recommended {rec['label']} ({rec['resources']['registers']} regs, "
            f"{rec['resources']['spill_store_bytes']} B spills); variants {rep['timing']['bundle']['variants']}"
        )
    print(f"bundle: {args.bundle}")


def report(args: argparse.Namespace) -> None:
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    rows, full = [], {}
    for n, rep in zip(NS, _tune(Path(args.bundle), ["--results", str(Path(args.results).resolve())]), strict=True):
        full[n] = rep
        t = rep["timing"] or {}
        med, base = t.get("medians_ms", {}), t.get("baselines_ms", {})
        winner = t.get("winner")
        old = next((v for k, v in base.items() if k.startswith(BEFORE)), None)
        torch_ms = base.get("torch_layer_norm")
        best = med.get(winner) if winner else None
        rows.append(
            {
                "N": n,
                "triton_3.3.1_ms": old,
                "triton_3.4.0_default_ms": med.get("default"),
                "tuned_config": winner,
                "tuned_ms": best,
                "tuned_vs_3.3.1": old / best if old and best else None,
                "tuned_vs_torch": torch_ms / best if torch_ms and best else None,
                "torch_ms": torch_ms,
                "recommended_compile_only": rep["recommended"]["label"],
                "all_variants_ms": med,
                "failed": t.get("failed"),
            }
        )
    (out / "layer_norm_tuned.json").write_text(json.dumps({"rows": rows, "tune_reports": full}, indent=1))
    lines = [
        "| N | 3.3.1 ms | 3.4.0 default ms | 3.4.0 tuned ms (config) | torch ms | tuned vs 3.3.1 | tuned vs torch |",
        "|---|---|---|---|---|---|---|",
    ]
    fmt = lambda v: "-" if v is None else f"{v:.4f}"  # noqa: E731
    ratio = lambda v: "-" if v is None else f"{v:.3f}x"  # noqa: E731
    for r in rows:
        lines.append(
            f"| {r['N']} | {fmt(r['triton_3.3.1_ms'])} | {fmt(r['triton_3.4.0_default_ms'])} | "
            f"{fmt(r['tuned_ms'])} ({r['tuned_config']}) | {fmt(r['torch_ms'])} | "
            f"{ratio(r['tuned_vs_3.3.1'])} | {ratio(r['tuned_vs_torch'])} |"
        )
    (out / "layer_norm_tuned.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("prepare")
    p.add_argument("--bundle", default=str(REPO / ".bundles" / "ln-tuned"))
    r = sub.add_parser("report")
    r.add_argument("results")
    r.add_argument("--bundle", default=str(REPO / ".bundles" / "ln-tuned"))
    r.add_argument("--out", default=str(REPO / "benchmarks" / "tune" / "results"))
    a = ap.parse_args()
    prepare(a) if a.cmd == "prepare" else report(a)


if __name__ == "__main__":
    main()
