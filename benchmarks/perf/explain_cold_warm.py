"""Cold and warm wall time of the offline explain of liger.layer_norm bwd (issue 13, compile side).

Runs the command of benchmarks/perf/explain_cold_warm.md ``--runs`` times cold (each in a fresh
scratch home: the toolchains, ptxas releases and kernel packages of ``--home`` linked in, an EMPTY
``artifacts`` folder) and ``--runs`` times warm (the last cold run's home again, every artifact
cached), prints a table and writes JSON. The source home is only read; its artifacts are never
touched. No GPU.

    python benchmarks/perf/explain_cold_warm.py --home /work/main/.ktriage-home -o /tmp/explain_cold_warm.json

The machine is shared, so it reports the minimum (and every run) and the load average at the start
and end. ``--bytecode`` also times warm runs with Python's bytecode cache on (in a scratch
PYTHONPYCACHEPREFIX): an environment that sets PYTHONDONTWRITEBYTECODE recompiles every ktriage
module on each start, which is most of a warm run.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
ARGS = ["explain", "liger.layer_norm", "--bwd", "--arch", "sm_90", "-t", "triton==3.3.1", "-t", "triton==3.4.0",
        "--format", "json"]


def loadavg() -> str:
    try:
        return " ".join(Path("/proc/loadavg").read_text().split()[:3])
    except OSError:
        return "?"


def scratch_home(source: Path, parent: Path) -> Path:
    """A home that shares ``source``'s toolchains and packages (symlinks) but has no artifacts."""
    home = Path(tempfile.mkdtemp(prefix="ktriage-cold-", dir=parent))
    for entry in source.iterdir():
        if entry.name != "artifacts":
            (home / entry.name).symlink_to(entry.resolve())
    (home / "artifacts").mkdir()
    return home


def timed_run(python: str, tree: Path, home: Path, out: Path, *, env_extra: dict[str, str] | None = None,
              drop: tuple[str, ...] = ()) -> dict[str, Any]:
    env = {k: v for k, v in os.environ.items() if k not in drop}
    env.update({"KTRIAGE_HOME": str(home), "PYTHONPATH": str(tree), **(env_extra or {})})
    before = os.times()
    t0 = time.perf_counter()
    with out.open("w") as stdout:
        proc = subprocess.run([python, "-m", "ktriage", *ARGS], cwd=tree, env=env, stdout=stdout,
                              stderr=subprocess.PIPE, text=True, check=False)
    wall = time.perf_counter() - t0
    after = os.times()
    cpu = (after.children_user - before.children_user) + (after.children_system - before.children_system)
    if proc.returncode != 0:
        raise SystemExit(f"explain failed (exit {proc.returncode}):\n{proc.stderr[-2000:]}")
    return {"wall_s": round(wall, 3), "cpu_s": round(cpu, 3)}


def normalized_report(path: Path) -> Any:
    data = json.loads(path.read_text())
    data.pop("created", None)
    return json.loads(json.dumps(data).replace(str(path.parent), "<home>"))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--home", type=Path, default=Path(os.environ.get("KTRIAGE_HOME", "/work/main/.ktriage-home")),
                    help="the home whose toolchains and packages are linked in (only read)")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--tree", type=Path, default=REPO,
                    help="the ktriage source tree to time (default: this one; another checkout for a before/after)")
    ap.add_argument("--python", default=sys.executable)
    ap.add_argument("--bytecode", action="store_true", help="also time warm runs with the bytecode cache on")
    ap.add_argument("-o", "--output", type=Path, help="write the numbers as JSON here")
    args = ap.parse_args(argv)
    if not (args.home / "toolchains").is_dir():
        raise SystemExit(f"{args.home} has no toolchains/: pass --home with installed toolchains")
    work = Path(tempfile.mkdtemp(prefix="ktriage-perf-"))
    result: dict[str, Any] = {
        "command": "python -m ktriage " + " ".join(ARGS),
        "tree": str(args.tree),
        "machine": {"host": platform.node(), "cpus": os.cpu_count(), "python": platform.python_version()},
        "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "loadavg_start": loadavg(),
        "cold": [], "warm": [], "warm_bytecode": [],
    }
    try:
        reports = []
        home = args.home
        for i in range(args.runs):
            home = scratch_home(args.home, work)
            out = home / "report.json"
            result["cold"].append(timed_run(args.python, args.tree, home, out))
            reports.append(normalized_report(out))
            print(f"cold {i + 1}: {result['cold'][-1]}", file=sys.stderr)
        for i in range(args.runs):
            out = home / "report.json"
            result["warm"].append(timed_run(args.python, args.tree, home, out))
            reports.append(normalized_report(out))
            print(f"warm {i + 1}: {result['warm'][-1]}", file=sys.stderr)
        if args.bytecode:
            env = {"PYTHONPYCACHEPREFIX": str(work / "pycache")}
            timed_run(args.python, args.tree, home, home / "report.json", env_extra=env, drop=("PYTHONDONTWRITEBYTECODE",))
            for i in range(args.runs):
                result["warm_bytecode"].append(timed_run(args.python, args.tree, home, home / "report.json", env_extra=env,
                                                         drop=("PYTHONDONTWRITEBYTECODE",)))
                print(f"warm+bytecode {i + 1}: {result['warm_bytecode'][-1]}", file=sys.stderr)
        result["reports_identical"] = all(r == reports[0] for r in reports)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    result["loadavg_end"] = loadavg()
    print(f"{'run':16} {'min wall s':>10} {'min cpu s':>10}  all wall s")
    for name in ("cold", "warm", "warm_bytecode"):
        runs = result[name]
        if runs:
            walls = [r["wall_s"] for r in runs]
            result[f"{name}_min_wall_s"] = min(walls)
            print(f"{name:16} {min(walls):10.2f} {min(r['cpu_s'] for r in runs):10.2f}  {walls}")
    print(f"load average: start {result['loadavg_start']}, end {result['loadavg_end']}; "
          f"reports identical: {result['reports_identical']}")
    if args.output:
        args.output.write_text(json.dumps(result, indent=1) + "\n")
    return 0 if result["reports_identical"] else 1


if __name__ == "__main__":
    raise SystemExit(main())
