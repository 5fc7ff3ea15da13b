"""What the line map (issue 25) adds to a cold explain of the main job's sweep (scripts/main.sh).

Times the two explain commands of scripts/main.sh (Liger layer_norm bwd, 30 inputs, Triton 3.3.1 vs
3.4.0; Liger embedding bwd, 16 inputs, ptxas 12.4.131 vs 12.8.93), cold (each run in a fresh scratch
home: the toolchains, ptxas releases and packages of ``--home`` linked in, an EMPTY artifact cache),
with two trees:

- ``with``: this checkout;
- ``without``: a copy of this checkout's ``ktriage/`` with the line map cut out (nvdisasm without
  ``-gi``, no per-line counts: so no line diff, no line evidence, no source view), everything else
  the same. The difference is the line map's cost alone, whatever else the tree holds.

The runs alternate between the trees (with, without, without, with, ...) so that drift in the shared
machine's load hits both alike; it reports the minimum and the median of ``--runs`` per tree, the CPU
time (user + sys of every process) and the load average. No GPU.

On a shared machine a cold run's wall time moves by 2x with the other tenants' load, far more than
what is measured here; so ``--analysis`` also measures the line map's own work directly: every
cubin the sweep analyzes (the scratch home of the last cold run, own and cross-matrix cubins) is
analyzed ``--repeat`` times as explain does (``analyze.resources.analyze``: cuobjdump, nvdisasm,
parsing, loops) with and without the line map, and the CPU time (this process and its children:
nvdisasm, cuobjdump) is summed over the cubins, minimum of the repeats per cubin. That sum against
the cold run's CPU time is the share the line map adds.

    python benchmarks/explain/lines_cost.py --home /work/main/.ktriage-home --runs 3 --analysis -o benchmarks/explain/lines_cost.json
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
COMMANDS = [
    [
        "explain",
        "liger.layer_norm",
        "--bwd",
        "--arch",
        "sm_90",
        "-t",
        "triton==3.3.1",
        "-t",
        "triton==3.4.0",
        "-f",
        "json",
    ],
    [
        "explain",
        "liger.embedding",
        "--bwd",
        "--arch",
        "sm_90",
        "-t",
        "triton==3.4.0,ptxas==12.4.131",
        "-t",
        "triton==3.4.0",
        "-f",
        "json",
    ],
]
# (file, the text of this checkout, what it becomes in the tree without the line map)
CUTS = [
    (
        "ktriage/analyze/cuobjdump.py",
        'cmd = [str(nvdisasm), "-c", "-ndf", "-gi", str(cubin)]',
        'cmd = [str(nvdisasm), "-c", "-ndf", str(cubin)]',
    ),
    (
        "ktriage/analyze/resources.py",
        "source_lines=listing_line_stats(listing, sass_fn, main.body if main is not None else frozenset()),",
        "source_lines=(),",
    ),
]


def loadavg() -> str:
    try:
        return " ".join(Path("/proc/loadavg").read_text().split()[:3])
    except OSError:
        return "?"


def without_tree(parent: Path) -> Path:
    tree = parent / "without"
    shutil.copytree(REPO / "ktriage", tree / "ktriage", ignore=shutil.ignore_patterns("__pycache__"))
    for rel, old, new in CUTS:
        path = tree / rel
        text = path.read_text()
        if text.count(old) != 1:
            raise SystemExit(f"{rel}: the line map's call changed; update CUTS")
        path.write_text(text.replace(old, new))
    return tree


def scratch_home(source: Path, parent: Path) -> Path:
    home = Path(tempfile.mkdtemp(prefix="ktriage-cold-", dir=parent))
    for entry in source.iterdir():
        if entry.name != "artifacts":
            (home / entry.name).symlink_to(entry.resolve())
    (home / "artifacts").mkdir()
    return home


def cpu_now() -> float:
    import resource

    me, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime


def analysis_cost(home: Path, repeat: int) -> dict[str, Any]:
    """CPU seconds of analyzing every cubin under ``home``'s artifacts, with and without the line map."""
    sys.path.insert(0, str(REPO))
    from ktriage.analyze import cuobjdump, resources
    from ktriage.analyze.sass import parse_sass
    from ktriage.toolchain.manager import list_toolchains

    tools = [(t.cuobjdump, t.nvdisasm) for t in list_toolchains() if t.nvdisasm is not None]
    cubins = sorted(home.glob("artifacts/**/*.cubin"))
    real_disassemble, real_stats = resources.disassemble, resources.listing_line_stats

    def without_disassemble(cubin: Path, *, cuobjdump: Path, nvdisasm: Path | None = None) -> str:
        proc = subprocess.run([str(nvdisasm), "-c", "-ndf", str(cubin)], capture_output=True, text=True, check=True)
        return proc.stdout

    totals = {"with": 0.0, "without": 0.0}
    n = 0
    for cubin in cubins:
        cuobj, nvdis = tools[0]
        listing = cuobjdump.disassemble(cubin, cuobjdump=cuobj, nvdisasm=nvdis)
        names = list(parse_sass(listing))
        if len(names) != 1:
            continue
        n += 1
        for variant in ("with", "without"):
            resources.disassemble = real_disassemble if variant == "with" else without_disassemble  # type: ignore[assignment]
            resources.listing_line_stats = real_stats if variant == "with" else (lambda *a, **k: ())  # type: ignore[assignment]
            best = float("inf")
            for _ in range(repeat):
                t0 = cpu_now()
                resources.analyze(
                    cubin,
                    cuobjdump=cuobj,
                    ptxas_log=None,
                    ptx=None,
                    kernel_name=names[0],
                    triton_shared=0,
                    nvdisasm=nvdis,
                )
                best = min(best, cpu_now() - t0)
            totals[variant] += best
    resources.disassemble, resources.listing_line_stats = real_disassemble, real_stats  # type: ignore[assignment]
    return {
        "cubins": n,
        "cpu_with_s": round(totals["with"], 3),
        "cpu_without_s": round(totals["without"], 3),
        "added_cpu_s": round(totals["with"] - totals["without"], 3),
    }


