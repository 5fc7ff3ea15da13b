"""The note of a bisect whose "first bad" candidate made the kernel faster.

"First bad" means the first candidate whose value is on the bad endpoint's side; it says nothing about
which way the kernel went. Bisecting a user's kernel across Triton 3.2.0..3.6.0 by ``stack_bytes`` found
3.4.0 (stack 3080 -> 2744 B, spills down by 490 LDL/STL), which the cost model predicts -16 % (faster),
and the report read like a regression's. Where the culprit's change is predicted faster, or (without a
prediction against it) the bisected metric moved the way that is usually faster, the report says so.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from ktriage.bisect.search import StageResult

if TYPE_CHECKING:
    from ktriage.predict.model import Prediction

LOWER_IS_FASTER = frozenset(
    {
        "spill_store_bytes",
        "spill_load_bytes",
        "stack_bytes",
        "local_loads",
        "local_stores",
        "sass_instructions",
        "latency",
    }
)
"""Metrics whose fall usually makes a kernel faster. ``registers`` and ``shared_bytes`` are not here:
fewer of either can cost spills or reloads, so their direction alone says nothing; nor is a SASS opcode's
count (``sass:ATOMG``): which way is faster depends on the opcode."""

HIGHER_IS_FASTER = frozenset({"ctas_per_sm", "warps_per_sm"})
"""Metrics whose rise usually makes a kernel faster (occupancy)."""


def _values(stage: StageResult, index: int, metric: str) -> dict[str, float]:
    """A tested candidate's values of the bisected metric per kernel (a time bisect: its median)."""
    obs = stage.observation(index)
    if obs is None:
        return {}
    m = obs.measurements
    if metric == "latency":
        median = m.get("median_ms")
        return {"median ms": float(median)} if isinstance(median, (int, float)) else {}
    values = m.get("values")
    if not isinstance(values, Mapping):
        return {}
    return {str(k): float(v) for k, v in values.items() if isinstance(v, (int, float))}


def _num(v: float) -> str:
    return str(int(v)) if float(v).is_integer() else f"{v:.4g}"


def improvement_note(stage: StageResult, metric: str | None, predictions: Sequence[Prediction]) -> str | None:
    """The note where the culprit's change makes the kernel faster: every prediction of its kernels is an
    improvement, or none is a regression and the metric moved the usually-faster way at every kernel
    where it moved. None otherwise, for a stage without a culprit, and where the culprit's value lies
    outside the endpoints' range (its own note, ``report.bisect.outside_note``, says what that step is)."""
    if stage.status != "culprit" or metric is None or stage.hi in stage.outside_endpoints():
        return None
    assert stage.culprit is not None
    before, after = _values(stage, stage.lo, metric), _values(stage, stage.hi, metric)
    moved = {k: (before[k], after[k]) for k in before if k in after and before[k] != after[k]}
    called = [p for p in predictions if not p.identical and p.kind != "neutral"]
    faster_called = bool(called) and all(p.kind == "improvement" for p in called)
    if any(p.kind == "regression" for p in called):
        return None
    lower, higher = metric in LOWER_IS_FASTER, metric in HIGHER_IS_FASTER
    usually_faster = bool(moved) and (lower or higher) and all((b < a) == lower for a, b in moved.values())
    if not (faster_called or usually_faster):
        return None
    shown = ", ".join(f"{k} {_num(a)} -> {_num(b)}" for k, (a, b) in list(moved.items())[:3])
    more = f" (+{len(moved) - 3} kernels)" if len(moved) > 3 else ""
    what = f"{stage.culprit.label} changes {metric}" + (f" ({shown}{more})" if shown else "")
    if faster_called:
        percents = list(dict.fromkeys(p.percent() for p in sorted(called, key=lambda p: p.ratio)))
        why = f"predicted {', '.join(percents[:3])} (faster)"
    else:
        why = f"{'lower' if lower else 'higher'} {metric} is usually faster"
    return (
        f'{what} — {why}: this is the first change, not a slowdown ("first bad" is the first candidate on the '
        "bad endpoint's side, whichever way the kernel went); if a slowdown is what you are after, it is not "
        "here: bisect by timing (--metric latency --bundle ...)"
    )
