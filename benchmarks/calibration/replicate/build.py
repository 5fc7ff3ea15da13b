"""A second run's cells (``cells.jsonl.gz``: run 2 from ``h200/``; ``--results h200_run3`` for run 3) from the
committed results, with the same explain reports and the same pairing as run 1's ``../cells.jsonl``. CPU only,
no compile for the corpus (its reports are committed); the two catalog sweeps compile here once, cached under
``--work``:

    KTRIAGE_HOME=~/.cache/ktriage .venv/bin/python benchmarks/calibration/replicate/build.py
    KTRIAGE_HOME=~/.cache/ktriage .venv/bin/python benchmarks/calibration/replicate/build.py \
        --results benchmarks/calibration/replicate/h200_run3 --out benchmarks/calibration/replicate/cells_run3.jsonl.gz

The results are committed gzipped; they are unpacked into ``--work`` and ``../build.py`` runs on them with a
sources file that names that run's results where ``../sources.json`` names run 1's."""

from __future__ import annotations

import argparse
import gzip
import json
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[2]
RUN2_OF = {"ln_bwd": "rep-ln-bwd", "emb_bwd": "rep-emb-bwd"}  # run 1's results file -> run 2's


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--work", default="/tmp/ktriage-replicate", help="unpacked results and compiled reports")
    ap.add_argument("--results", default=str(HERE / "h200"), help="a run's results: corpus/ and other/, gzipped")
    ap.add_argument("--out", default=str(HERE / "cells.jsonl.gz"), help="that run's cells, gzipped")
    args = ap.parse_args()
    work = Path(args.work)
    for sub in ("corpus", "other"):
        (work / sub).mkdir(parents=True, exist_ok=True)
        for old in (work / sub).glob("*.json"):  # a work folder used for another run
            old.unlink()
        for gz in sorted((Path(args.results) / sub).glob("*.json.gz")):
            (work / sub / gz.name.removesuffix(".gz")).write_bytes(gzip.decompress(gz.read_bytes()))
    sources = []
    for source in json.loads((HERE.parent / "sources.json").read_text())["sources"]:
        stem = Path(source["results"]).name.removesuffix(".json")
        results = work / "other" / f"{RUN2_OF.get(stem, stem)}.json"
        if results.is_file():
            sources.append({**source, "results": str(results)})
        else:
            print(f"note: {source['operator']}: {stem} was not benched again", file=sys.stderr)
    (work / "sources.json").write_text(json.dumps({"sources": sources}, indent=1))
    cmd = [
        sys.executable,
        str(HERE.parent / "build.py"),
        "--sources",
        str(work / "sources.json"),
        "--scan",
        str(work / "corpus"),
        "--workloads",
        str(ROOT / "benchmarks/corpus/h200/workloads"),
        "--explain-dir",
        str(ROOT / "benchmarks/corpus/h200/explain"),
        "--work",
        str(work / "explain"),
        "--out",
        str(work / "cells.jsonl"),
    ]
    rc = subprocess.call(cmd, cwd=ROOT)
    if rc == 0:  # the facts repeat ../cells.jsonl's: committed gzipped (20x smaller)
        Path(args.out).write_bytes(gzip.compress((work / "cells.jsonl").read_bytes(), 9, mtime=0))
        print(f"-> {args.out}", file=sys.stderr)
    return rc


if __name__ == "__main__":
    raise SystemExit(main())
