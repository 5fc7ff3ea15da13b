"""Issue 15's tables from what run_multigpu.sh wrote: the one-GPU and all-GPU sweeps' wall times and
toolchain verdicts side by side (they must be identical), and the A/A across GPUs: each GPU's run
against GPU 0's, cell by cell, as ratios of medians (the spread; no verdict compares two GPUs).

    python benchmarks/multigpu/summarize.py DIR
"""

from __future__ import annotations

import statistics
import sys
from pathlib import Path

from ktriage.compare.pairing import compare_toolchains
from ktriage.measure.results_file import read_results
from ktriage.ops.registry import default_baselines


def verdicts(path: Path) -> dict[tuple[str, int], str]:
    run, cells = read_results(path)
    out: dict[tuple[str, int], str] = {}
    for comp in compare_toolchains(cells, run=run, default_baselines=default_baselines()):
        for p in comp.pairs:
            if p.verdict is not None and p.new_toolchain is not None:
                out[(p.new_toolchain, p.input_id)] = p.verdict.verdict
    return out


def medians(path: Path) -> dict[str, float]:
    _, cells = read_results(path)
    return {c.key.label(): statistics.median(c.samples_ms) for c in cells if c.status == "ok" and c.samples_ms}


def main(d: Path) -> None:
    print("# Issue 15: several GPUs of one host\n")
    print((d / "walls.txt").read_text() if (d / "walls.txt").exists() else "no walls.txt")
    one, many = d / "one_gpu.json", d / "all_gpus.json"
    if one.exists() and many.exists():
        a, b = verdicts(one), verdicts(many)
        same = sum(1 for k in a if b.get(k) == a[k])
        print(f"\nverdicts: {same} of {len(a)} identical on one GPU and on all GPUs")
        for k in sorted(set(a) | set(b)):
            if a.get(k) != b.get(k):
                print(f"- differs: {k}: one GPU {a.get(k)}, all GPUs {b.get(k)}")
    runs = sorted(d.glob("aa_gpu*.json"))
    if len(runs) > 1:
        ref = medians(runs[0])
        print(f"\n## A/A across GPUs (medians against {runs[0].stem})\n")
        print("| run | cells | ratio median | min..max |\n|---|---|---|---|")
        for r in runs[1:]:
            m = medians(r)
            ratios = [m[k] / ref[k] for k in m if k in ref and ref[k] > 0]
            if ratios:
                print(
                    f"| {r.stem} | {len(ratios)} | {statistics.median(ratios):.4f} | {min(ratios):.4f}..{max(ratios):.4f} |"
                )


if __name__ == "__main__":
    main(Path(sys.argv[1]))
