"""Fit the cost model's free parameters on GPU-measured cells, and cross-validate by operator.

Why by operator: cells of one operator share a kernel and usually one cause (30 layer_norm inputs
with the same spill change), so holding out single cells would let the fit memorise the cause and
score itself on copies of its training data. Every number this module reports comes from fits
that never saw the operator they predict (leave-one-operator-out, LOOO):

1. ``fit``: robust least squares of ``log measured ratio - log predicted ratio`` (Huber), each
   operator weighted ``1/sqrt(cells)`` so that a 96-cell sweep does not outvote a 4-cell one, with a
   Gaussian prior in log space around the physical defaults of ``Params`` (a held-out operator whose
   mechanism no other operator shows still meets GPU facts, not an arbitrary value);
2. ``cross_validate``: per operator, a fit on the others predicts it; the interval's width
   come from the other operators' out-of-fold residuals (quantile ``level``), so the interval is
   held out too. Operators that launch a kernel of the same name are held out together
   (``held_out_groups``): a program is often recorded under several names (an operator's fwd and
   bwd modes, a second recording, the catalog's copy of a recorded kernel), and holding out one
   name while its copy stays in the fit would score the model on the kernel it was fitted on;
3. the confusion matrix of the predicted kind (regression/neutral/improvement at the gate) against
   the GPU verdict (regression/same/improvement; ``unsure`` cells are counted apart), with precision
   and recall of "regression" and "improvement".
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from scipy.optimize import minimize

from ktriage.mdsafe import markdown_writer
from ktriage.predict.dataset import CalibrationCell
from ktriage.predict.model import (
    DEFAULT_THRESHOLD,
    Batch,
    Params,
    anchored,
    beyond_gate,
    classify,
    estimate_many,
    in_blind_spot,
    profile,
    stack,
)
from ktriage.schema.jsontypes import JSONObject
from ktriage.wording import plural

DEFAULT_LEVEL = 0.8  # coverage asked of the interval
PRIOR_SIGMA = 1.0  # log-space width of the prior around the physical defaults
HUBER = 0.1
MEASURED_KINDS = ("regression", "same", "improvement")
PREDICTED_KINDS = ("regression", "neutral", "improvement")


@dataclass
class _Data:
    cells: list[CalibrationCell]
    identical: np.ndarray
    log_measured: np.ndarray
    weight: np.ndarray
    ref: Batch
    new: Batch

    def subset(self, mask: np.ndarray) -> _Data:
        idx = np.flatnonzero(mask)
        return _Data(
            [self.cells[i] for i in idx],
            self.identical[idx],
            self.log_measured[idx],
            self.weight[idx],
            _take(self.ref, idx),
            _take(self.new, idx),
        )


def _take(batch: Batch, idx: np.ndarray) -> Batch:
    return batch.take(idx)


def usable(cells: Sequence[CalibrationCell]) -> list[CalibrationCell]:
    """Cells the fit can use: a finite positive measured ratio."""
    return [c for c in cells if math.isfinite(c.measured.ratio) and c.measured.ratio > 0]


def _data(cells: Sequence[CalibrationCell]) -> _Data:
    cells = usable(cells)
    per_op: dict[str, int] = defaultdict(int)
    for c in cells:
        per_op[c.operator] += 1
    weight = np.array(
        [1.0 / math.sqrt(per_op[c.operator]) * (0.5 if c.measured.verdict == "unsure" else 1.0) for c in cells]
    )
    return _Data(
        cells,
        np.array([c.ref.digest() == c.new.digest() for c in cells]),
        np.log(np.array([c.measured.ratio for c in cells])),
        weight,
        *_stacked_pairs(cells),
    )


def _stacked_pairs(cells: Sequence[CalibrationCell]) -> tuple[Batch, Batch]:
    pairs = [anchored(profile(c.ref), profile(c.new)) for c in cells]
    return stack([r for r, _ in pairs]), stack([n for _, n in pairs])


def predicted_log_ratio(data: _Data, params: Params) -> np.ndarray:
    if not data.cells:
        return np.zeros(0)
    t_ref, t_new = estimate_many(data.ref, params), estimate_many(data.new, params)
    with np.errstate(divide="ignore", invalid="ignore"):
        out = np.log(t_new / t_ref)
    out = np.where(np.isfinite(out), out, 0.0)
    result: np.ndarray = np.where(data.identical, 0.0, out)
    return result


def _fit(data: _Data, start: Params, prior: Params) -> Params:
    names = Params.FREE
    x0 = np.log([getattr(start, k) for k in names])
    mu = np.log([getattr(prior, k) for k in names])

    def loss(x: np.ndarray) -> float:
        params = start.with_free(dict(zip(names, np.exp(x))))
        r = data.log_measured - predicted_log_ratio(data, params)
        a = np.abs(r)
        huber = np.where(a <= HUBER, 0.5 * r * r, HUBER * (a - 0.5 * HUBER))
        return float((data.weight * huber).sum() + 0.5 * (((x - mu) / PRIOR_SIGMA) ** 2).sum() * 1e-3)

    bounds = [(m - 3 * PRIOR_SIGMA, m + 3 * PRIOR_SIGMA) for m in mu]
    res = minimize(loss, x0, method="L-BFGS-B", bounds=bounds, options={"maxiter": 200})
    return start.with_free(dict(zip(names, np.exp(res.x))))


def held_out_groups(cells: Sequence[CalibrationCell]) -> dict[str, str]:
    """Each operator's cross-validation group: operators linked, directly or through others, by a
    kernel of the same function name (TritonBench's ``jsd`` fwd and bwd both measure
    ``triton_red_fused_exp_lerp_log_mul_sub_sum_0``; Liger's ``embedding_backward_kernel`` is in the
    catalog and in three recordings). A name is the strict link: two different kernels that happen to
    share one (``matmul_kernel``) are held out together too, which can only make the scores harder, never
    let a copy of the held-out kernel into its fit. A group is named by its first operator, sorted."""
    parent: dict[str, str] = {}

    def root(op: str) -> str:
        while parent.setdefault(op, op) != op:
            op = parent[op]
        return op

    by_kernel: dict[str, str] = {}
    for c in cells:
        first = by_kernel.setdefault(c.kernel, c.operator)
        a, b = sorted((root(first), root(c.operator)))
        parent[b] = a
    return {op: root(op) for op in sorted({c.operator for c in cells})}


def weighted_quantile(values: np.ndarray, weights: np.ndarray, level: float) -> float:
    """The smallest value whose cumulative weight reaches ``level`` (the interval's quantile of residuals)."""
    order = np.argsort(values)
    v, w = values[order], weights[order]
    cum = np.cumsum(w) / w.sum()
    return float(v[min(int(np.searchsorted(cum, level)), len(v) - 1)])


def interval_from_residuals(
    log_pred: np.ndarray, residual: np.ndarray, level: float = DEFAULT_LEVEL, weight: np.ndarray | None = None
) -> tuple[float, float]:
    """(a, b) of the interval ``exp(+-(a + b |log ratio|))``: ``a`` the ``level`` quantile of the
    absolute out-of-fold residuals, each operator's cells together weighing as much as another's
    (a 96-cell sweep, or one operator the model gets badly wrong, does not set the width alone);
    ``b`` 0. (A width growing with the predicted effect was tried: one operator whose effect is
    mis-sized by 2x makes it wider than the effect, and then nothing is ever beyond the gate.)"""
    if not len(residual):
        return 0.02, 0.0
    w = np.ones_like(residual) if weight is None else weight
    return round(weighted_quantile(np.abs(residual), w, level), 4), 0.0


@dataclass
class Scores:
    """The confusion matrix (predicted kind -> measured verdict -> cells) and what follows from it."""

    matrix: dict[str, dict[str, int]]
    unsure: dict[str, int]

    @classmethod
    def of(cls, predicted: Sequence[str], measured: Sequence[str]) -> Scores:
        matrix = {p: dict.fromkeys(MEASURED_KINDS, 0) for p in PREDICTED_KINDS}
        unsure = dict.fromkeys(PREDICTED_KINDS, 0)
        for p, m in zip(predicted, measured):
            if m in MEASURED_KINDS:
                matrix[p][m] += 1
            else:
                unsure[p] += 1
        return cls(matrix, unsure)

    def precision(self, kind: str) -> float | None:
        pred = "regression" if kind == "regression" else "improvement"
        n = sum(self.matrix[pred].values())
        return None if n == 0 else self.matrix[pred][kind] / n

    def recall(self, kind: str) -> float | None:
        pred = "regression" if kind == "regression" else "improvement"
        n = sum(self.matrix[p][kind] for p in PREDICTED_KINDS)
        return None if n == 0 else self.matrix[pred][kind] / n

    def to_json(self) -> JSONObject:
        def r(v: float | None) -> float | None:
            return None if v is None else round(v, 4)

        return {
            "matrix": self.matrix,
            "unsure_measured": self.unsure,
            "regression": {"precision": r(self.precision("regression")), "recall": r(self.recall("regression"))},
            "improvement": {"precision": r(self.precision("improvement")), "recall": r(self.recall("improvement"))},
        }

    @markdown_writer
    def markdown(self) -> str:
        def pct(v: float | None) -> str:
            return "n/a" if v is None else f"{v:.0%}"

        out = ["| predicted \\ measured | regression | same | improvement | (unsure) |", "|---|---|---|---|---|"]
        for p in PREDICTED_KINDS:
            row = self.matrix[p]
            out.append(f"| {p} | {row['regression']} | {row['same']} | {row['improvement']} | {self.unsure[p]} |")
        out += [
            "",
            f"- regression: precision {pct(self.precision('regression'))}, recall {pct(self.recall('regression'))}",
            f"- improvement: precision {pct(self.precision('improvement'))}, recall {pct(self.recall('improvement'))}",
        ]
        return "\n".join(out)


#: upper edges of the size bands of ``RecallBySize`` (a measured change of x1.08 is 8 %): the gate's first
#: few percent, where the interval alone decides, then medium changes, then large ones
SIZE_BANDS = (1.08, 1.15)


@dataclass(frozen=True)
class RecallBySize:
    """Recall of each kind by how large the measured change is (``max(ratio, 1/ratio)``): how often a
    change of that size is called. Why: a kind's recall over the corpus depends on how its sizes are
    spread. On the committed corpus regressions are mostly large spill cliffs and improvements mostly
    small, so "regression recall 83 %, improvement 50 %" reads as a model that sees one direction
    better, where per band it calls both alike (0 of the 5..8 % changes, half the 8..15 %, ~95 % above)."""

    threshold: float
    bands: tuple[float, ...]
    # kind -> one (called, measured) pair per band, the last band open-ended
    counts: dict[str, list[tuple[int, int]]]

    @classmethod
    def of(
        cls, results: Sequence[CellResult], threshold: float = DEFAULT_THRESHOLD, bands: tuple[float, ...] = SIZE_BANDS
    ) -> RecallBySize:
        edges = [e for e in bands if e > 1.0 + threshold]
        counts: dict[str, list[tuple[int, int]]] = {}
        for kind in ("regression", "improvement"):
            per = [[0, 0] for _ in range(len(edges) + 1)]
            for r in results:
                if r.cell.measured.verdict != kind:
                    continue
                m = r.cell.measured.ratio
                size = max(m, 1.0 / m)
                band = next((i for i, e in enumerate(edges) if size < e), len(edges))
                per[band][1] += 1
                per[band][0] += r.kind == kind
            counts[kind] = [(called, measured) for called, measured in per]
        return cls(threshold, tuple(edges), counts)

    def labels(self) -> list[str]:
        lows = [self.threshold, *(e - 1.0 for e in self.bands)]
        highs = [e - 1.0 for e in self.bands]
        return [f"{lo:.0%}..{hi:.0%}" for lo, hi in zip(lows, highs)] + [f"{lows[-1]:.0%} and more"]

    @markdown_writer
    def markdown(self) -> str:
        def cell(a: int, b: int) -> str:
            return f"{a} of {b} ({a / b:.0%})" if b else "-"

        out = [
            "| measured change | " + " | ".join(self.labels()) + " |",
            "|---" * (len(self.bands) + 2) + "|",
        ]
        for kind, pairs in self.counts.items():
            out.append(f"| {kind} | " + " | ".join(cell(a, b) for a, b in pairs) + " |")
        return "\n".join(out)


@dataclass(frozen=True)
class WidthCeiling:
    """What the interval's width alone costs recall. A change is called only where the whole interval is
    beyond the gate, so even an oracle, whose point is each cell's measured ratio, misses every cell nearer
    the gate than the half-width. Why: it splits a model's misses into those its points cause and those its
    width causes whatever the points. On the committed corpus the oracle at the model's 3.25 % calls 22 of
    the 32 improvements, so 10 of the model's 16 misses are the width's, and 80 % needs a half-width under
    1.56 %, where two GPU runs differ by 1.1 % (benchmarks/calibration/replicate/ceiling.md)."""

    width_a: float  # the interval's log half-width: a + b * |log ratio|, as ``Params`` has it
    width_b: float
    threshold: float
    share: float  # the recall asked for the ``widest`` column
    # kind -> (measured cells the oracle calls at this width, measured cells of that kind)
    called: dict[str, tuple[int, int]]
    # kind -> the largest a (b as given) at which the oracle still calls ``share`` of them; None: no cells
    widest: dict[str, float | None]

    @classmethod
    def of(
        cls,
        cells: Sequence[CalibrationCell],
        width_a: float,
        width_b: float = 0.0,
        threshold: float = DEFAULT_THRESHOLD,
        share: float = 0.8,
    ) -> WidthCeiling:
        gate = math.log1p(threshold)
        called: dict[str, tuple[int, int]] = {}
        widest: dict[str, float | None] = {}
        for kind in ("regression", "improvement"):
            logs = [math.log(c.measured.ratio) for c in cells if c.measured.verdict == kind]
            # how far beyond the gate each measured change lies, less its own b * |log ratio| share of the width
            room = sorted(((x if kind == "regression" else -x) - gate - width_b * abs(x) for x in logs), reverse=True)
            called[kind] = (sum(1 for m in room if m > width_a), len(room))
            widest[kind] = room[math.ceil(share * len(room)) - 1] if room else None
        return cls(width_a, width_b, threshold, share, called, widest)

    def text(self) -> str:
        """One line per kind: what the oracle calls at this width, and the width the asked recall needs."""
        out = []
        for kind, (n, total) in self.called.items():
            if not total:
                continue
            need = self.widest[kind]
            need_text = f"under {need:.2%}" if need is not None and need > 0 else "no width at all"
            out.append(
                f"{kind}: at this interval (half-width {self.width_a:.2%}) a predictor knowing each cell's measured "
                f"ratio would call {n} of {total} ({n / total:.0%}); {self.share:.0%} needs a half-width {need_text}"
            )
        return "\n".join(out)


@dataclass
class CellResult:
    cell: CalibrationCell
    predicted_ratio: float
    low: float
    high: float
    kind: str

    def to_json(self) -> JSONObject:
        c = self.cell
        return {
            "operator": c.operator,
            "kernel": c.kernel,
            "input": c.input,
            "reference": c.reference,
            "toolchain": c.toolchain,
            "measured_ratio": round(c.measured.ratio, 4),
            "measured": c.measured.verdict,
            "predicted_ratio": round(self.predicted_ratio, 4),
            "low": round(self.low, 4),
            "high": round(self.high, 4),
            "predicted": self.kind,
        }


@dataclass
class Calibration:
    """A fit and its leave-one-operator-out evaluation."""

    params: Params
    cv_cells: list[CellResult] = field(default_factory=list)
    scores: Scores | None = None
    per_operator: dict[str, dict[str, Any]] = field(default_factory=dict)
    # False: the cells were predicted by the fit that saw them (``cross_validate=False``, or a single
    # operator, which leaves none to hold out): their scores say how well the model fits, not how well
    # it predicts, and are never reported as a cross-validation
    held_out: bool = True

    def to_json(self) -> JSONObject:
        return {
            "format": 1,
            "params": self.params.to_json(),
            "cross_validation": self.scores.to_json() if self.scores and self.held_out else None,
            "in_sample": self.scores.to_json() if self.scores and not self.held_out else None,
            "per_operator": self.per_operator,
        }


def _blind_spot_counts(results: Sequence[CellResult]) -> dict[str, dict[str, int]]:
    """Among the held-out predictions called neutral (identical kernels left out), those whose pair's
    shared-memory accesses changed unread (``model.in_blind_spot``) and the others: how many, and how
    many measured a regression / an improvement. What explain quotes next to such a prediction: the
    model's known blind spot, with its rate against the rest's."""
    out = {k: {"neutral": 0, "measured_regression": 0, "measured_improvement": 0} for k in ("shared_memory", "other")}
    for r in results:
        if r.kind != "neutral" or r.cell.ref.digest() == r.cell.new.digest():
            continue
        changed = in_blind_spot(*anchored(profile(r.cell.ref), profile(r.cell.new)))
        group = out["shared_memory" if changed else "other"]
        group["neutral"] += 1
        if r.cell.measured.verdict in ("regression", "improvement"):
            group[f"measured_{r.cell.measured.verdict}"] += 1
    return out


def _lean_counts(results: Sequence[CellResult], threshold: float) -> dict[str, dict[str, int]]:
    """Among the held-out predictions called neutral whose point lies beyond the gate (``Prediction.lean``),
    per side: how many, and how many measured that side or the same. What explain quotes next to such a
    lean, so that a user weighs it by how often it held."""
    out = {k: {"neutral": 0, f"measured_{k}": 0, "measured_same": 0} for k in ("regression", "improvement")}
    for r in results:
        if r.kind != "neutral" or r.low == r.high:
            continue
        side = beyond_gate(r.predicted_ratio, threshold)
        if side is None:
            continue
        out[side]["neutral"] += 1
        verdict = r.cell.measured.verdict
        if verdict in (side, "same"):
            out[side][f"measured_{verdict}"] += 1
    return out


def calibrate(
    cells: Sequence[CalibrationCell],
    *,
    threshold: float = DEFAULT_THRESHOLD,
    level: float = DEFAULT_LEVEL,
    prior: Params | None = None,
    cross_validate: bool = True,
) -> Calibration:
    """The full fit (the parameters to ship) and, unless told not to, its LOOO evaluation."""
    prior = prior or Params()
    data = _data(cells)
    if not data.cells:
        return Calibration(prior)
    full = _fit(data, prior, prior)
    operators = sorted({c.operator for c in data.cells})
    ops = np.array([c.operator for c in data.cells])
    group_of = held_out_groups(data.cells)
    groups = np.array([group_of[c.operator] for c in data.cells])
    cv_log = predicted_log_ratio(data, full)
    held_out = cross_validate and len(set(group_of.values())) > 1
    if held_out:
        for group in sorted(set(group_of.values())):
            held = groups == group
            params = _fit(data.subset(~held), full, prior)
            cv_log[held] = predicted_log_ratio(data.subset(held), params)
    residual = data.log_measured - cv_log
    op_weight = np.array([1.0 / sum(1 for c in data.cells if c.operator == o) for o in ops])
    a, b = interval_from_residuals(
        cv_log[~data.identical], residual[~data.identical], level, op_weight[~data.identical]
    )
    results: list[CellResult] = []
    for i, c in enumerate(data.cells):
        if held_out:  # the interval held out too: from the other groups' operators
            others = (groups != group_of[c.operator]) & ~data.identical
            ai, bi = interval_from_residuals(cv_log[others], residual[others], level, op_weight[others])
        else:
            ai, bi = a, b
        ratio = float(math.exp(cv_log[i]))
        half = 0.0 if data.identical[i] else ai + bi * abs(cv_log[i])
        low, high = ratio * math.exp(-half), ratio * math.exp(half)
        results.append(CellResult(c, ratio, low, high, classify(low, high, threshold)))
    scores = Scores.of([r.kind for r in results], [r.cell.measured.verdict for r in results])
    blind_spots = _blind_spot_counts(results)
    per_op: dict[str, dict[str, Any]] = {}
    for op in operators:
        mine = [r for r in results if r.cell.operator == op]
        s = Scores.of([r.kind for r in mine], [r.cell.measured.verdict for r in mine])
        err = [abs(math.log(r.cell.measured.ratio) - math.log(r.predicted_ratio)) for r in mine]
        per_op[op] = {
            "cells": len(mine),
            "held_out_with": group_of[op],
            "median_abs_log_error": round(float(np.median(err)), 4),
            **s.to_json(),
        }
    fitted = Params.from_json(
        {
            **full.to_json(),
            "interval_a": a,
            "interval_b": b,
            "fitted_on": f"{plural(len(data.cells), 'cell')} of {plural(len(operators), 'operator')}",
            # what explain and triage quote as the model's held-out record: nothing, when nothing was held out
            "cv": (
                {
                    "level": level,
                    "threshold": threshold,
                    "groups": len(set(group_of.values())),
                    **scores.to_json(),
                    "blind_spots": blind_spots,
                    "leans": _lean_counts(results, threshold),
                }
                if held_out
                else {"held_out": False, "level": level, "threshold": threshold}
            ),
        }
    )
    return Calibration(fitted, results, scores, per_op, held_out)
