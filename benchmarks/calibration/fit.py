"""Fit the cost model on benchmarks/calibration/cells.jsonl and write what the README quotes.

    .venv/bin/python benchmarks/calibration/fit.py            # CPU only, no compile: a minute
    .venv/bin/python benchmarks/calibration/fit.py --cells C.jsonl --params OUT.json

Writes (next to this script unless told otherwise):
- ``fit.json``: the fitted parameters, the leave-one-operator-out confusion matrix and per-operator
  scores (the same object ``ktriage calibrate -o`` writes);
- ``cv_cells.jsonl``: every cell's out-of-fold prediction next to its measurement;
- ``confusion.md``: the matrix of the model ("after") and of explain's former per-metric sign rules
  ("before") on the same cells;
- with ``--install``, the parameters into ktriage/predict/params.json (the model's default).
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path.insert(0, str(ROOT))

from ktriage.predict.calibration import Calibration, RecallBySize, Scores, calibrate, held_out_groups
from ktriage.predict.dataset import CalibrationCell, read_cells
from ktriage.predict.facts import KernelFacts
from ktriage.predict.model import PARAMS_FILE, classify

# explain's sign rules before the model (ktriage/explain/findings.py at 0ac3bbe): a cell is a
# "regression" when any headline metric or notable opcode moved the worse way, an "improvement"
# when only better ways, else neutral. Re-implemented on the facts so it works for any pair.
_WORSE_UP = {
    "spill_store_bytes",
    "registers",
    "stack_bytes",
    "shared_bytes",
    "LDL",
    "STL",
    "ATOMG",
    "ATOM",
    "ATOMS",
    "main_loop_instructions",
}
_WORSE_DOWN = {"ctas_per_sm", "REDG", "RED", "HGMMA", "HMMA", "WGMMA"}
_NOTABLE = ("ATOMG", "REDG", "ATOMS", "RED", "ATOM", "LDL", "STL", "HGMMA", "HMMA", "WGMMA", "LDGSTS", "UTMALDG")


def _base(f: KernelFacts) -> dict[str, int]:
    out: dict[str, int] = {}
    for op, n in f.opcodes.items():
        out[op.split(".")[0]] = out.get(op.split(".")[0], 0) + n
    return out


def sign_rules(c: CalibrationCell) -> str:
    a, b = c.ref, c.new
    moves: list[tuple[str, float, float]] = [
        (m, getattr(a, m), getattr(b, m))
        for m in ("spill_store_bytes", "registers", "stack_bytes", "shared_bytes", "ctas_per_sm")
    ]
    oa, ob = _base(a), _base(b)
    for op in _NOTABLE:
        x, y = oa.get(op, 0), ob.get(op, 0)
        if abs(x - y) >= 2 and abs(x - y) > 0.05 * max(x, y):
            moves.append((op, x, y))
    if a.main_loop and b.main_loop:
        moves.append(("main_loop_instructions", a.main_loop.instructions, b.main_loop.instructions))
    kinds = set()
    for m, x, y in moves:
        if x == y:
            continue
        up = y > x
        if (up and m in _WORSE_UP) or (not up and m in _WORSE_DOWN):
            kinds.add("regression")
        elif (up and m in _WORSE_DOWN) or (not up and m in _WORSE_UP):
            kinds.add("improvement")
    return "regression" if "regression" in kinds else "improvement" if "improvement" in kinds else "neutral"


def ceiling(cal: Calibration, threshold: float) -> list[str]:
    """What the gate allows at all: each cell's measured ratio taken as its prediction, with the
    interval the model gave that cell. A measured change inside the interval's half-width of the gate
    (e.g. 0.93 when the gate is 0.952 and the half-width 3.6 %) is neutral even to a perfect model, so
    recall cannot pass this without a narrower interval, i.e. smaller held-out residuals."""
    out = ["### The ceiling: a perfect point prediction with the model's intervals", ""]
    for kind in ("regression", "improvement"):
        cells = [r for r in cal.cv_cells if r.cell.measured.verdict == kind]
        reach = 0
        for r in cells:
            half = 0.0 if r.high <= r.predicted_ratio else math.log(r.high / r.predicted_ratio)
            m = r.cell.measured.ratio
            reach += classify(m * math.exp(-half), m * math.exp(half), threshold) == kind
        share = f"{reach / len(cells):.0%}" if cells else "n/a"
        out.append(f"- {kind}: at most {reach} of {len(cells)} measured ({share}) can be called")
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--cells", default=str(HERE / "cells.jsonl"))
    ap.add_argument("--out", default=str(HERE), help="folder for fit.json, cv_cells.jsonl, confusion.md")
    ap.add_argument("--install", action="store_true", help="also write the parameters to ktriage/predict/params.json")
    ap.add_argument("--threshold", type=float, default=0.05)
    ap.add_argument("--level", type=float, default=0.8, help="coverage asked of the prediction interval")
    ap.add_argument(
        "--levels", help="also print LOOO precision/recall at these interval levels (e.g. 0.5,0.6,0.7,0.8,0.9)"
    )
    args = ap.parse_args()
    cells = read_cells(args.cells)
    cal = calibrate(cells, threshold=args.threshold, level=args.level)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "fit.json").write_text(json.dumps(cal.to_json(), indent=1) + "\n")
    (out / "cv_cells.jsonl").write_text("".join(json.dumps(r.to_json()) + "\n" for r in cal.cv_cells))
    before = Scores.of([sign_rules(r.cell) for r in cal.cv_cells], [r.cell.measured.verdict for r in cal.cv_cells])
    assert cal.scores is not None
    ops = sorted(cal.per_operator)
    groups = held_out_groups([r.cell for r in cal.cv_cells])
    members: dict[str, list[str]] = {}
    for op, g in groups.items():
        members.setdefault(g, []).append(op)
    together = [m for m in members.values() if len(m) > 1]
    text = [
        f"# Calibration: {len(cal.cv_cells)} GPU-measured cells of {len(ops)} operators",
        "",
        f"Gate +-{args.threshold:.0%}; measured verdicts from ktriage compare (99 % CI); model predictions "
        "leave-one-operator-out (fit and interval never saw the operator they predict); operators that launch a "
        f"kernel of the same name are held out together ({len(set(groups.values()))} groups), these:",
        "",
        *(f"- {' + '.join(g)}" for g in together),
        "",
        "## After: the cost model (ktriage/predict)",
        "",
        cal.scores.markdown(),
        "",
        *ceiling(cal, args.threshold),
        "",
        "### Recall by the size of the measured change (how often a change that large is called)",
        "",
        RecallBySize.of(cal.cv_cells, args.threshold).markdown(),
        "",
        "## Before: explain's per-metric sign rules (registers up = bad, ...)",
        "",
        before.markdown(),
        "",
        "## Per operator (model, LOOO)",
        "",
        "| operator | cells | median abs log error | reg P/R | imp P/R |",
        "|---|---|---|---|---|",
    ]
    for op in ops:
        s = cal.per_operator[op]

        def pr(k: str, s: dict[str, dict[str, float | None]] = s) -> str:
            v = s[k]

            def f(x: float | None) -> str:
                return "-" if x is None else f"{x:.0%}"

            return f"{f(v['precision'])}/{f(v['recall'])}"

        text.append(
            f"| {op} | {s['cells']} | {s['median_abs_log_error']:.3f} | {pr('regression')} | {pr('improvement')} |"
        )
    text += ["", "Parameters: see fit.json (`params`)."]
    if args.levels:
        text += [
            "",
            "## The interval's level (LOOO; a lower level: narrower intervals, more verdicts)",
            "",
            "| level | a | b | regression P/R | improvement P/R |",
            "|---|---|---|---|---|",
        ]
        for level in (float(x) for x in args.levels.split(",")):
            other = cal if level == args.level else calibrate(cells, threshold=args.threshold, level=level)
            sc = other.scores
            assert sc is not None
            f = lambda x: "-" if x is None else f"{x:.0%}"  # noqa: E731
            text.append(
                f"| {level:g} | {other.params.interval_a} | {other.params.interval_b} | "
                f"{f(sc.precision('regression'))}/{f(sc.recall('regression'))} | "
                f"{f(sc.precision('improvement'))}/{f(sc.recall('improvement'))} |"
            )
    (out / "confusion.md").write_text("\n".join(text) + "\n")
    print("\n".join(text))
    if args.install:
        PARAMS_FILE.write_text(json.dumps({"format": 1, "params": cal.params.to_json()}, indent=1) + "\n")
        print(f"installed {PARAMS_FILE}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
