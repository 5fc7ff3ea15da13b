"""Triage's time against the number of cells (issue 27): two TritonBench CSVs of ``ROWS`` x_val rows
and two backends each (the old and new side of one operator), triaged through the real
``ktriage triage`` command line; prints the rows, the cells and the wall time.

Both sides name the same toolchain, so no kernel is compiled (what this times is the diff, the
ranking, the counters' index, the report and its three writers: markdown, JSON, HTML); one row in
twenty is 30 % slower on the new side, so 5 % of the cells are flagged and go through the per-cell
steps. Run from the repository root:

    .venv/bin/python benchmarks/hardening/triage_scale/triage_scale.py 200000

(``--out DIR`` keeps the files and the reports; default: a temporary folder.)
"""

from __future__ import annotations

import argparse
import random
import sys
import tempfile
import time
from pathlib import Path


def write_side(path: Path, rows: int, slower: bool, seed: int) -> None:
    rnd = random.Random(seed)
    lines = ["x_val;torch_layer_norm-latency;liger_layer_norm-latency"]
    for i in range(rows):
        base = 0.05 + (i % 997) * 0.001
        factor = 1.3 if slower and i % 20 == 0 else 1.0
        lines.append(
            f"{1000 + i};{base * rnd.uniform(0.99, 1.01):.6f};{base * 1.2 * factor * rnd.uniform(0.99, 1.01):.6f}"
        )
    lines.append("average;;")
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("rows", type=int, nargs="?", default=200_000)
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()
    out = args.out or Path(tempfile.mkdtemp(prefix="ktriage-triage-scale-"))
    out.mkdir(parents=True, exist_ok=True)
    old, new = out / "layer_norm_fwd_old.csv", out / "layer_norm_fwd_new.csv"
    write_side(old, args.rows, False, 1)
    write_side(new, args.rows, True, 2)
    from ktriage.cli.app import main as ktriage_main

    argv = [
        "triage",
        str(old),
        str(new),
        "--old-toolchain",
        "triton==3.4.0",
        "--new-toolchain",
        "triton==3.4.0",
        "--no-bisect",
        "--no-fixes",
        "--format",
        "json",
        "-o",
        str(out / "triage.md"),
        "-o",
        str(out / "triage.html"),
    ]
    start = time.perf_counter()
    real_stdout = sys.stdout
    with open(out / "triage.json", "w", encoding="utf-8") as fh:
        sys.stdout = fh
        try:
            code = ktriage_main(argv)
        finally:
            sys.stdout = real_stdout
    took = time.perf_counter() - start
    print(
        f"rows {args.rows}, cells {4 * args.rows} (2 backends x 2 sides), exit {code}, {took:.1f} s; reports in {out}"
    )
    return 0 if code in (0, 1) else code


if __name__ == "__main__":
    sys.exit(main())
