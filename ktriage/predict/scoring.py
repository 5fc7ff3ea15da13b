"""``score(cells, params) -> Scoring``: a cost model as it is, not refitted, against GPU-measured cells:
each cell's prediction as ``ktriage explain`` makes it, next to what the GPU measured.

Why: ``ktriage calibrate`` answers "what would a model fitted on my runs predict?" by refitting and holding
out operators. A team that benches its own kernels first asks a plainer question: does the model I run
(the shipped fit, or ``--model FILE``) agree with my GPU? That is this module: no fit, no cross-validation,
the same ``predict`` explain calls (its interval, its gate), and per cell the predicted ratio next to the
measured one. If the model was fitted on these very cells the scores are in sample, and the report says what
the model was fitted on so the reader can tell.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from ktriage.brief import brief
from ktriage.predict.calibration import CellResult, RecallBySize, Scores, usable
from ktriage.predict.dataset import CalibrationCell
from ktriage.predict.model import DEFAULT_THRESHOLD, Params, predict
from ktriage.schema.jsontypes import JSONObject
from ktriage.wording import plural

#: what a measured verdict and a predicted kind say together (unsure measurements say nothing)
AGREES = {("regression", "regression"), ("neutral", "same"), ("improvement", "improvement")}


def disagreement(result: CellResult) -> str | None:
    """How a cell's prediction misses its GPU verdict: ``"missed regression"`` (measured slower beyond the
    gate, predicted neutral), ``"false regression"`` (predicted slower, measured otherwise), the same for
    improvements; None where they agree or the GPU could not tell (``unsure``)."""
    measured, predicted = result.cell.measured.verdict, result.kind
    if measured not in ("regression", "same", "improvement") or (predicted, measured) in AGREES:
        return None
    if predicted == "neutral":
        return f"missed {measured}"
    return f"false {predicted}"


def log_error(result: CellResult) -> float:
    """``|log measured - log predicted|``: how far the point is from the GPU, whatever the verdicts."""
    return abs(math.log(result.cell.measured.ratio) - math.log(result.predicted_ratio))


@dataclass(frozen=True)
class Scoring:
    """One model's predictions on measured cells (``results``, in the cells' order), their confusion matrix
    at ``threshold``, and what the model was fitted on (``fitted_on``: the model file's own words)."""

    __repr__ = brief  # short, for notebooks and the REPL (ktriage.brief)

    params: Params
    results: list[CellResult]
    scores: Scores
    threshold: float

    def by_size(self) -> RecallBySize:
        return RecallBySize.of(self.results, self.threshold)

    def misses(self) -> list[CellResult]:
        """The cells whose prediction and GPU verdict disagree, the farthest point first."""
        return sorted((r for r in self.results if disagreement(r)), key=log_error, reverse=True)

    def agreed(self) -> tuple[int, int]:
        """(cells whose prediction agrees with a GPU verdict, cells with a GPU verdict)."""
        decided = [r for r in self.results if r.cell.measured.verdict in ("regression", "same", "improvement")]
        return sum(1 for r in decided if disagreement(r) is None), len(decided)

    def summary(self) -> str:
        """``agrees with the GPU on 712 of 758 cells with a verdict (94 %); 210 measured unsure``."""
        agreed, decided = self.agreed()
        unsure = len(self.results) - decided
        share = f" ({agreed / decided:.0%})" if decided else ""
        return f"agrees with the GPU on {agreed} of {plural(decided, 'cell')} with a verdict{share}" + (
            f"; {unsure} measured unsure" if unsure else ""
        )

    def to_json(self) -> JSONObject:
        def cell(r: CellResult) -> JSONObject:
            measured = r.cell.measured.to_json()
            return {
                **r.to_json(),
                "measured_ci": [measured["ci_low"], measured["ci_high"]],
                "disagreement": disagreement(r),
            }

        agreed, decided = self.agreed()
        return {
            "threshold": self.threshold,
            "fitted_on": self.params.fitted_on,
            "agreed": agreed,
            "with_verdict": decided,
            "scores": self.scores.to_json(),
            "cells": [cell(r) for r in self.results],
        }


def score(cells: Sequence[CalibrationCell], params: Params, *, threshold: float = DEFAULT_THRESHOLD) -> Scoring:
    """Each usable cell (a finite measured ratio above 0) predicted by ``params`` as explain predicts it."""
    results = []
    for c in usable(cells):
        p = predict(c.ref, c.new, params, threshold=threshold, contributors=False)
        results.append(CellResult(c, p.ratio, p.low, p.high, p.kind))
    scores = Scores.of([r.kind for r in results], [r.cell.measured.verdict for r in results])
    return Scoring(params, results, scores, threshold)
