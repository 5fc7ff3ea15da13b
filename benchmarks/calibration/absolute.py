"""The model's absolute time against the GPU's, per operator: what the fitted cycles are, and are not.

    .venv/bin/python benchmarks/calibration/absolute.py > benchmarks/calibration/absolute.md

The cost model is fitted on *ratios* (new toolchain against the reference, same launch); its cycles for one
kernel are never compared with a measured time. This prints, for the committed cells (``cells.jsonl``, each
with the reference's measured median, ``extra.median_ref_ms``), the shipped model's time of the reference
kernel (cycles of its busiest SM at the part's SM clock, ``ktriage.arch``) against that measurement. A large
factor says which terms the fit bent to get the ratios right (``trip_scale``, ``lambda_wave``), and why a
ratio can be right while the time is not. Descriptive only: nothing here is fitted or held out. Trying it
as a second fit target made the held-out verdicts worse (README.md, "Tried", 2026-12-05).
"""

from __future__ import annotations

import argparse
import math
import statistics
import sys
from collections import defaultdict
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[1]))

from ktriage.arch import parse_arch
from ktriage.predict.dataset import read_cells
from ktriage.predict.model import estimate, load_params, profile

TENSOR_CORE = ("HGMMA", "HMMA", "IMMA", "QGMMA", "IGMMA", "UTCHMMA", "UTCQMMA", "UTCIMMA")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--cells", default=str(HERE / "cells.jsonl"))
    ap.add_argument("--model", default=None, help="a model file (default: the shipped parameters)")
    args = ap.parse_args()
    params = load_params(args.model)
    rows: dict[str, list[tuple[float, float, bool]]] = defaultdict(list)
    for cell in read_cells(args.cells):
        measured_ms = float(cell.extra.get("median_ref_ms") or 0.0)
        cycles = estimate(profile(cell.ref), params)
        if measured_ms <= 0 or not math.isfinite(cycles) or cycles <= 0:
            continue
        clock = parse_arch(cell.ref.target).throughput.sm_clock_hz
        mma = any(op.split(".")[0] in TENSOR_CORE for op in cell.ref.opcodes)
        rows[cell.operator].append((measured_ms, cycles / clock * 1e3, mma))
    logs = [math.log(m / t) for v in rows.values() for t, m, _ in v]
    print("# The model's absolute time against the GPU's (H200, the reference kernel of each cell)\n")
    print(f"Shipped parameters ({params.fitted_on}); `{Path(args.cells).name}`, {len(logs)} cells.")
    print("`log(model / measured)`: 0 is exact, +0.69 twice too slow, -0.69 twice too fast.\n")
    print(
        f"All cells: median {statistics.median(logs):+.2f}, the middle half "
        f"{statistics.quantiles(logs, n=4)[0]:+.2f}..{statistics.quantiles(logs, n=4)[2]:+.2f}.\n"
    )
    print(
        "| operator | cells | measured, median over its cells (us) | model, median over its cells (us) | median of the cells' log(model / measured) | tensor cores |"
    )
    print("|---|---|---|---|---|---|")
    order = sorted(rows, key=lambda op: statistics.median(math.log(m / t) for t, m, _ in rows[op]))
    for op in order:
        v = rows[op]
        med = statistics.median(math.log(m / t) for t, m, _ in v)
        print(
            f"| {op} | {len(v)} | {statistics.median(t for t, _, _ in v) * 1e3:.1f} | "
            f"{statistics.median(m for _, m, _ in v) * 1e3:.1f} | {med:+.2f} | {'yes' if any(x for *_, x in v) else ''} |"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
