"""Cliffs along an input sweep: where a backend's ratio to the baseline (or new/ref) jumps.

A cliff is a change of *level* between two neighbouring inputs, e.g. Liger's layer_norm backward
going from 1.0x to 1.8x of torch between N=4096 and N=4608 when a block size crosses a register
limit. Thresholding single points would report every noisy input and miss a level shift hidden
in noise, so the series is segmented instead, as asv's step detection (penalised piecewise-
constant L1 fit) and Otava/Hunter (split, then merge weak change points) do:

1. *Split*: optimal partitioning of the log values into constant levels, minimising the sum of
   absolute deviations from each segment's median plus a penalty per segment (the exact dynamic
   programme, with functional pruning: O(n) numpy work per input, see ``segment``). L1 + medians: one wild point costs the same inside a
   long segment as in a segment of its own, so it never buys a split; segments have >= 2 points.
2. *Merge*: a boundary survives only if (a) the levels of its two segments differ by at least the
   jump gate (default x1.10), (b) the jump happens *at* the boundary: the medians of the <= 3
   points on either side differ by the gate too, after removing the local trend (the median
   step inside the two segments), and by at least half the level change (a ramp spreads its
   rise over many inputs and fails this), and (c) both the level change and that
   local jump are >= 4 standard errors of the medians involved, given the series' noise. Failing boundaries are merged away,
   weakest first, and the levels recomputed, until every remaining one passes.

Noise is estimated from first differences (1.4826 MAD / sqrt 2), which ignores both the jumps and
slow trends. Limitation: a jump at the very last (or first) input has one point on its far side
and is indistinguishable from one noisy point; it is not reported.

A cliff is between neighbours of one *sweep* (``sweeps``): an op's inputs often hold several
families (embedding's (B, T, D) = (32, 512, 768) then (8, 2048, 4096), each over V), and the step
from the last input of one family to the first of the next changes every dimension: a level change
there says the families differ, not where along a sweep a kernel starts to change. So the series is
cut where the inputs stop varying in one dimension, and each piece is segmented on its own.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from fractions import Fraction

import numpy as np

from ktriage.schema.jsontypes import JSONObject


@dataclass(frozen=True)
class CliffConfig:
    """min_jump 0.10: a cliff is a level change of >= 10%, twice the verdict gate, since sweeps
    compare *different* inputs whose ratios legitimately drift a few percent. penalty None: set
    from the series' noise (see ``auto_penalty``)."""

    min_jump: float = 0.10
    min_size: int = 2
    sigmas: float = 4.0
    noise_floor: float = 0.005
    penalty: float | None = None


DEFAULT_CLIFF_CONFIG = CliffConfig()


@dataclass
class Cliff:
    """A level change between two neighbouring inputs of a sweep."""

    x_before: str
    x_after: str
    index: int  # index (in the given xs) of the first input after the jump
    level_before: float  # median value of the segment before
    level_after: float
    factor: float  # level_after / level_before
    series: str = ""  # what the values are, e.g. "liger_layer_norm@triton==3.4.0 / torch_layer_norm"

    @property
    def direction(self) -> str:
        return "up" if self.factor > 1 else "down"

    def describe(self) -> str:
        head = f"{self.series}: " if self.series else ""
        return f"{head}cliff between {self.x_before} and {self.x_after}: {self.level_before:.3g} -> {self.level_after:.3g} (x{self.factor:.2f})"

    def to_json(self) -> JSONObject:
        return asdict(self)


def noise_scale(log_values: np.ndarray) -> float:
    """Robust noise of a series from its first differences: blind to a few jumps and to trends."""
    if log_values.size < 3:
        return 0.0
    d = np.diff(log_values)
    return float(1.4826 * np.median(np.abs(d - np.median(d))) / math.sqrt(2.0))


def auto_penalty(n: int, sigma: float) -> float:
    """Per-segment penalty of the L1 fit: ~BIC-like, sigma x 2 ln(n). A candidate generator only:
    the merge step decides, so erring towards too many candidates is cheap."""
    return 2.0 * sigma * math.log(max(n, 2))


def _l1_cost(y: np.ndarray, i: int, j: int) -> float:
    seg = y[i:j]
    return float(np.abs(seg - np.median(seg)).sum())


_TIE = 1e-9  # relative: costs summed in another order differ by ~1e-15; nearer than this is a tie


