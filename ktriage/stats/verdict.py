"""Is ``new`` slower than ``ref``? A verdict on two sets of raw timing samples.

The rules follow the tools that get this right (asv compare, Google benchmark's U test, Pinpoint):
a change counts only when it is both *large enough to matter* (a magnitude gate, default 5%) and
*statistically real* (a Mann-Whitney U test on the raw samples), and the answer may be "unsure"
instead of a forced yes/no.

Estimator: the Hodges-Lehmann shift of log-latencies, i.e. the median of all pairwise ratios
``new_j / ref_i``. Why: timing noise is multiplicative (so work in logs and report a ratio); HL is
robust (29% breakdown, unlike a mean) yet far more efficient than a ratio of medians (about 95% vs
64% of the mean's efficiency under normal noise, so fewer GPU samples for the same interval); and
its distribution-free confidence interval (Moses) comes from the same rank statistic as the
Mann-Whitney test, so the interval and the p-value cannot tell different stories. It is exact and
deterministic: no bootstrap, no seed.

Decision (G = 1 + threshold, in log space so slowdowns and speedups are symmetric):

* "same"        the whole interval lies inside [1/G, G]: any change is smaller than the gate
                (it may still be real: a 1% change measured at 0.2% noise is "same").
* "regression"  the interval is entirely above sqrt(G) (the slowdown is certainly more than half
                the gate), reaches G (a gate-sized slowdown is plausible), and U test p < alpha.
* "improvement" the mirror image.
* "unsure"      everything else: the interval straddles the gate, too few samples, or the samples
                are bimodal / too noisy for a location comparison to mean anything. Unless the
                two distributions are separated outright (new's 5th percentile beyond ref's 95th
                by the gate), which no mixture or noise can explain away.

As samples accumulate the interval shrinks, so the decision boundary converges to the gate itself;
a change of exactly the gate size is flagged, one of 4.5% measured to ±0.1% is "same".
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any, Literal, TypedDict

import numpy as np
from scipy import stats as _sps

from ktriage.schema.jsontypes import JSONObject
from ktriage.stats.gate import gate_band

VerdictKind = Literal["regression", "improvement", "same", "unsure"]

# Why unsure: the ones that more samples can fix are listed in RESOLVABLE.
UnsureCause = Literal["few_samples", "straddles_gate", "not_significant", "bimodal", "noisy", ""]
RESOLVABLE: frozenset[str] = frozenset({"few_samples", "straddles_gate", "not_significant"})

# Above this many pairwise differences both sides are thinned to evenly spaced order statistics
# (keeps the distribution shape; GPU cells rarely have more than a few hundred samples).
_MAX_PAIRS = 4_000_000

# Two modes must beat one by 2*dLL > 5 ln(n): BIC's 3 ln(n) for the 3 extra parameters still
# called 7% of unimodal 20-sample sets bimodal (EM overfits small samples); 5 ln(n) gives < 1%
# at n=20 and keeps ~100% detection of a 25%-weight mode 10% away (measured; see docs/compare.md).
BIMODAL_LR_FACTOR = 5.0


@dataclass(frozen=True)
class VerdictConfig:
    """The knobs of a verdict. Defaults and why:

    threshold 0.05: the changes kernel engineers chase are 20%..6x; interleaved GPU timings with
        an L2 flush have 0.5-2% noise, so 5% is 3-10x the noise and resolvable with tens of
        samples. Same order as asv's step detection (5%), Google benchmark's red mark (+5%),
        conbench's pairwise 5%; TorchBench uses 7%, asv compare 10% for noisier CPU benchmarks.
    confidence 0.99: one compare has hundreds of pairs (30 inputs x backends x toolchains); 99%
        keeps chance "significance" rare, between Google benchmark's 0.05 and asv's 0.002.
    min_samples 10: below ~9 repetitions the U test is unreliable (Google benchmark warns),
        and the Moses interval does not exist for tiny samples.
    max_noise 0.20: a robust CV above 20% (4x the gate) means the run was disturbed (throttling,
        other processes); an i.i.d. interval would be falsely confident.
    bimodal_weight 0.10: a second mode must hold >= 10% of the samples (and >= 4 of them);
        rarer slow samples are outliers that the rank statistics already shrug off.
    settle_samples 30: below 30 samples a side, "bimodal" or "noisy" may be a few unlucky
        samples, so an adaptive loop keeps sampling; from 30 on it is taken as the truth.
    """

    threshold: float = 0.05
    confidence: float = 0.99
    min_samples: int = 10
    max_noise: float = 0.20
    bimodal_weight: float = 0.10
    settle_samples: int = 30

    @property
    def alpha(self) -> float:
        return 1.0 - self.confidence

    @property
    def gate(self) -> float:
        return 1.0 + self.threshold


DEFAULT_CONFIG = VerdictConfig()


@dataclass(frozen=True)
class Modes:
    """A two-mode description of one sample set (log-normal mixture fitted by EM)."""

    bimodal: bool
    low_ms: float
    high_ms: float
    high_weight: float
    separation: float  # Ashman's D


@dataclass
class Verdict:
    """The answer for one (ref, new) pair; ``ratio`` > 1 means new is slower."""

    verdict: VerdictKind
    ratio: float  # new/ref: exp(Hodges-Lehmann shift of log samples); nan without samples
    ci_low: float  # confidence interval of the ratio (inf/0 when it does not exist)
    ci_high: float
    p_value: float  # two-sided Mann-Whitney U; nan when not computable
    reason: str
    n_ref: int = 0
    n_new: int = 0
    median_ref: float = math.nan
    median_new: float = math.nan
    noise_ref: float = math.nan  # robust CV (1.4826 MAD of log samples)
    noise_new: float = math.nan
    unsure_cause: UnsureCause = ""
    threshold: float = DEFAULT_CONFIG.threshold
    confidence: float = DEFAULT_CONFIG.confidence
    flags: list[str] = field(default_factory=list)  # e.g. "bimodal_ref", "noisy_new", "separated"
    settled: bool = False  # bimodal/noisy judged on enough samples (config.settle_samples) to be final
    # the reason less the numbers a table row shows beside it (change, CI): ``why``; not in the JSON
    note: str = ""

    def why(self) -> str:
        """What a table row with change and CI columns says after them (compare's "why"): the ``reason``
        without its change and interval, "interval straddles the ±5% gate; more samples would decide".

        Why apart from ``reason``: the reason is a whole sentence for places that show no numbers (the
        markdown's and HTML's unsure lists, bisect's notes, the JSON), and in compare's table it read
        "+1.6% (99% CI [+0.6%, +2.6%], U-test p=0.001): interval straddles ..." next to the "+1.6%" and
        "[+0.6%, +2.6%]" columns. A verdict read back from JSON has no note: its reason, whole."""
        return self.note or self.reason

    @property
    def resolvable(self) -> bool:
        """Could more samples change this verdict? False once decided, and for data that is
        bimodal or too noisy on enough samples; True while a few samples may be misleading."""
        if self.verdict != "unsure":
            return False
        return self.unsure_cause in RESOLVABLE or not self.settled

    def to_json(self) -> JSONObject:
        out = asdict(self)
        del out["note"]  # the reason says it all; ``why`` is a table's shorter form of it
        out["resolvable"] = self.resolvable
        # JSON has no inf/nan: encode them as null so every consumer can parse the file.
        return {k: (None if isinstance(v, float) and not math.isfinite(v) else v) for k, v in out.items()}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Verdict:
        data = {k: v for k, v in data.items() if k != "resolvable"}
        for k in ("ratio", "ci_low", "ci_high", "p_value", "median_ref", "median_new", "noise_ref", "noise_new"):
            if data.get(k) is None:
                data[k] = math.nan
        return cls(**data)


# --- building blocks -----------------------------------------------------------------------------


def _clean(samples: Iterable[float]) -> np.ndarray:
    """Finite positive samples only: a zero or negative time is a broken measurement, not data."""
    arr = np.asarray(list(samples), dtype=np.float64)
    return arr[np.isfinite(arr) & (arr > 0)]


def robust_cv(samples: Sequence[float] | np.ndarray) -> float:
    """1.4826 x MAD of the log samples: the CV of the bulk of the data, blind to a few outliers."""
    x = np.log(_clean(samples))
    if x.size < 2:
        return math.nan
    return float(1.4826 * np.median(np.abs(x - np.median(x))))


def _thin(sorted_x: np.ndarray, limit: int) -> np.ndarray:
    if sorted_x.size <= limit:
        return sorted_x
    idx = np.round(np.linspace(0, sorted_x.size - 1, limit)).astype(int)
    return np.take(sorted_x, idx)


def hodges_lehmann_ratio(
    ref: Sequence[float] | np.ndarray, new: Sequence[float] | np.ndarray, confidence: float = 0.99
) -> tuple[float, float, float]:
    """(ratio, ci_low, ci_high): HL estimate of new/ref with its Moses distribution-free interval.

    The interval's ends are order statistics of the pairwise log differences at the ranks where the
    Mann-Whitney U statistic reaches its critical value (normal approximation, no tie correction,
    which only widens it). When the samples are too small for the level, the interval is (0, inf).
    """
    a = np.sort(np.log(_clean(ref)))
    b = np.sort(np.log(_clean(new)))
    if a.size == 0 or b.size == 0:
        return math.nan, 0.0, math.inf
    per_side = max(2, int(math.sqrt(_MAX_PAIRS)))
    if a.size * b.size > _MAX_PAIRS:
        a, b = _thin(a, per_side), _thin(b, per_side)
    n, m = a.size, b.size
    diffs = np.sort((b[None, :] - a[:, None]).ravel())
    total = diffs.size
    shift = float(np.median(diffs))
    z = float(_sps.norm.ppf(1.0 - (1.0 - confidence) / 2.0))
    k = int(math.floor(total / 2.0 - z * math.sqrt(n * m * (n + m + 1) / 12.0)))
    if k < 1:
        return math.exp(shift), 0.0, math.inf
    return math.exp(shift), math.exp(float(diffs[k - 1])), math.exp(float(diffs[total - k]))


def mann_whitney_p(ref: Sequence[float] | np.ndarray, new: Sequence[float] | np.ndarray) -> float:
    """Two-sided Mann-Whitney U p-value (scipy: exact for small untied samples, else asymptotic)."""
    a, b = _clean(ref), _clean(new)
    if a.size == 0 or b.size == 0:
        return math.nan
    if np.all(a == a[0]) and np.all(b == b[0]):
        # Two constant sets (quantised timers, or TritonBench's one value a side) that differ are completely
        # separated: the exact p of that is 2 / C(n+m, n), which is 1 for one value a side, never 0.
        return 1.0 if a[0] == b[0] else min_achievable_p(a.size, b.size)
    return float(_sps.mannwhitneyu(b, a, alternative="two-sided").pvalue)


def min_achievable_p(n: int, m: int) -> float:
    """The smallest two-sided U-test p-value n vs m samples can give (asv's guard, x2 for two sides)."""
    if n == 0 or m == 0:
        return 1.0
    return min(1.0, 2.0 / math.comb(n + m, min(n, m)))


def detect_modes(
    samples: Sequence[float] | np.ndarray, min_weight: float = 0.10, min_gap: float = 0.025, min_count: int = 4
) -> Modes:
    """Fit two log-normal modes by EM and call the set bimodal when they are clearly apart.

    Bimodal means: two modes fit better than one (2 dLL > 5 ln n), each holds >= ``min_weight`` of the
    samples and >= ``min_count`` samples (two or three slow samples are outliers, not a mode), Ashman's D > 2 (the usual
    criterion for two separated Gaussians; a hard split of ONE Gaussian would pass it, a fitted
    mixture does not), and the modes differ by >= ``min_gap`` (relative). A smaller gap cannot move
    a ratio past the gate however the mixture shifts, so it is harmless noise.
    """
    x = np.sort(np.log(_clean(samples)))
    n = x.size
    if n < 8:
        return Modes(False, math.nan, math.nan, 0.0, 0.0)
    if math.expm1(float(x[-1] - x[0])) < min_gap:  # the whole sample is narrower than the gap
        return Modes(False, math.exp(float(x[0])), math.exp(float(x[-1])), 0.0, 0.0)
    # Deterministic start: the split that maximises between-class variance (1-D Otsu / 2-means).
    csum = np.cumsum(x)
    ks = np.arange(1, n)
    m1 = csum[:-1] / ks
    m2 = (csum[-1] - csum[:-1]) / (n - ks)
    k = int(ks[np.argmax(ks * (n - ks) * (m1 - m2) ** 2)])
    w = k / n
    mu = np.array([x[:k].mean(), x[k:].mean()])
    spread = max(float(x[-1] - x[0]), 1e-9)
    floor = (spread * 1e-3) ** 2 + 1e-12  # variance floor: quantised timers give exact ties
    var = np.array([max(x[:k].var(), floor), max(x[k:].var(), floor)])
    weights = np.array([w, 1 - w])
    last_ll = -math.inf
    # 60 steps: well-separated modes converge in a handful; overlapping ones crawl for hundreds
    # of steps towards an answer (one mode) that is already clear.
    for _ in range(60):
        dens = weights / np.sqrt(2 * np.pi * var) * np.exp(-((x[:, None] - mu) ** 2) / (2 * var))
        tot = np.maximum(dens.sum(axis=1, keepdims=True), 1e-300)
        ll = float(np.log(tot).sum())
        if ll - last_ll < 1e-6 * n:  # EM never decreases the likelihood: stop when it stalls
            break
        last_ll = ll
        resp = dens / tot
        nk = resp.sum(axis=0)
        if nk.min() < 1e-9:
            break
        mu = (resp * x[:, None]).sum(axis=0) / nk
        var = np.maximum((resp * (x[:, None] - mu) ** 2).sum(axis=0) / nk, floor)
        weights = nk / n
    lo, hi = (0, 1) if mu[0] <= mu[1] else (1, 0)
    d = float(math.sqrt(2.0) * abs(mu[hi] - mu[lo]) / math.sqrt(var[0] + var[1]))
    gap = math.exp(float(mu[hi] - mu[lo])) - 1.0
    # Is the second mode worth its 3 extra parameters? (a stiffer BIC; EM alone happily splits one bell)
    var1 = max(float(x.var()), floor)
    ll1 = float(-0.5 * n * (math.log(2 * math.pi * var1) + 1.0))
    dens = weights / np.sqrt(2 * np.pi * var) * np.exp(-((x[:, None] - mu) ** 2) / (2 * var))
    ll2 = float(np.log(np.maximum(dens.sum(axis=1), 1e-300)).sum())
    better = 2.0 * (ll2 - ll1) > BIMODAL_LR_FACTOR * math.log(n)
    bimodal = bool(better and min(weights) >= max(min_weight, min_count / n) and d > 2.0 and gap >= min_gap)
    return Modes(bimodal, math.exp(float(mu[lo])), math.exp(float(mu[hi])), float(weights[hi]), d)


# --- the verdict ---------------------------------------------------------------------------------


def _pct(r: float) -> str:
    return f"{(r - 1) * 100:+.1f}%" if math.isfinite(r) else ("+inf%" if r > 0 else "n/a")


def _ci_text(lo: float, hi: float, confidence: float) -> str:
    if not (math.isfinite(hi) and lo > 0):
        return f"{confidence:.0%} CI unbounded"
    return f"{confidence:.0%} CI [{_pct(lo)}, {_pct(hi)}]"


def compare_samples(ref: Sequence[float], new: Sequence[float], config: VerdictConfig = DEFAULT_CONFIG) -> Verdict:
    """The verdict on ``new`` against ``ref`` (raw samples in ms, any order)."""
    return compare_samples_many([(ref, new)], config)[0]


class _Counts(TypedDict):
    """The fields every verdict of a pair carries, whatever it decides."""

    n_ref: int
    n_new: int
    threshold: float
    confidence: float


class _Measured(_Counts):
    """And those of a pair with samples on both sides."""

    median_ref: float
    median_new: float
    noise_ref: float
    noise_new: float
    ratio: float
    ci_low: float
    ci_high: float
    p_value: float


def _decide(
    a: np.ndarray,
    b: np.ndarray,
    sa: _SetStats,
    sb: _SetStats,
    pair: tuple[float, float, float, float],
    config: VerdictConfig,
) -> Verdict:
    """The verdict from the statistics of one cleaned pair (``compare_samples_many`` computes them)."""
    base = _Counts(n_ref=int(a.size), n_new=int(b.size), threshold=config.threshold, confidence=config.confidence)
    if a.size == 0 or b.size == 0:
        side = "ref" if a.size == 0 else "new"
        return Verdict(
            "unsure",
            math.nan,
            0.0,
            math.inf,
            math.nan,
            f"no valid samples on the {side} side",
            unsure_cause="few_samples",
            **base,
        )
    ratio, lo, hi, p = pair
    full = _Measured(
        **base,
        median_ref=sa.median,
        median_new=sb.median,
        noise_ref=sa.cv,
        noise_new=sb.cv,
        ratio=ratio,
        ci_low=lo,
        ci_high=hi,
        p_value=p,
    )
    head = f"{_pct(ratio)} ({_ci_text(lo, hi, config.confidence)}, U-test p={p:.2g})"
    g = config.gate
    half = math.sqrt(g)

    if min(a.size, b.size) < config.min_samples or min_achievable_p(a.size, b.size) >= config.alpha:
        # One value a side (TritonBench's p50) is a number, not a sample: say so, and flag it.
        single = min(a.size, b.size) == 1
        why = "; a single value (no samples, e.g. TritonBench's p50) gives no confidence" if single else ""
        few = f"too few samples ({a.size} ref, {b.size} new; need >= {config.min_samples} each{why})"
        return Verdict(
            "unsure",
            reason=f"{few}: {head}",
            note=few,
            unsure_cause="few_samples",
            flags=["single_value"] if single else [],
            **full,
        )

    flags: list[str] = []
    problems: list[str] = []
    cause: UnsureCause = ""
    for side, st in (("ref", sa), ("new", sb)):
        modes = st.modes
        if modes.bimodal:
            flags.append(f"bimodal_{side}")
            problems.append(
                f"{side} samples are bimodal ({modes.low_ms:.4g} ms and {modes.high_ms:.4g} ms, {modes.high_weight:.0%} slow)"
            )
            cause = "bimodal"
        cv = st.cv
        if cv > config.max_noise:
            flags.append(f"noisy_{side}")
            problems.append(f"{side} noise {cv:.0%} > {config.max_noise:.0%}")
            cause = cause or "noisy"
    if problems:
        # Only an outright separation survives unreliable data: no mixture shift explains it.
        q_new = np.quantile(b, [0.05, 0.95])
        q_ref = np.quantile(a, [0.05, 0.95])
        if q_new[0] >= q_ref[1] * g and p < config.alpha:
            return Verdict(
                "regression",
                reason=f"{head}; distributions separated despite: {'; '.join(problems)}",
                flags=flags + ["separated"],
                **full,
            )
        if q_new[1] * g <= q_ref[0] and p < config.alpha:
            return Verdict(
                "improvement",
                reason=f"{head}; distributions separated despite: {'; '.join(problems)}",
                flags=flags + ["separated"],
                **full,
            )
        settled = min(a.size, b.size) >= config.settle_samples
        unreliable = f"{'; '.join(problems)}: a location comparison is unreliable"
        return Verdict(
            "unsure",
            reason=f"{unreliable} ({head})",
            note=unreliable,
            unsure_cause=cause,
            flags=flags,
            settled=settled,
            **full,
        )

    gate_txt = f"{gate_band(config.threshold)} gate"
    if lo >= 1 / g and hi <= g:
        what = "a real change but inside the" if p < config.alpha else "no change beyond the"
        return Verdict("same", reason=f"{head}: {what} {gate_txt}", **full)
    if lo >= half and hi >= g:
        if p < config.alpha:
            return Verdict("regression", reason=f"slower {head}", **full)
        return Verdict(
            "unsure",
            reason=f"{head}: interval above the gate but U test not significant",
            note=f"interval above the gate but U test not significant (p={p:.2g})",
            unsure_cause="not_significant",
            **full,
        )
    if hi <= 1 / half and lo <= 1 / g:
        if p < config.alpha:
            return Verdict("improvement", reason=f"faster {head}", **full)
        return Verdict(
            "unsure",
            reason=f"{head}: interval below the gate but U test not significant",
            note=f"interval below the gate but U test not significant (p={p:.2g})",
            unsure_cause="not_significant",
            **full,
        )
    return Verdict(
        "unsure",
        reason=f"{head}: interval straddles the {gate_txt}; more samples would decide",
        note=f"interval straddles the {gate_txt}; more samples would decide",
        unsure_cause="straddles_gate",
        **full,
    )


# --- many verdicts at once ------------------------------------------------------------------------
# A compare holds thousands of pairs of a few tens of samples: per pair, numpy's call overhead is
# the cost (the EM of ``detect_modes`` alone was ~2.7 ms a set). So the statistics run on stacks
# of equal-sized sample sets, the same arithmetic row by row, and only the decision is per pair.

_ROW_BUDGET = 1 << 20  # elements per stacked block (rows x samples x 2 components)


def _modes_rows(x: np.ndarray, min_weight: float, min_gap: float, min_count: int) -> list[Modes]:
    """``detect_modes`` for each row of ``x``: sorted log samples, all of one size."""
    rows, n = x.shape
    if n < 8:
        return [Modes(False, math.nan, math.nan, 0.0, 0.0)] * rows
    out: list[Modes | None] = [None] * rows
    narrow = np.expm1(x[:, -1] - x[:, 0]) < min_gap  # the whole sample is narrower than the gap
    for r in np.flatnonzero(narrow).tolist():
        out[r] = Modes(False, math.exp(float(x[r, 0])), math.exp(float(x[r, -1])), 0.0, 0.0)
    todo = np.flatnonzero(~narrow)
    step = max(1, _ROW_BUDGET // (2 * n))
    for s in range(0, todo.size, step):
        idx = todo[s : s + step]
        for r, m in zip(idx.tolist(), _modes_block(x[idx], min_weight, min_gap, min_count), strict=True):
            out[r] = m
    return [m for m in out if m is not None]


def _mixture(x: np.ndarray, weights: np.ndarray, mu: np.ndarray, var: np.ndarray) -> np.ndarray:
    """Component densities, (rows, n, 2), as ``detect_modes`` writes them for one row."""
    dens: np.ndarray = (
        weights[:, None, :]
        / np.sqrt(2 * np.pi * var)[:, None, :]
        * np.exp(-((x[:, :, None] - mu[:, None, :]) ** 2) / (2 * var[:, None, :]))
    )
    return dens


def _modes_block(x: np.ndarray, min_weight: float, min_gap: float, min_count: int) -> list[Modes]:
    rows, n = x.shape
    # Deterministic start: the split that maximises between-class variance (1-D Otsu / 2-means).
    csum = np.cumsum(x, axis=1)
    ks = np.arange(1, n)
    m1 = csum[:, :-1] / ks
    m2 = (csum[:, -1:] - csum[:, :-1]) / (n - ks)
    k = ks[np.argmax(ks * (n - ks) * (m1 - m2) ** 2, axis=1)]
    left = np.arange(n)[None, :] < k[:, None]
    mu_l = np.where(left, x, 0.0).sum(axis=1) / k
    mu_r = np.where(left, 0.0, x).sum(axis=1) / (n - k)
    var_l = np.where(left, (x - mu_l[:, None]) ** 2, 0.0).sum(axis=1) / k
    var_r = np.where(left, 0.0, (x - mu_r[:, None]) ** 2).sum(axis=1) / (n - k)
    spread = np.maximum(x[:, -1] - x[:, 0], 1e-9)
    floor = (spread * 1e-3) ** 2 + 1e-12  # variance floor: quantised timers give exact ties
    mu = np.stack([mu_l, mu_r], axis=1)
    var = np.stack([np.maximum(var_l, floor), np.maximum(var_r, floor)], axis=1)
    weights = np.stack([k / n, 1 - k / n], axis=1)
    last_ll = np.full(rows, -math.inf)
    active = np.arange(rows)
    for _ in range(60):  # as detect_modes: at most 60 EM steps, a row stops when its likelihood stalls
        if not active.size:
            break
        xa = x[active]
        dens = _mixture(xa, weights[active], mu[active], var[active])
        tot = np.maximum(dens.sum(axis=2, keepdims=True), 1e-300)
        ll = np.log(tot).sum(axis=(1, 2))
        go = ~(ll - last_ll[active] < 1e-6 * n)
        last_ll[active] = ll
        resp = dens / tot
        nk = resp.sum(axis=1)
        go &= ~(nk.min(axis=1) < 1e-9)
        active, xa, resp, nk = active[go], xa[go], resp[go], nk[go]
        mu_new = (resp * xa[:, :, None]).sum(axis=1) / nk
        var[active] = np.maximum(
            (resp * (xa[:, :, None] - mu_new[:, None, :]) ** 2).sum(axis=1) / nk, floor[active, None]
        )
        mu[active] = mu_new
        weights[active] = nk / n
    hi = (mu[:, 0] <= mu[:, 1]).astype(np.int64)  # the slow component's column
    lo = 1 - hi
    r = np.arange(rows)
    d = math.sqrt(2.0) * np.abs(mu[r, hi] - mu[r, lo]) / np.sqrt(var[:, 0] + var[:, 1])
    gap = np.exp(mu[r, hi] - mu[r, lo]) - 1.0
    # Is the second mode worth its 3 extra parameters? (a stiffer BIC; EM alone happily splits one bell)
    var1 = np.maximum(x.var(axis=1), floor)
    ll1 = -0.5 * n * (np.log(2 * math.pi * var1) + 1.0)
    ll2 = np.log(np.maximum(_mixture(x, weights, mu, var).sum(axis=2), 1e-300)).sum(axis=1)
    better = 2.0 * (ll2 - ll1) > BIMODAL_LR_FACTOR * math.log(n)
    bimodal = better & (weights.min(axis=1) >= max(min_weight, min_count / n)) & (d > 2.0) & (gap >= min_gap)
    return [
        Modes(
            bool(bimodal[i]),
            math.exp(float(mu[i, lo[i]])),
            math.exp(float(mu[i, hi[i]])),
            float(weights[i, hi[i]]),
            float(d[i]),
        )
        for i in range(rows)
    ]


def _groups(sizes: Sequence[tuple[int, ...]]) -> dict[tuple[int, ...], list[int]]:
    out: dict[tuple[int, ...], list[int]] = {}
    for i, s in enumerate(sizes):
        out.setdefault(s, []).append(i)
    return out


@dataclass
class _SetStats:
    median: float
    cv: float
    modes: Modes


def _set_stats(sets: Sequence[np.ndarray], config: VerdictConfig) -> list[_SetStats]:
    """Median, robust CV and modes of each cleaned sample set, stacked by size."""
    out: list[_SetStats | None] = [None] * len(sets)
    for (n,), members in _groups([(s.size,) for s in sets]).items():
        if n == 0:
            for i in members:
                out[i] = _SetStats(math.nan, math.nan, Modes(False, math.nan, math.nan, 0.0, 0.0))
            continue
        x = np.stack([sets[i] for i in members])
        med = np.median(x, axis=1)
        lx = np.log(x)
        cv = (
            1.4826 * np.median(np.abs(lx - np.median(lx, axis=1)[:, None]), axis=1)
            if n >= 2
            else np.full(len(members), math.nan)
        )
        modes = _modes_rows(np.sort(lx, axis=1), config.bimodal_weight, config.threshold / 2, 4)
        for r, i in enumerate(members):
            out[i] = _SetStats(float(med[r]), float(cv[r]), modes[r])
    return [s for s in out if s is not None]


def _pair_stats(
    pairs: Sequence[tuple[np.ndarray, np.ndarray]], confidence: float
) -> list[tuple[float, float, float, float]]:
    """(ratio, ci_low, ci_high, p) of each cleaned (ref, new) pair, stacked by the two sizes."""
    out: list[tuple[float, float, float, float] | None] = [None] * len(pairs)
    for (n, m), members in _groups([(a.size, b.size) for a, b in pairs]).items():
        if (
            n == 1 and m == 1
        ):  # one value a side (TritonBench's p50): what the two functions give, without scipy per pair
            for i in members:
                a0, b0 = float(pairs[i][0][0]), float(pairs[i][1][0])
                out[i] = (math.exp(math.log(b0) - math.log(a0)), 0.0, math.inf, 1.0)  # 1 vs 1 can give no other p
            continue
        if n == 0 or m == 0 or n * m > _MAX_PAIRS or min(n, m) <= 8:  # empty, thinned, or exact U test: one by one
            for i in members:
                a, b = pairs[i]
                out[i] = (*hodges_lehmann_ratio(a, b, confidence), mann_whitney_p(a, b))
            continue
        z = float(_sps.norm.ppf(1.0 - (1.0 - confidence) / 2.0))
        total = n * m
        k = int(math.floor(total / 2.0 - z * math.sqrt(n * m * (n + m + 1) / 12.0)))
        step = max(1, _ROW_BUDGET // total)
        for s in range(0, len(members), step):
            chunk = members[s : s + step]
            a = np.stack([pairs[i][0] for i in chunk])
            b = np.stack([pairs[i][1] for i in chunk])
            la, lb = np.sort(np.log(a), axis=1), np.sort(np.log(b), axis=1)
            diffs = np.sort((lb[:, None, :] - la[:, :, None]).reshape(len(chunk), total), axis=1)
            shift = np.median(diffs, axis=1)
            const = np.all(a == a[:, :1], axis=1) & np.all(b == b[:, :1], axis=1)
            p = np.asarray(_sps.mannwhitneyu(b, a, alternative="two-sided", axis=1).pvalue, dtype=float)
            for r, i in enumerate(chunk):
                pr = float(p[r]) if not const[r] else (1.0 if a[r, 0] == b[r, 0] else min_achievable_p(n, m))
                if k < 1:
                    out[i] = (math.exp(float(shift[r])), 0.0, math.inf, pr)
                else:
                    out[i] = (
                        math.exp(float(shift[r])),
                        math.exp(float(diffs[r, k - 1])),
                        math.exp(float(diffs[r, total - k])),
                        pr,
                    )
    return [s for s in out if s is not None]


SetStatsCache = dict[int, tuple[object, VerdictConfig, _SetStats]]


def compare_samples_many(
    pairs: Sequence[tuple[Sequence[float], Sequence[float]]],
    config: VerdictConfig = DEFAULT_CONFIG,
    cache: SetStatsCache | None = None,
) -> list[Verdict]:
    """``compare_samples`` for each (ref, new) pair: the same verdicts, the statistics computed on
    stacks of equal-sized sample sets (one compare has thousands of pairs).

    ``cache``: a dict kept by the caller across calls that share sample lists (the reference
    toolchain's cells in every comparison of ``compare_toolchains``): a set's statistics are
    reused when the very same list object comes again (the entry holds the list, so its id cannot
    be reused by another object)."""
    clean = [(_clean(a), _clean(b)) for a, b in pairs]
    objs = [o for ab in pairs for o in ab]
    flat = [s for ab in clean for s in ab]
    sets: list[_SetStats | None] = [None] * len(flat)
    todo: list[int] = []
    for k, o in enumerate(objs):
        hit = cache.get(id(o)) if cache is not None else None
        if hit is not None and hit[0] is o and hit[1] == config:
            sets[k] = hit[2]
        else:
            todo.append(k)
    for k, st in zip(todo, _set_stats([flat[k] for k in todo], config), strict=True):
        sets[k] = st
        if cache is not None:
            cache[id(objs[k])] = (objs[k], config, st)
    sets_ = [st for st in sets if st is not None]
    stats = _pair_stats(clean, config.confidence)
    return [_decide(a, b, sets_[2 * i], sets_[2 * i + 1], stats[i], config) for i, (a, b) in enumerate(clean)]


def needs_more_samples(ref: Sequence[float], new: Sequence[float], config: VerdictConfig = DEFAULT_CONFIG) -> bool:
    """True when the pair is undecided AND more samples could decide it (not for bimodal/noisy data)."""
    return compare_samples(ref, new, config).resolvable


def final_for_sampling(verdict: Verdict, config: VerdictConfig = DEFAULT_CONFIG) -> bool:
    """May an adaptive loop stop on this verdict? Not while more samples could still change it:
    an undecided pair that more samples can decide, and a regression/improvement whose *point
    estimate* lies inside the gate (it was flagged because a wide interval still reaches the gate:
    with 10 samples a real -4 % reads as "improvement", with 50 as "same"; on the H200 that flipped
    an issue-3 verdict). A flag whose estimate is beyond the gate, or separated distributions, is final."""
    if verdict.verdict in ("regression", "improvement"):
        g = config.gate
        inside = math.isfinite(verdict.ratio) and 1.0 / g < verdict.ratio < g
        return not inside or "separated" in verdict.flags
    return not verdict.resolvable


def stop_when_sure(
    samples: Mapping[str, Sequence[float]],
    pairs: Iterable[tuple[str, str]],
    config: VerdictConfig = DEFAULT_CONFIG,
    max_samples: int | None = None,
) -> bool:
    """For an adaptive sampling loop: True when every (ref, new) pair of ``samples`` keys is decided
    for good (``final_for_sampling``), or cannot be decided by more samples, or has reached
    ``max_samples`` on both sides.

    The runner calls it after each round of interleaved samples; a missing key counts as "not yet
    sampled" (keep going, unless capped). A clearly-same or clearly-5x pair stops at the first check.
    """
    todo: list[tuple[Sequence[float], Sequence[float]]] = []
    for ref_key, new_key in pairs:
        a, b = samples.get(ref_key, ()), samples.get(new_key, ())
        if max_samples is not None and len(a) >= max_samples and len(b) >= max_samples:
            continue
        todo.append((a, b))
    return all(final_for_sampling(v, config) for v in compare_samples_many(todo, config)) if todo else True
