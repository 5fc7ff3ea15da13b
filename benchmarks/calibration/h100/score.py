"""Score the cost model fitted on the H200 on the same corpus benched on an H100: data it was never fitted on.

    # the H100's cells: its results files (results/corpus: all 51 bundles; results/corpus_half1: 26 of them benched
    # once more, the GPU's run-to-run check), gzipped, with the corpus's committed explain reports
    for run in corpus corpus_half1; do
      KTRIAGE_HOME=~/.cache/ktriage .venv/bin/python benchmarks/calibration/build.py --no-sources \\
          --scan benchmarks/calibration/h100/results/$run --match '*.json.gz' \\
          --workloads benchmarks/corpus/h200/workloads --explain-dir benchmarks/corpus/h200/explain --out /tmp/h100_$run.jsonl
    done
    gzip -9nc /tmp/h100_corpus.jsonl > benchmarks/calibration/h100/cells.jsonl.gz
    gzip -9nc /tmp/h100_corpus_half1.jsonl > benchmarks/calibration/h100/cells_half1.jsonl.gz
    .venv/bin/python benchmarks/calibration/h100/score.py     # -> score.md next to this file (CPU, seconds)

Five views, each a confusion matrix (ktriage compare's statistics for the measured verdicts):
1. the shipped model (``ktriage/predict/params.json``: every H200 operator in its fit) against the H100's verdicts,
   as explain predicts for a user with an H100 (``--arch sm_90``: the model has one part per arch, its rates are
   the H200's);
2. the H200's held-out predictions (``../cv_cells.jsonl``: each operator predicted by a fit without it) against the
   H100's verdicts, for the cells both GPUs measured;
3. the same held-out predictions against the H200's own verdicts on those cells: what view 2 compares with (the
   H200's record on this corpus alone, without the catalog sweeps that most of ``../cells.jsonl``'s regressions
   come from);
4. the H200's measured verdicts as a predictor of the H100's: how far the two GPUs agree;
5. the H100's second bench of 26 bundles (``cells_half1.jsonl.gz``) as a predictor of its first: how far the H100
   agrees with itself, so that view 4's disagreements can be told from noise."""

from __future__ import annotations

import argparse
import gzip
import json
import math
import sys
from collections import Counter
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[2]
sys.path.insert(0, str(ROOT))

from ktriage.predict.calibration import Scores, usable
from ktriage.predict.dataset import CalibrationCell, read_cells
from ktriage.predict.model import load_params, predict

GATE = 0.05


def _h200_cv() -> dict[tuple[str, ...], dict]:
    rows = [json.loads(line) for line in (HERE.parent / "cv_cells.jsonl").read_text().splitlines() if line]
    return {(r["operator"], r["kernel"], r["input"], r["reference"], r["toolchain"]): r for r in rows}


def _cells(path: Path) -> list[CalibrationCell]:
    if path.suffix == ".gz":
        plain = Path("/tmp") / f"h100_score_{path.stem}"
        plain.write_bytes(gzip.decompress(path.read_bytes()))
        path = plain
    return usable(read_cells(path))


def _as_kind(verdict: str) -> str:
    """A measured verdict used as a prediction (view 3): 'same' and 'unsure' predict neutral."""
    return verdict if verdict in ("regression", "improvement") else "neutral"


def main(cells_path: Path, out_path: Path, gpu: str = "H100", replicate_path: Path | None = None) -> int:
    cells = _cells(cells_path)
    params = load_params()
    shipped = [predict(c.ref, c.new, params, threshold=GATE, contributors=False) for c in cells]
    measured = [c.measured.verdict for c in cells]
    cv = _h200_cv()
    h200 = {c.key: c for c in usable(read_cells(HERE.parent / "cells.jsonl"))}
    both = [i for i, c in enumerate(cells) if c.key in cv and c.key in h200]
    views = [
        (
            "the shipped model (fitted on every H200 operator)",
            Scores.of([p.kind for p in shipped], measured),
            len(cells),
        ),
        (
            "the H200's held-out predictions (cv_cells.jsonl), cells both GPUs measured",
            Scores.of([cv[cells[i].key]["predicted"] for i in both], [measured[i] for i in both]),
            len(both),
        ),
        (
            "the same held-out predictions against the H200's own verdicts (what view 2 compares with)",
            Scores.of(
                [cv[cells[i].key]["predicted"] for i in both], [h200[cells[i].key].measured.verdict for i in both]
            ),
            len(both),
        ),
        (
            "the H200's measured verdicts as the prediction (how far the GPUs agree)",
            Scores.of([_as_kind(h200[cells[i].key].measured.verdict) for i in both], [measured[i] for i in both]),
            len(both),
        ),
    ]
    if replicate_path is not None and replicate_path.exists():
        again = {c.key: c for c in _cells(replicate_path)}
        twice = [i for i, c in enumerate(cells) if c.key in again]
        views.append(
            (
                f"the {gpu}'s second bench as the prediction of its first (how far the {gpu} agrees with itself)",
                Scores.of(
                    [_as_kind(again[cells[i].key].measured.verdict) for i in twice], [measured[i] for i in twice]
                ),
                len(twice),
            )
        )
    ops = Counter(c.operator for c in cells)
    log_err = sorted(abs(math.log(c.measured.ratio) - math.log(p.ratio)) for c, p in zip(cells, shipped))
    cross = sorted(abs(math.log(cells[i].measured.ratio) - math.log(h200[cells[i].key].measured.ratio)) for i in both)
    out = [
        f"# The H200-fitted cost model on the {gpu}'s measurements",
        "",
        f"Generated by `benchmarks/calibration/h100/score.py` (its docstring has the commands) from `{cells_path.name}`:",
        f"{len(cells)} cells of {len(ops)} operators benched on the {gpu}, {len(both)} of them also in the H200's"
        " calibration cells. Verdicts: the interval (prediction) or the measured confidence interval (GPU) beyond the"
        f" +-{GATE:.0%} gate.",
        "",
        f"|log error| of the shipped model's point: median {100 * log_err[len(log_err) // 2]:.2f} %, 80 % quantile"
        f" {100 * log_err[int(0.8 * (len(log_err) - 1))]:.2f} %. The {gpu}'s measured ratio against the H200's, same"
        f" cell: median {100 * cross[len(cross) // 2]:.2f} %, 80 % quantile {100 * cross[int(0.8 * (len(cross) - 1))]:.2f} %.",
    ]
    for title, scores, n in views:
        out += ["", f"## {title} ({n} cells)", "", scores.markdown()]
    text = "\n".join(out) + "\n"
    out_path.write_text(text)
    print(text)
    return 0


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cells", type=Path, default=HERE / "cells.jsonl.gz", help="the second GPU's cells")
    ap.add_argument(
        "--replicate", type=Path, default=HERE / "cells_half1.jsonl.gz", help="the same GPU's second bench (view 5)"
    )
    ap.add_argument("--out", type=Path, default=HERE / "score.md")
    ap.add_argument("--gpu", default="H100", help="the GPU the cells were benched on, for the text")
    args = ap.parse_args()
    sys.exit(main(args.cells, args.out, args.gpu, args.replicate))
