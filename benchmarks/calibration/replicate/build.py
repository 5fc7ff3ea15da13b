"""A GPU run's cells from its committed results, with the same explain reports and the same pairing as run 1's
(``cells_run1.jsonl.gz``, built by ``../build.py`` from the corpus's first bench). CPU only, no compile for the
corpus (its reports are committed); the two catalog sweeps compile here once, cached under ``--work``:

    # the calibration's cells: the fixed bench's labels (runs 3 and 4, every variant timed in three turns)
    KTRIAGE_HOME=~/.cache/ktriage .venv/bin/python benchmarks/calibration/replicate/build.py \
        --results benchmarks/calibration/replicate/h200_run3 --results benchmarks/calibration/replicate/h200_run4 \
        --out benchmarks/calibration/cells.jsonl
    # run 2 (h200/, the default) and run 3 alone, for the agreement tables
    KTRIAGE_HOME=~/.cache/ktriage .venv/bin/python benchmarks/calibration/replicate/build.py
    KTRIAGE_HOME=~/.cache/ktriage .venv/bin/python benchmarks/calibration/replicate/build.py \
        --results benchmarks/calibration/replicate/h200_run3 --out benchmarks/calibration/replicate/cells_run3.jsonl.gz

The results are committed gzipped; they are unpacked into ``--work`` and ``../build.py`` runs on them with a
sources file that names that run's results where ``../sources.json`` names run 1's. Each cell's ``source`` names
the committed results file, so the cells are the same on any machine."""

from __future__ import annotations

import argparse
import dataclasses
import gzip
import json
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[2]
sys.path.insert(0, str(ROOT))

from ktriage.predict.dataset import read_cells, write_cells

RUN2_OF = {"ln_bwd": "rep-ln-bwd", "emb_bwd": "rep-emb-bwd"}  # run 1's results file -> run 2's


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--work", default="/tmp/ktriage-replicate", help="unpacked results and compiled reports")
    ap.add_argument(
        "--results",
        action="append",
        help="a run's results: corpus/ and other/, gzipped (default h200/; repeat to join the device calls of one "
        "run, e.g. h200_run3 and h200_run4, the fixed bench's labels)",
    )
    ap.add_argument("--out", default=str(HERE / "cells.jsonl.gz"), help="that run's cells (gzipped if .gz)")
    ap.add_argument(
        "--corpus-only",
        action="store_true",
        help="only the corpus's cells (no compile: their explain reports are committed; the tests' empty home)",
    )
    args = ap.parse_args()
    work = Path(args.work)
    committed: dict[str, str] = {}  # an unpacked results file -> the committed one it came from
    for sub in ("corpus", "other"):
        (work / sub).mkdir(parents=True, exist_ok=True)
        for old in (work / sub).glob("*.json"):  # a work folder used for another run
            old.unlink()
        for results in args.results or [str(HERE / "h200")]:
            for gz in sorted((Path(results) / sub).glob("*.json.gz")):
                target = work / sub / gz.name.removesuffix(".gz")
                if target.exists():  # two calls benched one bundle: which is the label would be a guess
                    raise SystemExit(f"error: {sub}/{gz.name} is in two --results folders; keep it in one")
                target.write_bytes(gzip.decompress(gz.read_bytes()))
                committed[str(target.resolve())] = str(gz.resolve().relative_to(ROOT))
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
        *(["--no-sources", "--no-compile"] if args.corpus_only else []),
    ]
    rc = subprocess.call(cmd, cwd=ROOT)
    if rc == 0:
        # each cell names the committed results file it came from, not this machine's work folder
        cells = read_cells(work / "cells.jsonl")
        write_cells(
            work / "cells.jsonl", [dataclasses.replace(c, source=committed.get(c.source, c.source)) for c in cells]
        )
        data = (work / "cells.jsonl").read_bytes()  # a second run's facts repeat the first's: gzipped, 20x smaller
        Path(args.out).write_bytes(gzip.compress(data, 9, mtime=0) if args.out.endswith(".gz") else data)
        print(f"-> {args.out}", file=sys.stderr)
    return rc


if __name__ == "__main__":
    raise SystemExit(main())
