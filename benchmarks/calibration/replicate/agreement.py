"""How often the GPU's verdicts reproduce, and what that means for the model's scores. CPU only:

    .venv/bin/python benchmarks/calibration/replicate/agreement.py    # writes replicate/agreement.md
    .venv/bin/python benchmarks/calibration/replicate/agreement.py --second cells_run3.jsonl.gz --name "run 3" \
        --about "..." --out agreement_run3.md                         # README.md: the exact arguments

Run 1 is the corpus's first bench (``--first``, ``cells_run1.jsonl.gz``: the calibration's cells until the labels
moved to the fixed bench); the second run is another bench of the same bundles on the H200 (``--second``: run 2,
``cells.jsonl.gz``, the same bench on another day; run 3, ``cells_run3.jsonl.gz``, the bench fixed to time every
variant in three turns; the fixed bench's labels, ``../cells.jsonl``), built by ``build.py`` with the same explain
reports.
A cell of run 1 is matched to the other run's by its results file (``ln_bwd`` is ``rep-ln-bwd``, ``emb_bwd``
``rep-emb-bwd``, others by name), kernel, input, toolchains, backend and recorded input.

Why: the model was scored against run 1's verdicts as if they were the truth (until 2026-12-04, when the fixed
bench's replaced them). A verdict at +5..8 % can be
"regression" in one run and "unsure" in the next; the other run against run 1 is the score a perfect predictor
of one GPU run would get on another. A model's held-out predictions (``--cv``: ``cv_run1.jsonl.gz``, the model
fitted on run 1's labels; ``../cv_cells.jsonl``, the shipped one, fitted on the fixed bench's) are scored against
each run's labels and on the labels both runs agree on."""

from __future__ import annotations

import argparse
import gzip
import json
import os
import sys
from collections import Counter
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[2]))

from ktriage.predict.calibration import Scores
from ktriage.predict.dataset import CalibrationCell

RENAMED = {"rep-ln-bwd": "ln_bwd", "rep-emb-bwd": "emb_bwd"}
KINDS = ("regression", "same", "improvement", "unsure")


def run_name(source: str) -> str:
    stem = Path(source).name.removesuffix(".gz").removesuffix(".json")
    return RENAMED.get(stem, stem)


def key(c: CalibrationCell) -> tuple[str, ...]:
    """A cell's identity across runs: a results file can time one kernel label from two recorded inputs."""
    return (run_name(c.source), *c.key, str(c.extra.get("backend")), str(c.extra.get("input_id")))


def matrix(rows: list[tuple[str, str]], first: str, second: str) -> list[str]:
    """rows: (run-1 verdict, run-2 verdict) -> a markdown table, run 2 across."""
    count = Counter(rows)
    out = [f"| {first} \\ {second} | " + " | ".join(KINDS) + " | agree |", "|---" * (len(KINDS) + 2) + "|"]
    for a in KINDS:
        n = sum(count[a, b] for b in KINDS)
        agree = f"{count[a, a] / n:.0%}" if n else "-"
        out.append(f"| {a} | " + " | ".join(str(count[a, b]) for b in KINDS) + f" | {agree} ({count[a, a]} of {n}) |")
    return out


