"""Change points in a plain series (a cell's median latency, run after run), found by Apache Otava.

The detection is Otava's, not ours: :func:`otava.analysis.compute_change_points` is the algorithm of
"Hunter: Using Change Point Detection to Hunt for Performance Regressions" (Fleming et al., ICPE
2023), which MongoDB and DataStax run on their nightly benchmarks:

1. **split**: E-divisive (Matteson and James) over sliding windows proposes candidate points, each
   the split that maximizes the energy-distance statistic (q-hat) of its window, kept while a
   two-sided Student's t-test between the two sides is significant at a relaxed level;
2. **merge**: the weakest candidates are removed one by one, recomputing their neighbours, until
   every remaining point is significant at ``max_pvalue`` (and larger than ``min_magnitude``).

Both steps are deterministic (the t-test replaces the original permutation test), so a stored
series always gives the same answer. This module only converts the result into plain numbers.

Why Otava is installed without its dependencies (pyproject ``[tool.ktriage]``): its metadata pins
``numpy==2.2.0`` and ``scipy<1.17`` and pulls in the clients of its own CLI (BigQuery, Slack,
PostgreSQL). The analysis core imported here needs numpy and scipy only and runs on ktriage's.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ktriage.errors import KtriageError

# Otava's defaults (otava.series.AnalysisOptions): a change must be significant at 0.1%.
DEFAULT_MAX_PVALUE = 0.001
DEFAULT_WINDOW = 50
DEFAULT_MIN_SEGMENT = 2
MIN_POINTS = 4  # fewer: no split can have two points on each side

OTAVA_REQUIREMENT = "apache-otava==0.8.0"


@dataclass(frozen=True)
class ChangePoint:
    """A shift of the series' level between ``values[index - 1]`` and ``values[index]``.

    ``mean_before``/``mean_after`` are the means of the segments between the neighbouring change
    points (or the ends); ``step_pct`` is ``mean_after / mean_before - 1`` in percent (positive:
    the values went up; for a latency, slower); ``pvalue`` is the t-test's between the two segments."""

    index: int
    pvalue: float
    mean_before: float
    mean_after: float
    std_before: float
    std_after: float
    step_pct: float


def _otava() -> Any:
    try:
        from otava import analysis
    except ImportError as exc:  # pragma: no cover - exercised only without the dependency
        raise KtriageError(
            f"change-point detection needs Apache Otava, which is not installed ({exc})",
            f"pip install --no-deps '{OTAVA_REQUIREMENT}' (scripts/setup.sh does; docs/history.md says why --no-deps)",
        ) from exc
    return analysis


def detect_change_points(
    values: Sequence[float],
    *,
    max_pvalue: float = DEFAULT_MAX_PVALUE,
    min_magnitude: float = 0.0,
    window_len: int = DEFAULT_WINDOW,
    min_segment: int = DEFAULT_MIN_SEGMENT,
) -> list[ChangePoint]:
    """The change points of ``values`` (oldest first), in order. ``min_magnitude`` is the smallest
    relative step kept (0.05 = 5%); ``min_segment`` the fewest points a level must hold on each side
    of a change (see :func:`_settle`); a series shorter than :data:`MIN_POINTS` has none."""
    if min_segment < 1:
        raise KtriageError(f"minimum segment {min_segment} is below 1", "use 2 (the default) or more")
    if not 0 < max_pvalue < 1:
        raise KtriageError(f"max p-value {max_pvalue} is not in (0, 1)", "use e.g. 0.001")
    if window_len < 2:
        raise KtriageError(f"window length {window_len} is below 2", "use e.g. 50 (Otava's default)")
    series = [float(v) for v in values]
    if any(not math.isfinite(v) for v in series):
        raise KtriageError("the series has a non-finite value", "leave out the points that have no measurement")
    if len(series) < MIN_POINTS:
        return []
    analysis = _otava()
    points, _weak = analysis.compute_change_points(
        series, window_len=window_len, max_pvalue=max_pvalue, min_magnitude=min_magnitude
    )
    points = _settle(analysis, list(points), series, max_pvalue, min_magnitude, min_segment)
    out: list[ChangePoint] = []
    for cp in sorted(points, key=lambda p: int(p.index)):
        st = cp.stats
        before, after = float(st.mean_1), float(st.mean_2)
        out.append(
            ChangePoint(
                index=int(cp.index),
                pvalue=float(st.pvalue),
                mean_before=before,
                mean_after=after,
                std_before=float(st.std_1),
                std_after=float(st.std_2),
                step_pct=(after / before - 1.0) * 100.0 if before else math.inf,
            )
        )
    return out


def _segments(points: Sequence[Any], n: int) -> list[tuple[int, int]]:
    """(points before, points after) of each change point, up to its neighbours or the ends."""
    idx = [int(p.index) for p in points]
    bounds = [0, *idx, n]
    return [(bounds[k + 1] - bounds[k], bounds[k + 2] - bounds[k + 1]) for k in range(len(idx))]


def _settle(
    analysis: Any, points: list[Any], series: list[float], max_pvalue: float, min_magnitude: float, min_segment: int
) -> list[Any]:
    """Otava's change points with every t-test taken on the whole series, each level at least
    ``min_segment`` points long, and Otava's merge step rerun until it removes nothing.

    Why the recomputation: Otava 0.8.0 can return a point with the t-test of the window it was found
    in (seen: one point on the right side, std 0, p=1e-4, where the whole series gives p=0.006).
    Why the minimum segment: a t-test against a one-point level has no spread on that side, so one
    outlying run (a throttled GPU, a noisy neighbour) at either end, or two points around a spike
    inside, come out "significant"; a level seen once cannot be told from an outlier. With the
    default of 2, a step is reported from its second run on. Both use Otava's own tester
    (``TTestSignificanceTester.change_point`` over ``get_intervals``) and merge (``analysis.merge``)."""
    tester = analysis.TTestSignificanceTester(max_pvalue)
    n = len(series)

    def retest(pts: list[Any]) -> list[Any]:
        pts = sorted(pts, key=lambda p: int(p.index))
        intervals = tester.get_intervals(pts)
        return [tester.change_point(p.to_candidate(), series, intervals) for p in pts]

    points = retest(points)
    while points:
        segs = _segments(points, n)
        short = [k for k, (a, b) in enumerate(segs) if min(a, b) < min_segment]
        if short:
            drop = min(short, key=lambda k: (min(segs[k]), -float(points[k].stats.pvalue)))
            points = retest(points[:drop] + points[drop + 1 :])
            continue
        merged = list(analysis.merge(list(points), series, max_pvalue, min_magnitude))
        if len(merged) == len(points):
            return points
        points = retest(merged)
    return points
