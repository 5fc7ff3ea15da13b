"""Cold and warm wall time of the offline explain of liger.layer_norm bwd (issue 13, compile side).

Runs the command of benchmarks/perf/explain_cold_warm.md ``--runs`` times cold (each in a fresh
scratch home: the toolchains, ptxas releases and kernel packages of ``--home`` linked in, an EMPTY
``artifacts`` folder) and ``--runs`` times warm (the last cold run's home again, every artifact
cached), prints a table and writes JSON. The source home is only read; its artifacts are never
touched. No GPU.

    python benchmarks/perf/explain_cold_warm.py --home /work/main/.ktriage-home -o /tmp/explain_cold_warm.json

The machine is shared, so it reports the minimum (and every run) and the load average at the start
and end. ``--breakdown`` adds one more cold run with timers around the stages (worker start,
frontend requests, ptxas, cuobjdump, analysis, report) and prints where its time went. ``--bytecode`` also times warm runs with Python's bytecode cache on (in a scratch
PYTHONPYCACHEPREFIX): an environment that sets PYTHONDONTWRITEBYTECODE recompiles every ktriage
module on each start, which is most of a warm run. ``--against OTHER_CHECKOUT`` then times warm runs of
both trees taking turns on one warm home (``--against-runs`` each, default 10): this machine's speed
drifts by 10-20 % within minutes, and trees timed one after the other compared the drift as much as
the trees.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
ARGS = [
    "explain",
    "liger.layer_norm",
    "--bwd",
    "--arch",
    "sm_90",
    "-t",
    "triton==3.3.1",
    "-t",
    "triton==3.4.0",
    "--format",
    "json",
]


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


def timed_run(
    python: str,
    tree: Path,
    home: Path,
    out: Path,
    *,
    env_extra: dict[str, str] | None = None,
    drop: tuple[str, ...] = (),
) -> dict[str, Any]:
    env = {k: v for k, v in os.environ.items() if k not in drop}
    env.update({"KTRIAGE_HOME": str(home), "PYTHONPATH": str(tree), **(env_extra or {})})
    before = os.times()
    t0 = time.perf_counter()
    with out.open("w") as stdout:
        proc = subprocess.run(
            [python, "-m", "ktriage", *ARGS],
            cwd=tree,
            env=env,
            stdout=stdout,
            stderr=subprocess.PIPE,
            text=True,
            check=False,
        )
    wall = time.perf_counter() - t0
    after = os.times()
    cpu = (after.children_user - before.children_user) + (after.children_system - before.children_system)
    if proc.returncode != 0:
        raise SystemExit(f"explain failed (exit {proc.returncode}):\n{proc.stderr[-2000:]}")
    return {"wall_s": round(wall, 3), "cpu_s": round(cpu, 3)}


# (module, attribute path, label): the stages timed by --breakdown. Timers only wrap; nothing is replaced.
STAGES = [
    ("ktriage.cli.explain_cmd", "resolve_specs", "resolve specs"),
    ("ktriage.cli.explain_cmd", "resolve_toolchains", "resolve toolchains"),
    ("ktriage.compile.compiler", "Compiler.compile_many", "compile_many (frontends)"),
    ("ktriage.compile.pool", "CompileWorker._start", "worker start (Triton import, priming)"),
    ("ktriage.compile.pool", "CompileWorker.request", "worker request (frontend compile)"),
    ("ktriage.compile.compiler", "assemble", "ptxas (cross matrix)"),
    ("ktriage.explain.engine", "Explainer._prefetch", "analysis of the distinct cubins"),
    ("ktriage.explain.engine", "analyze_cubin", "analyze one cubin"),
    ("ktriage.explain.engine", "analyze_artifact", "analyze one cubin (own; the tree before issue 13)"),
    ("ktriage.analyze.resources", "run_cuobjdump", "cuobjdump"),
    ("ktriage.explain.engine", "Explainer.run", "explain (compile + analysis + compare)"),
    ("ktriage.cli.explain_cmd", "to_json", "report"),
]


def breakdown_child(out: Path, argv: list[str]) -> int:
    """Run the CLI in this process with timers around STAGES; write the spans to ``out``."""
    import atexit
    import functools
    import importlib
    import resource
    import threading

    t0 = time.perf_counter()
    spans: list[tuple[str, float, float]] = []
    for module_name, attr, label in STAGES:
        owner: Any = importlib.import_module(module_name)
        *parents, name = attr.split(".")
        for parent in parents:
            owner = getattr(owner, parent)
        if not hasattr(owner, name):
            continue  # a stage this tree does not have (an older ktriage)
        fn = getattr(owner, name)

        def timed(*a: Any, _fn: Any = fn, _label: str = label, **k: Any) -> Any:
            start = time.perf_counter()
            try:
                return _fn(*a, **k)
            finally:
                spans.append((_label, start - t0, time.perf_counter() - t0))

        setattr(owner, name, functools.wraps(fn)(timed))
    imported = time.perf_counter() - t0
    lock = threading.Lock()

    def dump() -> None:
        with lock:
            usage = resource.getrusage(resource.RUSAGE_SELF)
            out.write_text(
                json.dumps(
                    {
                        "imports_s": imported,
                        "total_s": time.perf_counter() - t0,
                        "main_process_cpu_s": usage.ru_utime + usage.ru_stime,
                        "spans": spans,
                    }
                )
            )

    atexit.register(dump)
    from ktriage.cli.app import main as cli_main

    return cli_main(argv)


def print_breakdown(data: dict[str, Any]) -> None:
    agg: dict[str, list[float]] = {}
    for label, start, end in data["spans"]:
        a = agg.setdefault(label, [0, 0.0, start, end])
        a[0] += 1
        a[1] += end - start
        a[2], a[3] = min(a[2], start), max(a[3], end)
    print(
        f"breakdown of one cold run: {data['total_s']:.2f} s in process (imports {data['imports_s']:.2f} s, "
        f"main process CPU {data['main_process_cpu_s']:.2f} s)"
    )
    print(f"{'stage':42} {'calls':>5} {'sum s':>7} {'from s':>7} {'to s':>7}")
    for label, (n, total, first, last) in sorted(agg.items(), key=lambda kv: kv[1][2]):
        print(f"{label:42} {int(n):5d} {total:7.2f} {first:7.2f} {last:7.2f}")


def interleaved_warm(python: str, trees: list[Path], home: Path, work: Path, runs: int) -> dict[str, Any]:
    """Warm runs with the bytecode cache, the trees taking turns on one warm home: on a shared machine
    whose speed drifts by 10-20 % within minutes, trees timed one after the other compare the drift."""
    out: dict[str, list[dict[str, Any]]] = {str(t): [] for t in trees}
    drop = ("PYTHONDONTWRITEBYTECODE",)
    envs = {t: {"PYTHONPYCACHEPREFIX": str(work / f"pycache-{i}")} for i, t in enumerate(trees)}
    for tree in trees:  # each tree's bytecode cache, and its cache entries if its keys differ
        timed_run(python, tree, home, home / "report.json", env_extra=envs[tree], drop=drop)
    for i in range(runs):
        for tree in trees:
            out[str(tree)].append(timed_run(python, tree, home, home / "report.json", env_extra=envs[tree], drop=drop))
        print(f"interleaved {i + 1}: " + ", ".join(f"{v[-1]['wall_s']}" for v in out.values()), file=sys.stderr)
    return out


def normalized_report(path: Path) -> Any:
    data = json.loads(path.read_text())
    data.pop("created", None)
    return json.loads(json.dumps(data).replace(str(path.parent), "<home>"))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument(
        "--home",
        type=Path,
        default=Path(os.environ.get("KTRIAGE_HOME", "/work/main/.ktriage-home")),
        help="the home whose toolchains and packages are linked in (only read)",
    )
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument(
        "--tree",
        type=Path,
        default=REPO,
        help="the ktriage source tree to time (default: this one; another checkout for a before/after)",
    )
    ap.add_argument(
        "--against",
        type=Path,
        help="another checkout: after the runs above, warm runs with the bytecode cache alternate between "
        "--tree and this one on the same warm home (--against-runs each), so that a shared machine's drift "
        "hits both",
    )
    ap.add_argument("--against-runs", type=int, default=10)
    ap.add_argument("--python", default=sys.executable)
    ap.add_argument("--bytecode", action="store_true", help="also time warm runs with the bytecode cache on")
    ap.add_argument("--breakdown", action="store_true", help="one more cold run with timers around the stages")
    ap.add_argument("-o", "--output", type=Path, help="write the numbers as JSON here")
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["--breakdown-child"]:  # internal: the timed run of --breakdown
        return breakdown_child(Path(argv[1]), argv[2:])
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
        "cold": [],
        "warm": [],
        "warm_bytecode": [],
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
            timed_run(
                args.python, args.tree, home, home / "report.json", env_extra=env, drop=("PYTHONDONTWRITEBYTECODE",)
            )
            for i in range(args.runs):
                result["warm_bytecode"].append(
                    timed_run(
                        args.python,
                        args.tree,
                        home,
                        home / "report.json",
                        env_extra=env,
                        drop=("PYTHONDONTWRITEBYTECODE",),
                    )
                )
                print(f"warm+bytecode {i + 1}: {result['warm_bytecode'][-1]}", file=sys.stderr)
        if args.against:
            result["interleaved"] = interleaved_warm(
                args.python, [args.tree, args.against], home, work, args.against_runs
            )
        if args.breakdown:
            home = scratch_home(args.home, work)
            spans = work / "spans.json"
            env = {**os.environ, "KTRIAGE_HOME": str(home), "PYTHONPATH": str(args.tree)}
            t0 = time.perf_counter()
            with (home / "report.json").open("w") as stdout:
                subprocess.run(
                    [args.python, str(Path(__file__).resolve()), "--breakdown-child", str(spans), *ARGS],
                    cwd=args.tree,
                    env=env,
                    stdout=stdout,
                    stderr=subprocess.DEVNULL,
                    check=True,
                )
            result["breakdown"] = {**json.loads(spans.read_text()), "wall_s": time.perf_counter() - t0}
            reports.append(normalized_report(home / "report.json"))
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
    print(
        f"load average: start {result['loadavg_start']}, end {result['loadavg_end']}; "
        f"reports identical: {result['reports_identical']}"
    )
    for tree, runs in result.get("interleaved", {}).items():
        walls = [r["wall_s"] for r in runs]
        print(f"interleaved warm+bytecode {tree}: min {min(walls):.3f} median {statistics.median(walls):.3f}  {walls}")
    if "breakdown" in result:
        print_breakdown(result["breakdown"])
    if args.output:
        args.output.write_text(json.dumps(result, indent=1) + "\n")
    return 0 if result["reports_identical"] else 1


if __name__ == "__main__":
    raise SystemExit(main())