def read_any(path: Path) -> list[str]:
    """A cells file's lines, gzipped or not."""
    data = path.read_bytes()
    return (gzip.decompress(data) if path.suffix == ".gz" else data).decode().splitlines()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", type=Path, default=HERE / "agreement.md")
    ap.add_argument("--first", type=Path, default=HERE / "cells_run1.jsonl.gz", help="run 1's cells")
    ap.add_argument("--second", type=Path, default=HERE / "cells.jsonl.gz", help="the other run's cells")
    ap.add_argument(
        "--cv",
        type=Path,
        default=HERE / "cv_run1.jsonl.gz",
        help="a model's held-out predictions of --first's cells, in their order (fit.py's cv_cells.jsonl)",
    )
    ap.add_argument("--name", default="run 2", help="what the other run is called in the text")
    ap.add_argument(
        "--about",
        default="the same bundles benched again on the H200 on 2026-12-04 with ktriage 6206778",
        help="one sentence on the other run",
    )
    args = ap.parse_args()
    name = args.name
    cells1 = [CalibrationCell.from_json(json.loads(line)) for line in read_any(args.first)]
    run1 = {key(c): c for c in cells1}
    run2 = {key(c): c for c in (CalibrationCell.from_json(json.loads(line)) for line in read_any(args.second))}
    if len(run1) != len(cells1):
        raise SystemExit(f"two cells of {args.first.name} share a key: the matching below would lose one")
    both = [k for k in run1 if k in run2]
    pairs = [(run1[k].measured.verdict, run2[k].measured.verdict) for k in both]
    # --cv is --first's cells in the same order, each with its held-out prediction
    cv_rows = [json.loads(line) for line in read_any(args.cv)]
    if [(r["kernel"], r["input"]) for r in cv_rows] != [(c.kernel, c.input) for c in cells1]:
        raise SystemExit(f"{args.cv.name} is not {args.first.name}'s cells in order: run ../fit.py on them first")
    cv = {key(c): r["predicted"] for c, r in zip(cells1, cv_rows)}
    decided = [(k, a) for k, (a, b) in zip(both, pairs) if a == b and a != "unsure"]
    flips = [(k, a, b) for k, (a, b) in zip(both, pairs) if {a, b} == {"regression", "improvement"}]
    shown = os.path.relpath(args.second.resolve(), HERE)  # as the files here name each other
    second = f"`{shown}`"
    out = [
        f"# The GPU against itself: {name} of the calibration's cells (H200)",
        "",
        f"Generated by `replicate/agreement.py --second {shown}`. Run 1: `{args.first.name}` (the corpus",
        f"bench of 2026-12-03, the record step of 2026-12-01, the perf sweeps of 2026-12-01); {name}: {second},",
        f"{args.about} (README.md: command, machine, date). Verdicts are ktriage compare's (Hodges-Lehmann ratio,",
        "99 % CI, the +-5 % gate).",
        "",
        f"{len(both)} of run 1's {len(run1)} cells were benched again "
        f"({len(run1) - len(both)} not: README.md says which).",
        "",
        f"## {name[0].upper() + name[1:]}'s verdict for each run-1 verdict",
        "",
        *matrix(pairs, "run 1", name),
        "",
        f"Sign flips (a regression in one run, an improvement in the other): {len(flips)}.",
        "",
    ]
    for kind in ("regression", "improvement"):
        s = Scores.of([b if b in ("regression", "improvement") else "neutral" for _, b in pairs], [a for a, _ in pairs])
        p, r = s.precision(kind), s.recall(kind)
        out.append(
            f"- {name} as a predictor of run 1's {kind}s: precision "
            f"{'-' if p is None else f'{p:.0%}'}, recall {'-' if r is None else f'{r:.0%}'}"
        )
    out += ["", f"## The model (held out by operator, `{args.cv.name}`) against each run's labels", ""]
    for label, verdicts in (("run 1", [a for a, _ in pairs]), (name, [b for _, b in pairs])):
        s = Scores.of([cv[k] for k in both], verdicts)
        out += [f"### {label}'s verdicts, on the {len(both)} cells both runs timed", "", s.markdown(), ""]
    scored = [(cv[k], a) for k, a in decided]
    s = Scores.of([p for p, _ in scored], [a for _, a in scored])
    out += ["### The labels both runs agree on", ""]
    out += [f"{len(scored)} cells (both runs regression, same or improvement).", "", s.markdown(), ""]
    out += [
        "## Cells whose verdict changed between the runs",
        "",
        f"| results | kernel | input | toolchain | run 1 | {name} |",
    ]
    out.append("|---|---|---|---|---|---|")
    for k, (a, b) in sorted(zip(both, pairs)):
        if a != b:
            c1, c2 = run1[k], run2[k]
            out.append(
                f"| {k[0]} | {c1.kernel} | {c1.input[:60]} | {c1.toolchain} vs {c1.reference} | "
                f"{a} {c1.measured.ratio:.3f}x | {b} {c2.measured.ratio:.3f}x |"
            )
    args.out.write_text("\n".join(out) + "\n")
    print("\n".join(out[:40]))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
