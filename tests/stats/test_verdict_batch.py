"""The stacked statistics of ``compare_samples_many`` against the one-set building blocks
(``np.median``, ``robust_cv``, ``detect_modes``, ``hodges_lehmann_ratio``, ``mann_whitney_p``)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from ktriage.stats.verdict import (
    DEFAULT_CONFIG,
    _clean,
    _pair_stats,
    _set_stats,
    compare_samples,
    compare_samples_many,
    detect_modes,
    hodges_lehmann_ratio,
    mann_whitney_p,
    robust_cv,
)
from ktriage.testing import bimodal, lognormal


def sample_sets(seed: int) -> list[list[float]]:
    r = np.random.default_rng(seed)
    out: list[list[float]] = []
    for _ in range(40):
        n = int(r.choice([3, 8, 9, 12, 20, 30]))
        kind = r.integers(0, 4)
        if kind == 0:
            out.append(lognormal(r, n, 1.0, float(r.choice([0.005, 0.02, 0.3]))))
        elif kind == 1:
            out.append(bimodal(r, n, 1.0, 0.01, gap=float(r.uniform(0.02, 0.4)), slow_share=float(r.uniform(0.1, 0.5))))
        elif kind == 2:
            out.append(list(np.round(lognormal(r, n, 1.0, 0.02), 2)))  # quantised: ties
        else:
            out.append([1.0] * n)
    return out


def close(x: float, y: float) -> bool:
    return (math.isnan(x) and math.isnan(y)) or x == y or abs(x - y) <= 1e-9 * max(abs(x), abs(y))


@pytest.mark.parametrize("seed", range(5))
def test_set_stats_match_one_at_a_time(seed: int) -> None:
    sets = [_clean(s) for s in sample_sets(seed)]
    for s, st in zip(sets, _set_stats(sets, DEFAULT_CONFIG), strict=True):
        assert st.median == float(np.median(s))
        assert close(st.cv, robust_cv(s))
        m = detect_modes(s, DEFAULT_CONFIG.bimodal_weight, DEFAULT_CONFIG.threshold / 2)
        assert st.modes.bimodal == m.bimodal
        assert all(
            close(a, b)
            for a, b in zip(
                (st.modes.low_ms, st.modes.high_ms, st.modes.high_weight, st.modes.separation),
                (m.low_ms, m.high_ms, m.high_weight, m.separation),
                strict=True,
            )
        )


@pytest.mark.parametrize("seed", range(5))
def test_pair_stats_match_one_at_a_time(seed: int) -> None:
    sets = [_clean(s) for s in sample_sets(seed)]
    pairs = [(sets[i], sets[j]) for i in range(len(sets)) for j in range(len(sets)) if (i + j) % 3 == 0]
    for (a, b), (ratio, lo, hi, p) in zip(pairs, _pair_stats(pairs, 0.99), strict=True):
        assert (ratio, lo, hi) == hodges_lehmann_ratio(a, b, 0.99)
        assert close(p, mann_whitney_p(a, b))


def test_many_equals_one_by_one() -> None:
    sets = sample_sets(7)
    pairs = [(sets[i], sets[(i * 7 + 3) % len(sets)]) for i in range(len(sets))] + [
        ([], sets[0]),
        (sets[1], [0.0, -1.0]),
    ]
    many = compare_samples_many(pairs)
    for (a, b), v in zip(pairs, many, strict=True):
        one = compare_samples(a, b)
        assert (v.verdict, v.reason, v.why(), v.flags, v.unsure_cause) == (
            one.verdict,
            one.reason,
            one.why(),
            one.flags,
            one.unsure_cause,
        )