def segment(log_values: Sequence[float], penalty: float, min_size: int = 2) -> list[int]:
    """Optimal L1 piecewise-constant partition; returns the start index of every segment but the first.

    The exact dynamic programme ``best[j] = min_i best[i] + cost(i, j) + penalty`` (``cost``: the
    sum of absolute deviations from the segment's median; on a tie, within ``_TIE`` relative, the
    smallest ``i`` wins: L1 costs do tie, e.g. when a boundary may move across an outlier and a
    point below the median alike, and the choice must not depend on summation order), without
    evaluating ``cost`` for every pair. Each candidate start ``i`` is a function of the level
    ``mu``: ``best[i] + sum_k |y_k - mu|``, and ``min_mu`` of it is ``best[i] + cost(i, j)`` (the
    minimum of an L1 sum is at a data point). So it is enough to keep, on the grid of the data
    values, the pointwise minimum over the candidates with the (smallest) candidate attaining it
    (functional pruning, as FPOP/robseg do): one step adds ``|y_{j-1} - grid|`` to all and
    inserts the candidate that became eligible. O(n) numpy work per input, O(n^2) in all, where
    the plain scan took O(n^3 log n).
    """
    y = np.asarray(log_values, dtype=float)
    n = y.size
    if n < 2 * min_size:
        return []
    prev = np.zeros(n + 1, dtype=np.int64)
    best = np.zeros(n + 1)
    grid = np.unique(y)
    q = np.zeros(grid.size)  # min over eligible candidates i of best[i] + sum_{i<=k<j} |y_k - grid|
    lab = np.zeros(grid.size, dtype=np.int64)  # the smallest candidate attaining it (within _TIE)
    recent: list[np.ndarray] = []  # |y_k - grid| of the last min_size inputs: a new candidate's terms
    f = np.empty(grid.size)
    thr = np.empty(grid.size)
    mask = np.empty(grid.size, dtype=bool)
    m = 0.0
    for j in range(1, n + 1):
        d = np.abs(grid - y[j - 1])
        recent.append(d)
        if len(recent) > min_size:
            recent.pop(0)
        if j <= min_size:
            q += d  # candidate 0 (i = 1 .. min_size-1 are never candidates: too short a first segment)
            if j < min_size:
                continue
        else:
            q += d
            i = j - min_size  # the candidate that becomes eligible now
            if i >= min_size:
                np.add(recent[0], best[i], out=f)
                for r in recent[1:]:
                    f += r
                # A newer candidate takes a grid point only when clearly lower: on a tie the
                # older, smaller i keeps it.
                np.subtract(q, _TIE * (1.0 + abs(m)), out=thr)
                np.less(f, thr, out=mask)
                np.copyto(lab, i, where=mask)
                np.minimum(q, f, out=q)
        m = float(q.min())
        np.less_equal(q, m + _TIE * (1.0 + abs(m + penalty)), out=mask)
        best[j] = m + penalty
        prev[j] = int(lab[mask].min())
    bounds: list[int] = []
    j = n
    while j > 0:
        i = int(prev[j])
        if i > 0:
            bounds.append(i)
        j = i
    return sorted(bounds)


def _check(y: np.ndarray, bounds: list[int], b_pos: int, cfg: CliffConfig, sigma: float) -> tuple[bool, float]:
    """(passes, |level change|) for the boundary bounds[b_pos] between its two segments."""
    edges = [0, *bounds, y.size]
    lo, b, hi = edges[b_pos], edges[b_pos + 1], edges[b_pos + 2]
    left, right = y[lo:b], y[b:hi]
    level = float(np.median(right) - np.median(left))
    gate = math.log1p(cfg.min_jump)
    # The jump at the boundary, less what the local trend explains: the two medians of <= 3
    # points sit ~3 inputs apart, and on a ramp every such pair differs by 3 slopes.
    inner = np.concatenate([np.diff(left), np.diff(right)])
    slope = float(np.median(inner)) if inner.size else 0.0
    span = (min(3, left.size) + min(3, right.size)) / 2.0
    local = float(np.median(right[:3]) - np.median(left[-3:])) - span * slope
    se = 1.2533 * sigma * math.sqrt(1.0 / left.size + 1.0 / right.size)  # s.e. of a median
    se_local = 1.2533 * sigma * math.sqrt(1.0 / min(3, left.size) + 1.0 / min(3, right.size))
    ok = (
        abs(level) >= gate
        and abs(local) >= gate
        and local * level > 0
        and abs(local) >= 0.5 * abs(level)
        and abs(level) >= cfg.sigmas * se
        and abs(local) >= cfg.sigmas * se_local
    )
    return ok, abs(level)


_NUMBER = re.compile(r"\d+(?:\.\d+)?")


def _dimensions(label: str) -> tuple[str, list[Fraction]]:
    """A label's numbers (its dimensions, in order) and the text around them (its form, ``#`` for each)."""
    return _NUMBER.sub("#", label), [Fraction(m) for m in _NUMBER.findall(label)]