def cold_run(tree: Path, source_home: Path, parent: Path, keep: bool = False) -> dict[str, Any]:
    home = scratch_home(source_home, parent)
    env = {**os.environ, "KTRIAGE_HOME": str(home), "PYTHONPATH": str(tree)}
    before, load = os.times(), loadavg()
    t0 = time.perf_counter()
    codes = []
    for argv in COMMANDS:
        proc = subprocess.run(
            [sys.executable, "-m", "ktriage", *argv], cwd=tree, env=env, capture_output=True, text=True
        )
        codes.append(proc.returncode)
    wall = time.perf_counter() - t0
    after = os.times()
    if not keep:
        shutil.rmtree(home, ignore_errors=True)
    cpu = (after.children_user - before.children_user) + (after.children_system - before.children_system)
    return {
        "wall_s": round(wall, 2),
        "cpu_s": round(cpu, 2),
        "exit": codes,
        "load_before": load,
        "load_after": loadavg(),
        **({"home": str(home)} if keep else {}),
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--home", type=Path, default=Path(os.environ.get("KTRIAGE_HOME", "/work/main/.ktriage-home")))
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--analysis", action="store_true", help="also measure the line map's own CPU time per cubin")
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("-o", "--output", type=Path)
    args = ap.parse_args(argv)
    parent = Path(tempfile.mkdtemp(prefix="lines-cost-"))
    trees = {"with": REPO, "without": without_tree(parent)}
    runs: dict[str, list[dict[str, Any]]] = {"with": [], "without": []}
    order = ["with", "without"]
    for i in range(args.runs):
        for name in order if i % 2 == 0 else order[::-1]:
            last = i == args.runs - 1 and name == "with"
            runs[name].append(cold_run(trees[name], args.home, parent, keep=last and args.analysis))
            print(name, runs[name][-1], flush=True)
    analysis = None
    if args.analysis:
        home = Path(runs["with"][-1].pop("home"))
        os.environ["KTRIAGE_HOME"] = str(home)
        analysis = analysis_cost(home, args.repeat)
        analysis["cold_cpu_median_s"] = statistics.median(r["cpu_s"] for r in runs["with"])
        analysis["added_pct_of_cold_cpu"] = round(100 * analysis["added_cpu_s"] / analysis["cold_cpu_median_s"], 1)
        print("analysis", analysis, flush=True)
    shutil.rmtree(parent, ignore_errors=True)
    summary = {
        name: {
            "wall_min_s": min(r["wall_s"] for r in rs),
            "wall_median_s": statistics.median(r["wall_s"] for r in rs),
            "cpu_min_s": min(r["cpu_s"] for r in rs),
            "cpu_median_s": statistics.median(r["cpu_s"] for r in rs),
        }
        for name, rs in runs.items()
    }
    for key in ("wall_min_s", "wall_median_s", "cpu_min_s", "cpu_median_s"):
        summary[f"added_{key.replace('_s', '')}_pct"] = round(
            100 * (summary["with"][key] / summary["without"][key] - 1), 1
        )  # type: ignore[index]
    out = {
        "commands": [" ".join(c) for c in COMMANDS],
        "runs": runs,
        "summary": summary,
        "analysis": analysis,
        "cpus": os.cpu_count(),
        "python": sys.version.split()[0],
    }
    print(json.dumps(summary, indent=1))
    if args.output:
        args.output.write_text(json.dumps(out, indent=1) + "\n")
    ok = all(code == 0 for rs in runs.values() for r in rs for code in r["exit"])
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
