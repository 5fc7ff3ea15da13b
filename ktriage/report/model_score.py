"""How ``ktriage calibrate --score-only`` renders a model's predictions next to the GPU's measurements
(``ktriage.predict.scoring.Scoring``): the terminal's text, the markdown, the JSON document.

Each shows the confusion matrix and recall by the size of the measured change (as ``calibrate`` does),
then the cells where the model and the GPU disagree, farthest first: the terminal the first
``MISSES_SHOWN``, the markdown all of them and then every cell, the JSON every cell.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from ktriage.mdsafe import markdown_writer, md_text
from ktriage.predict.calibration import CellResult
from ktriage.predict.model_used import ModelUsed
from ktriage.predict.scoring import Scoring, disagreement
from ktriage.stats.gate import gate_band
from ktriage.wording import clipped, plural

MISSES_SHOWN = 15
INPUT_CHARS = 48  # the terminal's input column: a recorded launch's label names every tensor and stride


def _short(text: str) -> str:
    return clipped(text, INPUT_CHARS)


def header(scoring: Scoring, model: ModelUsed, cells: int, operators: int) -> str:
    """``the shipped model (fitted on 968 cells of 55 operators), not refitted, on 118 cells of 12 operators``."""
    return (
        f"{model.label} (fitted on {scoring.params.fitted_on}; predicted intervals {model.width_text()}), "
        f"not refitted, on {plural(cells, 'cell')} of {plural(operators, 'operator')} "
        f"(gate {gate_band(scoring.threshold)}; each cell predicted as ktriage explain predicts it)"
    )


def _row(r: CellResult, *, short: bool) -> list[str]:
    c = r.cell
    text = _short if short else str
    return [
        text(c.operator),
        text(c.kernel),
        text(c.input),
        f"{c.toolchain} vs {c.reference}",
        f"{c.measured.ratio:.3f}x {c.measured.verdict}",
        f"{r.predicted_ratio:.3f}x [{r.low:.3f}, {r.high:.3f}] {r.kind}",
        disagreement(r) or ("agree" if c.measured.verdict != "unsure" else "-"),
    ]


# the toolchain column names the reference second ("triton==3.4.0 vs triton==3.6.0": 3.4.0 timed against 3.6.0),
# the last one whether the model and the GPU agree (or how they disagree)
COLUMNS = ("operator", "kernel", "input", "toolchain vs reference", "measured", "predicted [interval]", "model vs GPU")


def to_text(scoring: Scoring, model: ModelUsed, cells: int, operators: int) -> str:
    """What the command prints: the header, the matrix, recall by size, the largest disagreements."""
    misses = scoring.misses()
    lines = [
        header(scoring, model, cells, operators),
        scoring.summary(),
        "",
        scoring.scores.markdown(),
        "",
        "recall by the size of the measured change:",
        "",
        scoring.by_size().markdown(),
        "",
    ]
    if misses:
        shown = misses[:MISSES_SHOWN]
        lines.append(
            f"where the model and the GPU disagree ({len(misses)}, the farthest first"
            + (
                f"; the first {len(shown)} here, every one in the JSON and markdown reports"
                if len(shown) < len(misses)
                else ""
            )
            + "):"
        )
        for r in shown:
            op, kernel, inp, tc, measured, predicted, miss = _row(r, short=True)
            lines.append(f"  {miss}: {op} {kernel} [{inp}] {tc}: measured {measured}, predicted {predicted}")
    else:
        lines.append("the model and the GPU agree on every cell with a verdict")
    return "\n".join(lines) + "\n"


def _table(rows: Sequence[CellResult]) -> list[str]:
    out = ["| " + " | ".join(COLUMNS) + " |", "|" + "---|" * len(COLUMNS)]
    for r in rows:
        out.append("| " + " | ".join(md_text(v) for v in _row(r, short=False)) + " |")
    return out


@markdown_writer
def to_markdown(scoring: Scoring, model: ModelUsed, cells: int, operators: int) -> str:
    misses = scoring.misses()
    out = [
        "# The cost model against GPU measurements",
        "",
        md_text(header(scoring, model, cells, operators)) + ".",
        "",
        md_text(scoring.summary()) + ".",
        "",
        scoring.scores.markdown(),
        "",
        "Recall by the size of the measured change:",
        "",
        scoring.by_size().markdown(),
        "",
        f"## Where the model and the GPU disagree ({len(misses)})",
        "",
    ]
    out += _table(misses) if misses else ["None: they agree on every cell with a verdict."]
    out += ["", f"## Every cell ({len(scoring.results)})", "", *_table(scoring.results)]
    return "\n".join(out) + "\n"


def to_json(scoring: Scoring, model: ModelUsed) -> str:
    return (
        json.dumps({"tool": "ktriage calibrate --score-only", "model": model.to_json(), **scoring.to_json()}, indent=1)
        + "\n"
    )
