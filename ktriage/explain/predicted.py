"""What a finding is, by the cost model: regression, improvement or a change predicted neutral.

Why here and not in the sign rules: "registers up = bad" filed an int4 matmul whose main loop got
93 instructions shorter (GPU: -7..-11 %) under Regressions, and a REDG -> ATOMG+CCTL change
(GPU: +11..16 %) under "Other changes". The evidence (which metrics moved, and which way) stays
what ``findings.py`` collects; the verdict is the predicted ratio's interval against the gate
(``ktriage.predict.model``): a regression only where the whole interval lies above ``1+threshold``,
an improvement only where it lies below ``1/(1+threshold)``, else "change predicted neutral".

A bullet spans consecutive inputs of one predicted kind (``same_predicted_kind``: a run of inputs
with the same evidence splits where the prediction crosses the gate); its kind is theirs, its impact
the largest ``|log ratio|``.

Toolchains whose compiled results equal another's for every kernel (same resources, occupancy and
SASS) are reported once: ``identical_toolchains`` names them, and the findings skip them.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from ktriage.predict.model import Prediction, lean_text, pct
from ktriage.stats.gate import gate_band

if TYPE_CHECKING:
    from ktriage.explain.engine import ExplainResult
    from ktriage.predict.model_used import ModelUsed


def predicted_kind(predictions: Sequence[Prediction | None]) -> str | None:
    """ "regression", "improvement" or "change" (predicted neutral) for a bullet's inputs; None when
    some input has no prediction (then the caller falls back to the evidence)."""
    if not predictions or any(p is None for p in predictions):
        return None
    kinds = {p.kind for p in predictions if p is not None}
    if "regression" in kinds:
        return "regression"
    if "improvement" in kinds:
        return "improvement"
    return "change"


def same_predicted_kind(run: Sequence[Prediction | None], comparison: Any) -> bool:
    """Whether an input may join a run of inputs: a bullet covers inputs of one predicted kind, so
    that "N=2560..4608: regression" never files the neutral N=2560 under the cliff at 4608."""
    new = getattr(comparison, "prediction", None)
    last = run[-1] if run else None
    return (last.kind if last else None) == (new.kind if new else None)


def worst(predictions: Sequence[Prediction | None]) -> Prediction | None:
    """The prediction furthest from 1 (the bullet's headline number)."""
    have = [p for p in predictions if p is not None]
    return max(have, key=lambda p: p.impact) if have else None


def impact(predictions: Sequence[Prediction | None]) -> float:
    """Ranking score: the largest predicted |log ratio| (0 without predictions)."""
    w = worst(predictions)
    return 0.0 if w is None else min(w.impact, 50.0)


def gate_line(threshold: float, model: ModelUsed | None = None) -> str:
    """The gate the findings were sorted by, said under "Compiled for" in every report (the JSON's
    ``threshold``): with --threshold 0.1 a +8 % prediction is "predicted neutral", and a reader who
    cannot see the gate reads that as the model's word on its own. Worded as the bullets word it; with the
    ``model``, what its intervals cover (80 % of held-out measurements: "wholly beyond" is that sure)."""
    coverage = f" ({model.coverage_text()})" if model is not None else ""
    return (
        f"Gate: {gate_band(threshold)} (--threshold): a change is a regression or an improvement only where its "
        f"predicted interval lies wholly beyond it{coverage}"
    )


def prediction_text(predictions: Sequence[Prediction | None], inputs: Sequence[str] = ()) -> str:
    """The words a bullet ends with: "predicted +450% [+300%, +600%]: 698 more LDL in the main loop (local
    memory (spills)), +400% on its own", "change predicted neutral (+1% [-3%, +5%]; within the ±5% gate)", or,
    where the point is beyond the gate and the interval is not, "change predicted neutral (-8% [-11%, -4.6%];
    leans faster: the point is beyond the ±5% gate, the interval reaches inside it; 4 of 21
    such held-out leans measured faster in the calibration)". ``inputs``: the predictions' input labels; where
    the inputs' predictions differ, the bullet's (the largest) names its input: a sweep's bullet also names the
    input of its worst resource change, which need not be the same one."""
    w = worst(predictions)
    if w is None:
        return ""
    have = [p for p in predictions if p is not None]
    kind = predicted_kind(predictions)
    gate = f"{gate_band(w.threshold)} gate"
    if kind == "change":
        if all(p.identical for p in have):
            return "identical kernels: change predicted neutral"
        core = w.text(limit=1, blind_spot=False).removeprefix("predicted ")
        spot = next((p.blind_spot for p in have if p.blind_spot), None)
        where = (w.lean_note or lean_text(w.lean, w.threshold)) if w.lean else f"within the {gate}"
        return f"change predicted neutral ({core}; {where})" + (f"; blind spot: {spot}" if spot else "")
    beyond = sum(1 for p in have if p.kind == kind)
    share = f" ({beyond} of {len(have)} inputs beyond the {gate})" if len(have) > 1 and beyond < len(have) else ""
    at = ""
    if len(inputs) == len(predictions) and len({pct(p.ratio) for p in have}) > 1:
        at = f"at {inputs[list(predictions).index(w)]}, the largest of {len(have)} inputs"
    return w.text(at=at) + share


def identical_toolchains(result: ExplainResult) -> dict[str, str]:
    """toolchain id -> the id of an earlier toolchain whose results equal it on every kernel (the
    same resources, occupancy and SASS: the same compiled code as far as ktriage measures it).
    A toolchain that failed where the other compiled, or the other way round, is not identical.

    The per-line map is left out: it says where the code came from, not what it is, and its paths into
    Triton's own library (``tl.sum``'s ``standard.py``) lie in each release's environment, so two
    Triton releases that emit the same cubin (3.5.0 and 3.5.1 on Liger's layer_norm bwd) never matched."""
    from ktriage.explain.engine import KernelResult

    same: dict[str, str] = {}
    tcs = result.toolchains
    for j, t in enumerate(tcs):
        for u in tcs[:j]:
            if u.id in same or u.id == t.id:
                continue
            ok = bool(result.specs)
            for item in result.specs:
                a, b = item.results.get(u.id), item.results.get(t.id)
                if not (
                    isinstance(a, KernelResult)
                    and isinstance(b, KernelResult)
                    and replace(a.resources, source_lines=()) == replace(b.resources, source_lines=())
                    and a.occupancy == b.occupancy
                ):
                    ok = False
                    break
            if ok:
                same[t.id] = u.id
                break
    return same


def fail_on_hit(kinds: Sequence[str], fail_on: str | None) -> bool:
    """``--fail-on regression``: some bullet is a predicted regression; ``--fail-on any``: some
    bullet at all (any compile-side change, whatever its predicted effect)."""
    if fail_on is None:
        return False
    if fail_on == "regression":
        return "regression" in kinds
    return bool(kinds)


def ratio_range(predictions: Sequence[Prediction | None]) -> tuple[float, float] | None:
    have = [p.ratio for p in predictions if p is not None and math.isfinite(p.ratio)]
    return (min(have), max(have)) if have else None
