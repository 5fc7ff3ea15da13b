"""Triage every corpus bench (issue 23's "triaged" stage): each results file, which timed Triton 3.6.0 (reference),
3.3.1 and 3.4.0 side by side on the H200, triaged as the upgrade 3.3.1 -> 3.6.0 with its recorded workload, so each
flagged cell gets its side-by-side measured verdict, the compile-side cause and the cost model's prediction.
Compile-only bisects and fixes are left out here (--no-bisect --no-fixes: CPU time); the CPU machine only.

    .venv/bin/python benchmarks/corpus/triage_corpus.py [NAME...]   # writes h200/triage/NAME.{md,json}, summary.json
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
DATA = HERE / "h200"


def main(names: list[str]) -> int:
    out = DATA / "triage"
    out.mkdir(exist_ok=True)
    results = sorted((DATA / "bench").glob("*.json"))
    rows = []
    for path in results:
        name = path.stem
        workload = DATA / "workloads" / f"{name}.workload.json.gz"
        if (names and name not in names) or not workload.exists():
            continue
        cmd = [
            sys.executable,
            "-m",
            "ktriage",
            "triage",
            str(path),
            str(path),
            "--workload",
            str(workload),
            "--old-toolchain",
            "triton==3.3.1",
            "--new-toolchain",
            "triton==3.6.0",
            "--no-bisect",
            "--no-fixes",
            "-o",
            str(out / f"{name}.md"),
            "-o",
            str(out / f"{name}.json"),
        ]
        t0 = time.time()
        proc = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, check=False)
        report_path = out / f"{name}.json"
        report = json.loads(report_path.read_text()) if report_path.exists() else {}
        if report:
            report["exit_code"] = proc.returncode
            report_path.write_text(json.dumps(report, indent=1) + "\n")
        row = {
            "program": name,
            "exit_code": proc.returncode,
            "wall_s": round(time.time() - t0, 1),
            "headline": report.get("headline"),
            "error": proc.stderr.strip().splitlines()[-3:] if proc.returncode not in (0, 1) else None,
        }
        rows.append(row)
        print(f"{name}: exit {proc.returncode} in {row['wall_s']} s | {row['headline']}", flush=True)
    (out / "summary.json").write_text(json.dumps(rows, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
