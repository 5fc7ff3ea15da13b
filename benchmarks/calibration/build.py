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

Load waits (``SassLoop.load_waits``, the model's round trips per loop iteration): reports written
by a ktriage that did not count them (the committed corpus reports, histograms only) get them here
from their cubins, read where the report says each one is (``results[tc].artifact.cubin``, the
compile cache) with ``cuobjdump -sass`` and ``ktriage.analyze.sass_loops``, loop by loop (matched by
address). The counts read that way are committed next to this script (``load_waits.json.gz``: per cubin,
named by its path under the cache's ``artifacts/`` folder, per function, each loop's start, end and
waits; ``--save-load-waits`` rewrites it), and the build reads them from there first, so cells.jsonl
rebuilds from committed files on any machine. A cell whose cubin is in neither keeps loops without the
count (the model: one round trip an iteration); the builder prints how many and which operators
(``--no-load-waits``: none filled).
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import subprocess
import sys
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from functools import lru_cache
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from ktriage.analyze.sass import SassFunction
from ktriage.measure.results_file import read_results
from ktriage.predict.dataset import cells_from_results, skipped_summary, write_cells


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


def _home() -> Path:
    return Path(os.environ.get("KTRIAGE_HOME") or Path.home() / ".cache/ktriage")


def _cuobjdump() -> Path | None:
    """A cuobjdump of the toolchain environments of the ktriage home (``KTRIAGE_HOME`` or ~/.cache/ktriage):
    any will do, SASS listings do not depend on its version (checked on the corpus's cubins)."""
    found = sorted(_home().glob("toolchains/envs/*/lib/python*/site-packages/triton/backends/nvidia/bin/cuobjdump"))
    return found[-1] if found else None


@lru_cache(maxsize=128)
def _cubin_functions(cuobjdump: Path, cubin: str) -> dict[str, SassFunction] | None:
    """The SASS functions of ``cubin`` (one ``cuobjdump -sass`` a cubin and build: the load waits and the
    bank conflicts both read them); None if it cannot be read. A report names its cubins under
    ``$KTRIAGE_HOME`` (newer reports) or by absolute path."""
    from ktriage.analyze.sass import parse_sass

    cubin = cubin.replace("$KTRIAGE_HOME", str(_home()))
    if not Path(cubin).is_file():
        return None
    proc = subprocess.run([str(cuobjdump), "-sass", cubin], capture_output=True, text=True, timeout=120)
    if proc.returncode != 0:
        return None
    return parse_sass(proc.stdout)


def _cubin_loops(cuobjdump: Path, cubin: str) -> dict[str, dict[tuple[int, int], int | None]] | None:
    """Per function of ``cubin``, each loop's (start, end) -> load_waits; None if it cannot be read."""
    from ktriage.analyze.sass_loops import find_loops

    functions = _cubin_functions(cuobjdump, cubin)
    if functions is None:
        return None
    return {
        name: {(loop.start, loop.end): loop.load_waits for loop in find_loops(fn)} for name, fn in functions.items()
    }


LOAD_WAITS = Path(__file__).with_name("load_waits.json.gz")
Listing = dict[str, dict[tuple[int, int], "int | None"]]  # function -> (loop start, end) -> load waits


def cubin_key(cubin: str) -> str:
    """A cubin's name on any machine: its path under the compile cache's ``artifacts/`` folder (reports
    name it under ``$KTRIAGE_HOME`` or by the absolute path of the machine that wrote them)."""
    _, found, tail = cubin.partition("/artifacts/")
    return tail if found else cubin


def read_saved_waits(path: Path) -> dict[str, Listing]:
    """The committed counts (module docstring); empty when the file is absent."""
    if not path.is_file():
        return {}
    data = json.loads(gzip.decompress(path.read_bytes()))
    return {
        key: {fn: {(int(a), int(b)): w for a, b, w in loops} for fn, loops in functions.items()}
        for key, functions in data["cubins"].items()
    }


def write_saved_waits(path: Path, saved: dict[str, Listing]) -> None:
    data = {
        "comment": "Load waits per loop of the cubins the calibration cells read (benchmarks/calibration/build.py)",
        "cubins": {
            key: {fn: sorted([a, b, w] for (a, b), w in loops.items()) for fn, loops in sorted(functions.items())}
            for key, functions in sorted(saved.items())
        },
    }
    path.write_bytes(gzip.compress(json.dumps(data, sort_keys=True).encode(), mtime=0))


def add_load_waits(report: dict, operator: str, counts: Counter, saved: dict[str, Listing]) -> None:
    """Fill ``load_waits`` into every loop of ``report``'s results that has none, from the committed
    counts or else the cubin (module docstring); what a cubin gave is added to ``saved``. ``counts``:
    results filled / already counted / without a cubin, per operator."""
    cuobjdump = _cuobjdump()
    todo = []
    for kernel in report.get("kernels", ()):
        for result in (kernel.get("results") or {}).values():
            loops = result.get("sass_loops") or []
            if not loops:  # nothing to count
                continue
            if all("load_waits" in loop for loop in loops):
                counts["counted", operator] += 1
                continue
            todo.append(result)
    named = {str((r.get("artifact") or {}).get("cubin") or "") for r in todo} - {""}
    cubins = sorted(c for c in named if cubin_key(c) not in saved)
    if cuobjdump is None:
        listings: dict[str, dict | None] = dict.fromkeys(cubins)
    else:
        with ThreadPoolExecutor(2) as pool:
            listings = dict(zip(cubins, pool.map(lambda c: _cubin_loops(cuobjdump, c), cubins)))
    for cubin, functions in listings.items():
        if functions is not None:
            saved[cubin_key(cubin)] = functions
    for result in todo:
        functions = saved.get(cubin_key(str((result.get("artifact") or {}).get("cubin") or "")))
        waits = (functions or {}).get(str(result.get("kernel_name")))
        loops = result["sass_loops"]
        if waits is None or any((int(x["start"]), int(x["end"])) not in waits for x in loops):
            counts["no cubin", operator] += 1
            continue
        for loop in loops:
            loop["load_waits"] = waits[int(loop["start"]), int(loop["end"])]
        counts["filled", operator] += 1


SHARED_BANKS = Path(__file__).with_name("shared_banks.json.gz")
Banks = dict[str, dict[str, float]]  # function -> analyze.shared_banks.bank_summary


def _cubin_banks(cuobjdump: Path, cubin: str) -> Banks | None:
    """Per function of ``cubin``, its shared-memory bank summary; None if it cannot be read."""
    from ktriage.analyze.shared_banks import bank_summary, shared_accesses

    functions = _cubin_functions(cuobjdump, cubin)
    if functions is None:
        return None
    return {name: bank_summary(shared_accesses(fn)) for name, fn in functions.items()}


def read_saved_banks(path: Path) -> dict[str, Banks]:
    """The committed bank summaries per cubin (``cubin_key``); empty when the file is absent."""
    return json.loads(gzip.decompress(path.read_bytes()))["cubins"] if path.is_file() else {}


def write_saved_banks(path: Path, saved: dict[str, Banks]) -> None:
    data = {
        "comment": "Shared-memory bank conflicts per function of the cubins the calibration cells read "
        "(analyze/shared_banks.py; benchmarks/calibration/build.py)",
        "cubins": {key: saved[key] for key in sorted(saved)},
    }
    path.write_bytes(gzip.compress(json.dumps(data, sort_keys=True).encode(), mtime=0))


def add_shared_banks(report: dict, operator: str, counts: Counter, saved: dict[str, Banks]) -> None:
    """Fill ``shared_wavefronts`` into every result of ``report`` that has none (reports written before
    the bank analysis), from the committed summaries or else the cubin, as ``add_load_waits`` does."""
    cuobjdump = _cuobjdump()
    todo = [
        r
        for kernel in report.get("kernels", ())
        for r in (kernel.get("results") or {}).values()
        if "kernel_name" in r and "shared_wavefronts" not in r
    ]
    named = {str((r.get("artifact") or {}).get("cubin") or "") for r in todo} - {""}
    cubins = sorted(c for c in named if cubin_key(c) not in saved)
    if cuobjdump is not None:
        with ThreadPoolExecutor(2) as pool:
            for cubin, banks in zip(cubins, pool.map(lambda c: _cubin_banks(cuobjdump, c), cubins)):
                if banks is not None:
                    saved[cubin_key(cubin)] = banks
    for result in todo:
        banks = saved.get(cubin_key(str((result.get("artifact") or {}).get("cubin") or ""))) or {}
        found = banks.get(str(result.get("kernel_name")))
        if found is None:
            counts["banks: no cubin", operator] += 1
            continue
        result["shared_wavefronts"] = found
        counts["banks: filled", operator] += 1


def scan(results_dir: Path, workloads_dir: Path, explain_dir: Path | None = None, match: str = "*.json") -> list[dict]:
    """Sources for every recorded-bench results file under ``results_dir`` (named like ``match``) whose workload is found;
    an explain report ``<explain_dir>/<name>.json`` (or ``.json.gz``) of the workload (with the run's toolchains among
    its own) is used as it is, else the workload is explained here."""
    workloads = {
        p.name.removesuffix(".gz").removesuffix(".workload.json"): p
        for pattern in ("*.workload.json", "*.workload.json.gz")
        for p in workloads_dir.rglob(pattern)
    }
    out = []
    for path in sorted(results_dir.rglob(match)):
        try:
            data = json.loads(_unpacked(path).read_text())
            name = data["run"]["settings"]["recorded_plan"]["name"]
        except (ValueError, KeyError, TypeError, OSError):
            continue
        if name not in workloads:
            print(f"note: {path}: no {name}.workload.json under {workloads_dir}", file=sys.stderr)
            continue
        report = _report_path(explain_dir, name) if explain_dir else None
        if report is not None and _is_report(report):
            out.append({"operator": name, "results": _in_repo(path), "explain_json": str(report.resolve())})
        else:
            out.append(
                {
                    "operator": name,
                    "results": _in_repo(path),
                    "explain": {"target": str(workloads[name].resolve())},
                }
            )
    return out


def _unpacked(path: Path) -> Path:
    """A results file as it is, or a gzipped one (``NAME.json.gz``, as the H100's are committed: h100/results/)
    unpacked once into the temp folder; the cells still name the committed file."""
    if path.suffix != ".gz":
        return path
    plain = Path(os.environ.get("TMPDIR", "/tmp")) / "ktriage-calibration-unpacked" / path.parent.name / path.stem
    if not plain.exists():
        plain.parent.mkdir(parents=True, exist_ok=True)
        plain.write_bytes(gzip.decompress(path.read_bytes()))
    return plain


def _in_repo(path: Path) -> str:
    """A results file as the cells name it (``source``): relative to the repository when it is inside it,
    so that cells.jsonl is the same whichever folder the checkout is in."""
    full = path.resolve()
    return str(full.relative_to(ROOT)) if full.is_relative_to(ROOT) else str(full)


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
    ap.add_argument(
        "--match",
        default="*.json",
        help="with --scan: only the results files named like this (e.g. 'liger_*.json': fresh_ops/README.md)",
    )
    ap.add_argument("--no-sources", action="store_true", help="with --scan: leave out the sources of --sources")
    ap.add_argument("--no-compile", action="store_true", help="skip the sources that have no explain report yet")
    ap.add_argument(
        "--no-load-waits", action="store_true", help="do not fill the loops' load waits nor the bank conflicts"
    )
    ap.add_argument(
        "--save-load-waits",
        action="store_true",
        help=f"write the counts read from cubins (and those already committed) to {LOAD_WAITS.name} and "
        f"{SHARED_BANKS.name}",
    )
    args = ap.parse_args()
    work = Path(args.work)
    work.mkdir(parents=True, exist_ok=True)
    cells = []
    waits: Counter = Counter()
    saved = read_saved_waits(LOAD_WAITS)
    saved_banks = read_saved_banks(SHARED_BANKS)
    sources = [] if args.no_sources else json.loads(Path(args.sources).read_text())["sources"]
    if args.scan:
        sources += scan(args.scan, args.workloads or args.scan, args.explain_dir, args.match)
    for source in sources:
        if (
            args.no_compile
            and not source.get("explain_json")
            and not (work / f"{source['operator']}.explain.json").exists()
        ):
            print(f"note: {source['operator']}: no explain report yet (--no-compile): skipped", file=sys.stderr)
            continue
        run, results = read_results(_unpacked(ROOT / source["results"]))
        specs = [str(t["spec"]) for t in run.toolchains]
        try:
            report = explain_report(source, specs, work, run, results)
        except Exception as exc:  # one source that cannot be explained never loses the others
            print(f"note: {source['operator']}: not explained ({type(exc).__name__}: {exc})", file=sys.stderr)
            continue
        if not args.no_load_waits:
            add_load_waits(report, source["operator"], waits, saved)
            add_shared_banks(report, source["operator"], waits, saved_banks)
        made, notes = cells_from_results(
            run, results, report, operator=source["operator"], backend=source.get("backend"), source=source["results"]
        )
        for line in skipped_summary(notes):
            print(f"note: {line}", file=sys.stderr)
        print(f"{source['operator']}: {len(made)} cells", file=sys.stderr)
        cells += made
    for kind in ("filled", "counted", "no cubin", "banks: filled", "banks: no cubin"):
        total = sum(n for (k, _), n in waits.items() if k == kind)
        ops = sorted({op for (k, op), n in waits.items() if k == kind and n})
        label = kind.replace("banks:", "bank conflicts") if kind.startswith("banks") else f"load waits {kind}"
        print(f"{label}: {total} kernel results ({len(ops)} operators)", file=sys.stderr)
        if kind == "no cubin":
            for op in ops:
                print(f"  {op}: {waits[kind, op]} without a cubin", file=sys.stderr)
    if args.save_load_waits:
        write_saved_waits(LOAD_WAITS, saved)
        write_saved_banks(SHARED_BANKS, saved_banks)
        print(f"load waits of {len(saved)} cubins -> {LOAD_WAITS}", file=sys.stderr)
        print(f"bank conflicts of {len(saved_banks)} cubins -> {SHARED_BANKS}", file=sys.stderr)
    path = write_cells(args.out, cells)
    print(f"{len(cells)} cells -> {path}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
