"""Build benchmarks/calibration/cells.jsonl from bench results files and explain reports.

    .venv/bin/python benchmarks/calibration/build.py                  # sources.json -> cells.jsonl
    .venv/bin/python benchmarks/calibration/build.py --sources S.json --out C.jsonl --work DIR

Each source pairs one GPU results file (toolchains timed side by side) with the explain report of
the same kernels: a committed one (``explain_json``) or one compiled here (``explain``: runs
``ktriage explain TARGET ARGS -t <the run's toolchains> --format json``; cached artifacts make
that seconds). The pairing rules and the cell format: ktriage/predict/dataset.py.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from ktriage.measure.results_file import read_results  # noqa: E402
from ktriage.predict.dataset import cells_from_results, write_cells  # noqa: E402


def explain_report(source: dict, specs: list[str], work: Path) -> dict:
    if source.get("explain_json"):
        return json.loads((ROOT / source["explain_json"]).read_text())
    ex = source["explain"]
    out = work / f"{source['operator']}.explain.json"
    if not out.exists():
        cmd = [str(ROOT / ".venv/bin/ktriage"), "explain", ex["target"], *ex.get("args", [])]
        for s in specs:
            cmd += ["-t", s]
        cmd += ["--allow-failures", "--format", "json", "-o", str(out)]
        print("+", " ".join(cmd), file=sys.stderr)
        subprocess.run(cmd, cwd=ROOT, check=True, stdout=subprocess.DEVNULL)
    return json.loads(out.read_text())


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sources", default=str(Path(__file__).with_name("sources.json")))
    ap.add_argument("--out", default=str(Path(__file__).with_name("cells.jsonl")))
    ap.add_argument("--work", default="/tmp/ktriage-calibration", help="where explain reports compiled here are kept")
    args = ap.parse_args()
    work = Path(args.work)
    work.mkdir(parents=True, exist_ok=True)
    cells = []
    for source in json.loads(Path(args.sources).read_text())["sources"]:
        run, results = read_results(ROOT / source["results"])
        specs = [str(t["spec"]) for t in run.toolchains]
        report = explain_report(source, specs, work)
        made, notes = cells_from_results(run, results, report, operator=source["operator"],
                                         backend=source.get("backend"), source=source["results"])
        for note in dict.fromkeys(notes):
            print(f"note: {note}", file=sys.stderr)
        print(f"{source['operator']}: {len(made)} cells", file=sys.stderr)
        cells += made
    path = write_cells(args.out, cells)
    print(f"{len(cells)} cells -> {path}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
