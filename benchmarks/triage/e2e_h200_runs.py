"""`ktriage triage` end to end on real H200 measurements (issue 12): ktriage bench runs of the Liger
layer_norm and embedding backward with Triton 3.3.1 / 3.4.0 artifacts and a ptxas pair, timed side by
side in one GPU process (benchmarks/gpu/issue3), split into an old and a new results file per
comparison and triaged: verdicts from raw samples, compile-side cause, compile-only bisect, fixes.

    .venv/bin/python benchmarks/triage/e2e_h200_runs.py [--out benchmarks/triage/h200_e2e]

CPU only (the measurements are the committed H200 runs; the explain, bisect and fix steps compile).
Writes <name>.md/.json/.html per comparison and summary.json with the wall time of each triage.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

from ktriage.measure.results_file import read_results, write_results

ISSUE3 = REPO / "benchmarks" / "gpu" / "issue3"
# (name, results file, old toolchain, new toolchain)
COMPARISONS = [
    ("layer_norm_bwd_3.3.1_vs_3.4.0", ISSUE3 / "run2_layer_norm_aa" / "ln_bwd.json", "triton==3.3.1", "triton==3.4.0"),
    (
        "embedding_bwd_ptxas_12.4.131_vs_12.8.93",
        ISSUE3 / "run1_embedding_tritonbench_style" / "emb_bwd.json",
        "triton==3.4.0,ptxas==12.4.131",
        "triton==3.4.0",
    ),
]


def split(results: Path, old: str, new: str, out: Path) -> tuple[Path, Path]:
    """The run's cells of one toolchain each (plus the host's own backends, e.g. the torch baseline)."""
    run, cells = read_results(results)
    paths = []
    for spec in (old, new):
        record = next(r for r in run.toolchains if r["spec"] == spec)
        side = replace(run, toolchains=[record])
        kept = [c for c in cells if c.key.toolchain in (None, record["id"])]
        paths.append(write_results(out / f"side-{spec.replace('==', '-').replace(',', '_')}.json", side, kept))
    return paths[0], paths[1]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=REPO / "benchmarks" / "triage" / "h200_e2e")
    args = ap.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    summary = []
    for name, results, old, new in COMPARISONS:
        sides = args.out / "sides"
        sides.mkdir(exist_ok=True)
        a, b = split(results, old, new, sides)
        cmd = [
            sys.executable,
            "-m",
            "ktriage",
            "triage",
            str(a),
            str(b),
            "-o",
            str(args.out / f"{name}.md"),
            "-o",
            str(args.out / f"{name}.json"),
            "-o",
            str(args.out / f"{name}.html"),
        ]
        t0 = time.time()
        proc = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, check=False)
        wall = time.time() - t0
        report = json.loads((args.out / f"{name}.json").read_text()) if (args.out / f"{name}.json").exists() else {}
        regressions = [c for c in report.get("cells", []) if c["verdict"] == "regression"]
        row = {
            "name": name,
            "exit_code": proc.returncode,
            "wall_s": round(wall, 1),
            "old": old,
            "new": new,
            "regressions": len(regressions),
            "counts": report.get("counts"),
            "causes": sorted({c["cause"]["text"] for c in regressions if c.get("cause")}),
            "culprits": sorted({c["culprit"]["summary"] for c in regressions if c.get("culprit")}),
            "fixes": sorted(
                {
                    (f["description"] + (" (verified by compiling)" if f.get("verified") else ""))
                    if isinstance(f, dict)
                    else str(f)
                    for c in regressions
                    for f in c.get("fixes", [])
                }
            )[:4],
        }
        summary.append(row)
        print(json.dumps(row))
        if proc.returncode not in (0, 1):
            print(proc.stderr[-2000:])
        for p in sides.iterdir():
            p.unlink()
        sides.rmdir()
    (args.out / "summary.json").write_text(json.dumps(summary, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
