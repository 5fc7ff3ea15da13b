"""Triage end to end on the H200 bench runs of recorded workloads (benchmarks/record/h200c/bench):
each run split into an old and a new results file (Triton 3.3.1 -> 3.6.0, the upgrade to the GPU
image's Triton), triaged with the workload file, so every flagged cell is explained compile-side
from the recorded kernel itself (the recorded bench's cells name their workload entry).

    .venv/bin/python benchmarks/triage/recorded_pairs.py      # CPU machine, no GPU

Writes benchmarks/triage/recorded_pairs/<workload>.{md,json} and summary.json.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from e2e_h200_runs import split

REPO = Path(__file__).resolve().parents[2]
BENCH = REPO / "benchmarks" / "record" / "h200c" / "bench"
WORKLOADS = {
    "tb_rms_norm_bwd": "h200",
    "tb_cross_entropy_bwd": "h200",
    "tb_swiglu_bwd": "h200",
    "tb_layer_norm_bwd": "h200",
    "tb_flce_bwd": "h200b",
    "tb_flce_fwd": "h200c",
    "autotuned_matmul": "h200b",
    "fla_gated_delta": "h200c",
}
OLD, NEW = "triton==3.3.1", "triton==3.6.0"


def main() -> int:
    out = REPO / "benchmarks" / "triage" / "recorded_pairs"
    sides = out / "sides"
    sides.mkdir(parents=True, exist_ok=True)
    rows = []
    for name, folder in WORKLOADS.items():
        results = BENCH / f"wl-{name}.json"
        workload = REPO / "benchmarks" / "record" / folder / f"{name}.workload.json.gz"
        here = sides / name
        here.mkdir(exist_ok=True)
        a, b = split(results, OLD, NEW, here)
        cmd = [
            sys.executable,
            "-m",
            "ktriage",
            "triage",
            str(a),
            str(b),
            "--workload",
            str(workload),
            "-o",
            str(out / f"{name}.md"),
            "-o",
            str(out / f"{name}.json"),
        ]
        t0 = time.time()
        proc = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, check=False)
        report = json.loads((out / f"{name}.json").read_text()) if (out / f"{name}.json").exists() else {}
        row = {
            "workload": name,
            "exit_code": proc.returncode,
            "wall_s": round(time.time() - t0, 1),
            "headline": report.get("headline"),
            "counts": report.get("counts"),
            "cells": [
                {
                    "input": c["input"],
                    "backend": c["backend"],
                    "change_pct": c["change_pct"],
                    "verdict": c["verdict"],
                    "cause": (c.get("cause") or {}).get("summary"),
                }
                for c in report.get("cells", [])
            ],
        }
        rows.append(row)
        print(f"{name}: exit {proc.returncode} in {row['wall_s']} s | {row['headline']}")
        if proc.returncode not in (0, 1):
            print(proc.stderr[-2000:])
    (out / "summary.json").write_text(json.dumps(rows, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
