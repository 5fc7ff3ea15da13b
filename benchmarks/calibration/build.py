"""Build benchmarks/calibration/cells.jsonl from bench results files and explain reports.

    .venv/bin/python benchmarks/calibration/build.py                  # sources.json -> cells.jsonl
    .venv/bin/python benchmarks/calibration/build.py --sources S.json --out C.jsonl --work DIR

Each source pairs one GPU results file (toolchains timed side by side) with the explain report of
the same kernels: a committed one (``explain_json``) or one compiled here (``explain``: a recorded
workload is explained in-process for exactly the kernel inputs the run benched; a catalog op runs
``ktriage explain TARGET ARGS -t <the run's toolchains> --format json``; cached artifacts make that
seconds). The pairing rules and the cell format: ktriage/predict/dataset.py.

    .venv/bin/python benchmarks/calibration/build.py --scan RESULTS_DIR --workloads WL_DIR --out C.jsonl

``--scan`` (the corpus): every recorded-bench results file under RESULTS_DIR (``bench --bundle`` of a
recorded workload: its run names the workload) is paired with ``<name>.workload.json`` (or ``.workload.json.gz``) under WL_DIR,
the operator being the workload's name; the sources of ``--sources`` come too unless
``--no-sources``. Set KTRIAGE_HOME to a home whose toolchains match the runs' (e.g. the test home).
"""

from __future__ import annotations

import argparse
import gzip
import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from ktriage.measure.results_file import read_results
from ktriage.predict.dataset import cells_from_results, write_cells


def _recorded_report(target: Path, run, results, specs: list[str]) -> dict:
    """Explain, in-process, only the kernel inputs the run benched (a corpus workload may record
    hundreds of launches; the bench times a few)."""
    from ktriage.catalog.resolve import resolve_specs
    from ktriage.compile.compiler import Compiler
    from ktriage.explain.engine import Explainer
    from ktriage.explain.findings import collect_findings
    from ktriage.report.explain import to_json
    from ktriage.toolchain.manager import ensure_toolchains

    wanted = {
        (str(c.extra.get("kernel")), int(c.extra.get("recorded_input", 0))) for c in results if c.extra.get("kernel")
    }
    kernels = [
        k
        for k in resolve_specs(str(target), target_arch="sm_90")
        if (str(k.meta.get("workload_kernel")), int(k.meta.get("input_id", 0))) in wanted
    ]
    toolchains = ensure_toolchains(specs)
    with Compiler(jobs=2) as compiler:
        result = Explainer(compiler).run(kernels, toolchains)
        return to_json(result, collect_findings(result))


def explain_report(source: dict, specs: list[str], work: Path, run=None, results=None) -> dict:
    if source.get("explain_json"):
        return _read_report(ROOT / source["explain_json"])
    ex = source["explain"]
    out = work / f"{source['operator']}.explain.json"
    if out.exists():
        return json.loads(out.read_text())
    target = Path(ex["target"])
    if target.name.endswith((".json", ".json.gz")) and run is not None:
        print(f"+ explain {target} (the benched kernel inputs) with {', '.join(specs)}", file=sys.stderr)
        data = _recorded_report(target if target.is_absolute() else ROOT / target, run, results, specs)
        out.write_text(json.dumps(data))
        return data
    cmd = [str(ROOT / ".venv/bin/ktriage"), "explain", ex["target"], *ex.get("args", [])]
    for s in specs:
        cmd += ["-t", s]
    cmd += ["--allow-failures", "--format", "json", "-o", str(out)]
    print("+", " ".join(cmd), file=sys.stderr)
    subprocess.run(cmd, cwd=ROOT, check=True, stdout=subprocess.DEVNULL)
    return json.loads(out.read_text())