def _step(before: tuple[str, list[Fraction]], after: tuple[str, list[Fraction]]) -> frozenset[int] | None:
    """The positions of the numbers that change from one input to the next, if they change as one
    quantity; None when they do not (another form of label, or numbers changing independently).

    One quantity: every changed number moves the same way (all up, or all down). A label may write a
    dimension more than once, or numbers derived from it (a recorded kernel's ``4096x4608
    n_cols=4608``; its ``n_non_ignore`` = 32 x rows; a square matmul's M=N=K; a ``BLOCK_SIZE`` that is
    the next power of two of ``n_cols``, which moves by another factor, and only at some steps, often
    the very step a cliff is at): those move together and are one sweep. Numbers moving in opposite
    ways are different dimensions changing at once (embedding's (32, 512, 768, 131072) then (8, 2048,
    4096, 1024)): another family.
    """
    (form_b, nums_b), (form_a, nums_a) = before, after
    if form_b != form_a:
        return None
    changed = [k for k, (b, a) in enumerate(zip(nums_b, nums_a, strict=True)) if b != a]
    directions = {nums_a[k] > nums_b[k] for k in changed}
    return frozenset(changed) if len(directions) <= 1 else None


def sweeps(xs: Sequence[str]) -> list[range]:
    """The sweeps of an ordered series of input labels: maximal runs of neighbours in which one
    quantity varies, at the same positions of the label, and everything else stays.

    A step that changes several quantities (or the label's form) ends the sweep. Where the next
    step changes one quantity but none of the positions the sweep has moved so far (a grid turning
    from N to M, rope's T sweep at H=8192 then its H sweep at T=2048 when they share an input), the
    input at the turn ends one sweep and starts the next: it is the neighbour of both. A step that
    moves some of the sweep's positions and others with them (``BLOCK_SIZE`` stepping with
    ``n_cols``) goes on with the sweep. Labels without numbers are one sweep only while they repeat.
    """
    if not xs:
        return []
    dims = [_dimensions(str(x)) for x in xs]
    out: list[range] = []
    start, moving = 0, frozenset[int]()
    for k in range(1, len(xs)):
        step = _step(dims[k - 1], dims[k])
        if step is None:
            out.append(range(start, k))
            start, moving = k, frozenset()
        elif step and moving and not step & moving:
            out.append(range(start, k))
            start, moving = k - 1, step
        elif step:
            moving = moving | step
    out.append(range(start, len(xs)))
    return out


def find_cliffs(
    xs: Sequence[str],
    values: Sequence[float | None],
    config: CliffConfig = DEFAULT_CLIFF_CONFIG,
    series: str = "",
) -> list[Cliff]:
    """Cliffs of a positive series (ratios or latencies) over ordered inputs ``xs``, within each of
    their sweeps (``sweeps``): never between the last input of one family and the first of the next.

    Missing points (None, nan, <= 0: an error or wrong cell) are skipped; a cliff across a gap is
    reported between the nearest measured inputs of the sweep.
    """
    if len(xs) != len(values):
        raise ValueError(f"{len(xs)} x values but {len(values)} values")
    out: list[Cliff] = []
    for run in sweeps(xs):
        for cl in _series_cliffs([xs[i] for i in run], [values[i] for i in run], config, series):
            cl.index += run.start
            out.append(cl)
    return out


def _series_cliffs(
    xs: Sequence[str],
    values: Sequence[float | None],
    config: CliffConfig,
    series: str,
) -> list[Cliff]:
    """Cliffs of one sweep: segment (split), then merge the boundaries that fail (module docstring)."""
    idx = [i for i, v in enumerate(values) if v is not None and math.isfinite(v) and v > 0]
    if len(idx) < 2 * config.min_size:
        return []
    y = np.log(np.asarray([values[i] for i in idx], dtype=float))
    sigma = max(noise_scale(y), config.noise_floor)
    penalty = config.penalty if config.penalty is not None else auto_penalty(y.size, sigma)
    bounds = segment(y, penalty, config.min_size)
    # Merge: drop the weakest failing boundary until all pass. A boundary's check reads only its
    # two segments, so after a deletion only the two neighbours of the merged segment change.
    checks = [_check(y, bounds, k, config, sigma) for k in range(len(bounds))]
    while bounds:
        failing = [(mag, k) for k, (ok, mag) in enumerate(checks) if not ok]
        if not failing:
            break
        _, k = min(failing)
        del bounds[k], checks[k]
        for nb in (k - 1, k):
            if 0 <= nb < len(bounds):
                checks[nb] = _check(y, bounds, nb, config, sigma)
    edges = [0, *bounds, y.size]
    out: list[Cliff] = []
    for k, b in enumerate(bounds):
        before = math.exp(float(np.median(y[edges[k] : b])))
        after = math.exp(float(np.median(y[b : edges[k + 2]])))
        out.append(Cliff(str(xs[idx[b - 1]]), str(xs[idx[b]]), idx[b], before, after, after / before, series))
    return out
