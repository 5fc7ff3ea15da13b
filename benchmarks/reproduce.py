"""Do the committed explain reports still reproduce? (issue 10: "every number in benchmarks/ reproduces")

Re-runs the explain commands of benchmarks/explain/README.md into a temporary directory and compares
with the committed files: each markdown report byte for byte, each JSON report after dropping what
legitimately differs between runs and machines: the ``created`` timestamp and the artifact cache
paths, which name the machine's KTRIAGE_HOME or, as ``$KTRIAGE_HOME/artifacts/<key>``, a key that
changes with the cache's key recipe (the kernel file's path joined it) while the artifact does not.
No GPU; needs the toolchains (built on first use).

    python3 benchmarks/reproduce.py                # prints one line per report, exit 1 if any differs
    python3 benchmarks/reproduce.py --keep DIR     # keep the regenerated reports in DIR
    python3 benchmarks/reproduce.py --explain-only # skip the verdict-accuracy simulation (~2 min)

It also re-runs the seeded verdict-accuracy simulation (benchmarks/stats) and compares its summary
and per-setting rows with the committed JSON (the ``meta`` block names the machine and date).

GPU benchmarks (benchmarks/gpu, benchmarks/fidelity/h200, benchmarks/tune/results) need the H200 and are
re-run with the commands in their READMEs; this script covers everything that reproduces on a CPU.
"""

from __future__ import annotations

import argparse
import difflib
import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
EXPLAIN = HERE / "explain"
# (committed report stem, explain arguments): the commands of benchmarks/explain/README.md.
REPORTS: list[tuple[str, list[str]]] = [
    (
        "layer_norm_bwd_triton_3.3.1_vs_3.4.0",
        ["liger.layer_norm", "--bwd", "--arch", "sm_90", "-t", "triton==3.3.1", "-t", "triton==3.4.0"],
    ),
    (
        "embedding_bwd_ptxas_12.4.131_vs_12.8.93",
        ["liger.embedding", "--bwd", "--arch", "sm_90", "-t", "triton==3.4.0,ptxas==12.4.131", "-t", "triton==3.4.0"],
    ),
    (
        "rms_norm_bwd_bf16_triton_3.8.0_vs_3.9.0",
        [
            "liger.rms_norm",
            "--bwd",
            "-t",
            "triton==3.8.0",
            "-t",
            "triton==3.9.0",
            "--input",
            "N=16384",
            "--dtype",
            "bf16",
        ],
    ),
]
VOLATILE_KEYS = {"created"}
PATH_KEYS = {"ptx", "cubin", "ttgir", "llir", "sass", "log", "path", "artifact_dir"}


def normalize(value: Any) -> Any:
    """The JSON without run-dependent fields: timestamps and absolute artifact paths."""
    if isinstance(value, dict):
        return {
            k: (
                "<path>"
                if k in PATH_KEYS and isinstance(v, str) and v.startswith(("/", "$KTRIAGE_HOME"))
                else normalize(v)
            )
            for k, v in value.items()
            if k not in VOLATILE_KEYS
        }
    if isinstance(value, list):
        return [normalize(v) for v in value]
    return value


def explain(stem: str, args: list[str], out: Path) -> tuple[int, str]:
    cmd = [
        sys.executable,
        "-m",
        "ktriage",
        "explain",
        *args,
        "-o",
        str(out / f"{stem}.md"),
        "-o",
        str(out / f"{stem}.json"),
    ]
    proc = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, check=False)
    return proc.returncode, proc.stderr[-2000:]


def compare(stem: str, out: Path) -> list[str]:
    """Differences between the committed and the regenerated report (empty: reproduced)."""
    problems: list[str] = []
    old_md, new_md = (EXPLAIN / f"{stem}.md").read_text(), (out / f"{stem}.md").read_text()
    if old_md != new_md:
        diff = difflib.unified_diff(old_md.splitlines(), new_md.splitlines(), "committed", "now", lineterm="", n=0)
        problems.append("markdown differs:\n" + "\n".join(list(diff)[:20]))
    old_js = normalize(json.loads((EXPLAIN / f"{stem}.json").read_text()))
    new_js = normalize(json.loads((out / f"{stem}.json").read_text()))
    if old_js != new_js:
        a, b = (json.dumps(x, indent=1, sort_keys=True).splitlines() for x in (old_js, new_js))
        problems.append(
            "json differs:\n" + "\n".join(list(difflib.unified_diff(a, b, "committed", "now", lineterm="", n=0))[:20])
        )
    return problems


def verdict_accuracy(out: Path) -> list[str]:
    """Re-run benchmarks/stats/verdict_accuracy.py (seeded) and compare its numbers with the commit."""
    script = HERE / "stats" / "verdict_accuracy.py"
    proc = subprocess.run(
        [sys.executable, str(script), "--out", str(out / "stats")],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=False,
    )
    if proc.returncode != 0:
        return [f"verdict_accuracy.py exited {proc.returncode}: {proc.stderr[-1000:]}"]
    old = json.loads((HERE / "stats" / "verdict_accuracy.json").read_text())
    new = json.loads((out / "stats" / "verdict_accuracy.json").read_text())
    return [f"{key} differs" for key in ("summary", "rows") if old.get(key) != new.get(key)]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--explain-only", action="store_true", help="skip the verdict-accuracy simulation")
    ap.add_argument("--keep", type=Path, help="directory for the regenerated reports (default: a temporary one)")
    args = ap.parse_args(argv)
    out = args.keep or Path(tempfile.mkdtemp(prefix="ktriage-reproduce-"))
    out.mkdir(parents=True, exist_ok=True)
    failed = 0
    try:
        for stem, explain_args in REPORTS:
            rc, err = explain(stem, explain_args, out)
            if rc not in (0, 1):  # 1 = regressions found: the expected finding
                print(f"FAIL {stem}: explain exited {rc}\n{err}")
                failed += 1
                continue
            problems = compare(stem, out)
            print(("ok   " if not problems else "FAIL ") + stem + ("" if not problems else "\n" + "\n".join(problems)))
            failed += bool(problems)
        checks = len(REPORTS)
        if not args.explain_only:
            checks += 1
            problems = verdict_accuracy(out)
            print(
                ("ok   " if not problems else "FAIL ") + "stats/verdict_accuracy" + "".join("\n" + p for p in problems)
            )
            failed += bool(problems)
    finally:
        if args.keep is None:
            shutil.rmtree(out, ignore_errors=True)
    print(f"{checks - failed} of {checks} committed results reproduce")
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
