"""The fast cliff search (functional pruning, incremental merge) against a plain reference: the
quadratic dynamic programme and the merge loop that re-checks every boundary, on random series."""

from __future__ import annotations

import math

import numpy as np
import pytest

from ktriage.stats.cliffs import (
    DEFAULT_CLIFF_CONFIG,
    CliffConfig,
    _check,
    auto_penalty,
    find_cliffs,
    noise_scale,
    segment,
)


def reference_segment(y: np.ndarray, penalty: float, min_size: int = 2) -> list[int]:
    """Every (i, j) pair, the cost from a fresh median each time; the first i within 1e-9
    (relative) of the minimum wins: L1 costs tie exactly (a boundary moving across an outlier and
    a low point alike), and a tie must not be decided by the order of a sum."""
    n = y.size
    if n < 2 * min_size:
        return []
    best = [math.inf] * (n + 1)
    best[0] = 0.0
    prev = [0] * (n + 1)
    for j in range(min_size, n + 1):
        cs = []
        for i in range(0, j - min_size + 1):
            if (i != 0 and i < min_size) or not math.isfinite(best[i]):
                continue
            seg = y[i:j]
            cs.append((best[i] + float(np.abs(seg - np.median(seg)).sum()) + penalty, i))
        c_min = min(c for c, _ in cs)
        best[j], prev[j] = next((c, i) for c, i in cs if c <= c_min + 1e-9 * (1.0 + abs(c_min)))
    bounds, j = [], n
    while j > 0:
        if prev[j] > 0:
            bounds.append(prev[j])
        j = prev[j]
    return sorted(bounds)


def reference_cliffs(values: list[float], cfg: CliffConfig = DEFAULT_CLIFF_CONFIG) -> list[tuple[int, float]]:
    """(index, factor) of each cliff: the reference segmentation, then every boundary re-checked
    after each merge."""
    y = np.log(np.asarray(values, dtype=float))
    if y.size < 2 * cfg.min_size:
        return []
    sigma = max(noise_scale(y), cfg.noise_floor)
    penalty = cfg.penalty if cfg.penalty is not None else auto_penalty(y.size, sigma)
    bounds = reference_segment(y, penalty, cfg.min_size)
    while bounds:
        checks = [_check(y, bounds, k, cfg, sigma) for k in range(len(bounds))]
        failing = [(mag, k) for k, (ok, mag) in enumerate(checks) if not ok]
        if not failing:
            break
        del bounds[min(failing)[1]]
    edges = [0, *bounds, y.size]
    return [
        (b, math.exp(float(np.median(y[b : edges[k + 2]]))) / math.exp(float(np.median(y[edges[k] : b]))))
        for k, b in enumerate(bounds)
    ]


def random_series(seed: int) -> list[float]:
    """Levels with random steps (some below the gate), ramps, outliers and noise of 0.2-5%."""
    r = np.random.default_rng(seed)
    n = int(r.integers(4, 120))
    level = np.ones(n)
    for _ in range(int(r.integers(0, 5))):
        level[int(r.integers(1, n)) :] *= float(r.choice([0.6, 0.9, 0.95, 1.05, 1.12, 1.3, 1.8]))
    if r.random() < 0.3:
        level *= np.linspace(1.0, float(r.uniform(0.5, 2.0)), n)
    y = level * np.exp(r.normal(0.0, float(r.choice([0.002, 0.01, 0.02, 0.05])), n))
    for i in r.integers(0, n, int(r.integers(0, 3))):
        y[i] *= float(r.uniform(1.5, 3.0))
    if r.random() < 0.2:  # quantised values: exact ties in the costs
        y = np.round(y, 2) + 0.01
    return list(y)


@pytest.mark.parametrize("seed", range(60))
def test_segment_matches_reference(seed: int) -> None:
    y = np.log(np.asarray(random_series(seed)))
    sigma = max(noise_scale(y), 0.005)
    for penalty in (auto_penalty(y.size, sigma), 0.5 * sigma, 0.0):
        assert segment(y, penalty) == reference_segment(y, penalty)
    assert segment(y, auto_penalty(y.size, sigma), 3) == reference_segment(y, auto_penalty(y.size, sigma), 3)


@pytest.mark.parametrize("seed", range(200))
def test_cliffs_match_reference(seed: int) -> None:
    ys = random_series(seed)
    xs = [f"x{i}" for i in range(len(ys))]
    for cfg in (DEFAULT_CLIFF_CONFIG, CliffConfig(min_jump=0.03)):
        got = [(c.index, c.factor) for c in find_cliffs(xs, ys, cfg)]
        assert got == reference_cliffs(ys, cfg)


def test_constant_and_step_series() -> None:
    xs = [f"x{i}" for i in range(40)]
    for ys in ([1.0] * 40, [1.0] * 20 + [1.5] * 20, [1.0, 2.0] * 20, [1.0] * 10 + [1.5] * 10 + [1.0] * 20):
        assert [(c.index, c.factor) for c in find_cliffs(xs, ys)] == reference_cliffs(ys)