def scan(results_dir: Path, workloads_dir: Path, explain_dir: Path | None = None) -> list[dict]:
    """Sources for every recorded-bench results file under ``results_dir`` whose workload is found;
    an explain report ``<explain_dir>/<name>.json`` (or ``.json.gz``) of the workload (with the run's toolchains among
    its own) is used as it is, else the workload is explained here."""
    workloads = {
        p.name.removesuffix(".gz").removesuffix(".workload.json"): p
        for pattern in ("*.workload.json", "*.workload.json.gz")
        for p in workloads_dir.rglob(pattern)
    }
    out = []
    for path in sorted(results_dir.rglob("*.json")):
        try:
            data = json.loads(path.read_text())
            name = data["run"]["settings"]["recorded_plan"]["name"]
        except (ValueError, KeyError, TypeError, OSError):
            continue
        if name not in workloads:
            print(f"note: {path}: no {name}.workload.json under {workloads_dir}", file=sys.stderr)
            continue
        report = _report_path(explain_dir, name) if explain_dir else None
        if report is not None and _is_report(report):
            out.append({"operator": name, "results": str(path.resolve()), "explain_json": str(report.resolve())})
        else:
            out.append(
                {
                    "operator": name,
                    "results": str(path.resolve()),
                    "explain": {"target": str(workloads[name].resolve())},
                }
            )
    return out


def _report_path(explain_dir: Path, name: str) -> Path | None:
    """``NAME.json``, else ``NAME.json.gz`` (the corpus commits its reports gzipped)."""
    for candidate in (explain_dir / f"{name}.json", explain_dir / f"{name}.json.gz"):
        if candidate.is_file():
            return candidate
    return None


def _read_report(path: Path) -> dict:
    """An explain JSON report, plain or gzipped (``.gz``)."""
    raw = path.read_bytes()
    return json.loads(gzip.decompress(raw) if path.suffix == ".gz" else raw)


def _is_report(path: Path) -> bool:
    try:
        return _read_report(path).get("tool") == "ktriage explain"
    except (ValueError, OSError, AttributeError, EOFError, gzip.BadGzipFile):
        return False


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sources", default=str(Path(__file__).with_name("sources.json")))
    ap.add_argument("--out", default=str(Path(__file__).with_name("cells.jsonl")))
    ap.add_argument("--work", default="/tmp/ktriage-calibration", help="where explain reports compiled here are kept")
    ap.add_argument("--scan", type=Path, help="a folder of recorded-bench results files (the corpus)")
    ap.add_argument("--workloads", type=Path, help="with --scan: the folder of their *.workload.json(.gz)")
    ap.add_argument(
        "--explain-dir",
        type=Path,
        help="with --scan: explain reports NAME.json or NAME.json.gz of the workloads (no compile)",
    )
    ap.add_argument("--no-sources", action="store_true", help="with --scan: leave out the sources of --sources")
    ap.add_argument("--no-compile", action="store_true", help="skip the sources that have no explain report yet")
    args = ap.parse_args()
    work = Path(args.work)
    work.mkdir(parents=True, exist_ok=True)
    cells = []
    sources = [] if args.no_sources else json.loads(Path(args.sources).read_text())["sources"]
    if args.scan:
        sources += scan(args.scan, args.workloads or args.scan, args.explain_dir)
    for source in sources:
        if (
            args.no_compile
            and not source.get("explain_json")
            and not (work / f"{source['operator']}.explain.json").exists()
        ):
            print(f"note: {source['operator']}: no explain report yet (--no-compile): skipped", file=sys.stderr)
            continue
        run, results = read_results(ROOT / source["results"])
        specs = [str(t["spec"]) for t in run.toolchains]
        try:
            report = explain_report(source, specs, work, run, results)
        except Exception as exc:  # one source that cannot be explained never loses the others
            print(f"note: {source['operator']}: not explained ({type(exc).__name__}: {exc})", file=sys.stderr)
            continue
        made, notes = cells_from_results(
            run, results, report, operator=source["operator"], backend=source.get("backend"), source=source["results"]
        )
        for note in dict.fromkeys(notes):
            print(f"note: {note}", file=sys.stderr)
        print(f"{source['operator']}: {len(made)} cells", file=sys.stderr)
        cells += made
    path = write_cells(args.out, cells)
    print(f"{len(cells)} cells -> {path}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
