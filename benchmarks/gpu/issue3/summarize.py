"""Summaries of the committed H200 runs of issue 3 (A/A false-flag rate and ratio spread, GPU time).

.venv/bin/python benchmarks/gpu/issue3/summarize.py > benchmarks/gpu/issue3/aa_and_cost.md
"""

from __future__ import annotations

import json
import statistics
from pathlib import Path

from ktriage.compare.pairing import compare_cells
from ktriage.measure.results_file import read_results

HERE = Path(__file__).resolve().parent


def aa() -> list[str]:
    runs = [read_results(HERE / "run2_layer_norm_aa" / f"aa_{i}.json") for i in range(1, 6)]
    out = [
        "## A/A: Triton 3.3.1's layer_norm bwd against itself, 30 inputs, 5 runs",
        "",
        "Each run is a separate `ktriage bench` process; runs 2..5 are compared with run 1 (default gate 5%, 99%).",
        "",
        "| comparison | backend | cells | regression | improvement | same | unsure | ratio median | ratio p5..p95 | max abs change |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    flagged = total = 0
    all_ratios: list[float] = []
    for i in range(1, 5):
        ref_run, ref_cells = runs[0]
        new_run, new_cells = runs[i]
        c = compare_cells(
            ref_cells,
            new_cells,
            ref_label="aa_1",
            new_label=f"aa_{i + 1}",
            ref_run=ref_run,
            new_run=new_run,
            baseline="torch_layer_norm",
        )
        for backend in ("liger_layer_norm", "torch_layer_norm"):
            pairs = [p for p in c.pairs if p.verdict is not None and p.backend == backend]
            verdicts = [p.verdict.verdict for p in pairs]
            ratios = sorted(p.verdict.ratio for p in pairs)
            if backend == "liger_layer_norm":
                all_ratios += ratios
            flagged += sum(v in ("regression", "improvement") for v in verdicts)
            total += len(pairs)
            q = statistics.quantiles(ratios, n=20)
            out.append(
                f"| aa_1 -> aa_{i + 1} | {backend} | {len(pairs)} | {verdicts.count('regression')} | "
                f"{verdicts.count('improvement')} | {verdicts.count('same')} | {verdicts.count('unsure')} | "
                f"{statistics.median(ratios):.4f} | {q[0]:.4f}..{q[-1]:.4f} | {max(abs(r - 1) for r in ratios) * 100:.2f}% |"
            )
    out += [
        "",
        f"Wrongly flagged (regression or improvement): **{flagged} of {total}** compared cells "
        f"({100 * flagged / total:.1f}%); liger (artifact, kernel timing) ratios: median {statistics.median(all_ratios):.4f}, "
        f"stdev {statistics.stdev(all_ratios):.4f}.",
        "",
    ]
    return out


def cost() -> list[str]:
    walls = dict(line.split() for line in (HERE / "run2_layer_norm_aa" / "walls.txt").read_text().splitlines())
    walls1 = dict(
        line.split() for line in (HERE / "run1_embedding_tritonbench_style" / "walls.txt").read_text().splitlines()
    )
    tb = [
        json.loads(line)
        for line in (HERE / "run1_embedding_tritonbench_style" / "tritonbench_style.jsonl").read_text().splitlines()
    ]
    run, cells = read_results(HERE / "run2_layer_norm_aa" / "ln_bwd.json")
    n_samples = sum(len(c.samples_ms) for c in cells)
    busy_s = sum(sum(c.samples_ms) for c in cells) / 1e3
    ktriage_wall = float(walls["ln_bwd_wall_s"])
    tb_wall = float(walls1["tritonbench_style_wall_s"])
    out = [
        "## GPU cost: the 30-input, 3-toolchain layer_norm bwd sweep",
        "",
        "| | processes | variants per input | wall time | samples | timed GPU time |",
        "|---|---|---|---|---|---|",
        f"| ktriage bench (one process, interleaved, adaptive stop, correctness checks) | 1 (+1 worker) | 5 (torch, host liger, 3 toolchains) | {ktriage_wall:.1f} s | {n_samples} | {busy_s:.1f} s |",
        f"| TritonBench-style (one process per toolchain, sequential, do_bench 25/100 ms) | 3 | 2 (torch, liger) | {tb_wall:.1f} s | - | - |",
        "",
        f"Ratio ktriage / TritonBench-style wall time: **{ktriage_wall / tb_wall:.2f}**.",
    ]
    for row in tb:
        out.append(f"- TritonBench-style process {row['toolchain']}: {row['wall_s']:.1f} s")
    return out


if __name__ == "__main__":
    print("\n".join(["# Issue 3 on the H200: A/A and cost", ""] + aa() + cost()))
