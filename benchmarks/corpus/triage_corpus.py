"""Triage every corpus bench (issue 23's "triaged" stage): each results file, which timed Triton 3.6.0 (reference),
3.3.1 and 3.4.0 side by side on the H200, triaged as the upgrade 3.3.1 -> 3.6.0 with its recorded workload, so each
flagged cell gets its side-by-side measured verdict, the compile-side cause and the cost model's prediction.
Compile-only bisects and fixes are left out here (--no-bisect --no-fixes: CPU time); the CPU machine only.

    .venv/bin/python benchmarks/corpus/triage_corpus.py [NAME...]   # writes h200/triage/NAME.{md,json}, summary.json

KT_SRC=DIR runs the ktriage found in DIR (e.g. `git archive HEAD ktriage | tar -x -C DIR`: the commit, not a shared
working tree with others' edits in flight), from a folder without ktriage/ in it, since `python -m ktriage` puts its
working folder first on sys.path. Given NAMEs, summary.json keeps the other programs' rows.
"""

from __future__ import annotations

import json
import os
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
    kt_src = os.environ.get("KT_SRC")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in (kt_src, os.environ.get("PYTHONPATH")) if p))
    cwd = out if kt_src else REPO  # not the repo root when running an export: its ktriage/ would come first
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
            str(path.resolve()),
            str(path.resolve()),
            "--workload",
            str(workload.resolve()),
            "--old-toolchain",
            "triton==3.3.1",
            "--new-toolchain",
            "triton==3.6.0",
            "--no-bisect",
            "--no-fixes",
            "-o",
            str((out / f"{name}.md").resolve()),
            "-o",
            str((out / f"{name}.json").resolve()),
        ]
        t0 = time.time()
        proc = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, check=False)
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
    summary = out / "summary.json"
    if names and summary.exists():  # keep the rows of the programs not triaged this time
        ran = {row["program"] for row in rows}
        rows = [row for row in json.loads(summary.read_text()) if row["program"] not in ran] + rows
        rows.sort(key=lambda row: str(row["program"]))
    summary.write_text(json.dumps(rows, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
