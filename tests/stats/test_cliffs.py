"""Cliff detection on synthetic sweeps (fake series with known steps)."""

from __future__ import annotations

import numpy as np
import pytest

from ktriage.stats.cliffs import CliffConfig, find_cliffs, segment, sweeps

XS = [f"N={1024 + 512 * i}" for i in range(30)]


def noisy(values, cv: float, seed: int) -> list[float]:
    r = np.random.default_rng(seed)
    return list(np.asarray(values, dtype=float) * np.exp(r.normal(0, cv, len(values))))


@pytest.mark.parametrize("seed", range(5))
def test_one_step(seed: int) -> None:
    ys = noisy([1.0] * 7 + [1.8] * 23, 0.01, seed)
    cliffs = find_cliffs(XS, ys, series="liger / torch")
    assert len(cliffs) == 1
    c = cliffs[0]
    assert (c.x_before, c.x_after, c.index) == ("N=4096", "N=4608", 7)
    assert 1.75 < c.factor < 1.85 and 0.98 < c.level_before < 1.02 and c.direction == "up"
    assert (
        c.describe()
        == f"liger / torch: cliff between N=4096 and N=4608: {c.level_before:.3g} -> {c.level_after:.3g} (x{c.factor:.2f})"
    )


def test_two_steps_up_and_down() -> None:
    ys = noisy([1.0] * 10 + [1.5] * 10 + [0.9] * 10, 0.02, 1)
    cliffs = find_cliffs(XS, ys)
    assert [(c.x_before, c.x_after) for c in cliffs] == [("N=5632", "N=6144"), ("N=10752", "N=11264")]
    assert cliffs[0].direction == "up" and cliffs[1].direction == "down"


@pytest.mark.parametrize("where", [1, 10, 14, 27])
def test_single_outlier_is_not_a_cliff(where: int) -> None:
    ys = noisy([1.0] * 30, 0.01, where)
    ys[where] *= 2.5
    assert find_cliffs(XS, ys) == []


@pytest.mark.parametrize("seed", range(5))
def test_noisy_ramp_is_not_a_cliff(seed: int) -> None:
    assert find_cliffs(XS, noisy(np.linspace(1.0, 2.0, 30), 0.02, seed)) == []
    assert find_cliffs(XS, noisy(np.linspace(1.0, 3.0, 30), 0.02, seed)) == []


def test_step_on_a_ramp_is_found() -> None:
    ys = noisy(np.linspace(1.0, 1.5, 30) * np.r_[np.ones(15), np.full(15, 1.5)], 0.01, 2)
    cliffs = find_cliffs(XS, ys)
    assert [(c.x_before, c.x_after) for c in cliffs] == [("N=8192", "N=8704")]


def test_small_steps_and_flat_noise_are_not_cliffs() -> None:
    assert find_cliffs(XS, noisy([1.0] * 15 + [1.05] * 15, 0.005, 3)) == []  # under the 10% jump gate
    assert find_cliffs(XS, noisy([1.0] * 30, 0.04, 4)) == []
    assert len(find_cliffs(XS, noisy([1.0] * 15 + [1.05] * 15, 0.005, 3), CliffConfig(min_jump=0.03))) == 1


def test_missing_points_are_skipped() -> None:
    ys: list[float | None] = list(noisy([1.0] * 8 + [2.0] * 22, 0.01, 5))
    ys[7] = None  # the input just before the cliff errored
    ys[20] = float("nan")
    cliffs = find_cliffs(XS, ys)
    assert [(c.x_before, c.x_after) for c in cliffs] == [("N=4096", "N=5120")]


def test_jump_at_the_last_input_is_not_reported() -> None:
    # One point past the jump cannot be told from one noisy point (documented limitation).
    assert find_cliffs(XS, noisy([1.0] * 29 + [2.0], 0.01, 6)) == []
    assert len(find_cliffs(XS, noisy([1.0] * 28 + [2.0] * 2, 0.01, 6))) == 1


def test_segment_is_exact_on_clean_steps() -> None:
    y = np.log([1.0] * 5 + [2.0] * 5 + [4.0] * 5)
    assert segment(y, penalty=0.1) == [5, 10]
    assert segment(y, penalty=100.0) == []


def test_mismatched_lengths_raise() -> None:
    with pytest.raises(ValueError):
        find_cliffs(["a", "b"], [1.0])


# TritonBench's embedding sweep: two (B, T, D) families, each over V = 2**10..2**17.
EMBEDDING = [f"({b}, {t}, {d}, {2**e})" for b, t, d in [(32, 512, 768), (8, 2048, 4096)] for e in range(10, 18)]


def test_no_cliff_between_two_input_families() -> None:
    # Flat within each family, a level apart between them (as liger_embedding's ratio to torch is):
    # the step from (32, 512, 768, 131072) to (8, 2048, 4096, 1024) changes every dimension.
    ys = noisy([0.155] * 8 + [0.199] * 8, 0.01, 7)
    assert find_cliffs(EMBEDDING, ys) == []
    assert len(find_cliffs([f"V={2**e}" for e in range(16)], ys)) == 1  # the same values along one sweep: a cliff


def test_cliff_inside_the_second_family_keeps_its_index() -> None:
    ys = noisy([0.155] * 8 + [0.2] * 4 + [0.4] * 4, 0.01, 8)
    (cliff,) = find_cliffs(EMBEDDING, ys)
    assert (cliff.x_before, cliff.x_after, cliff.index) == ("(8, 2048, 4096, 8192)", "(8, 2048, 4096, 16384)", 12)


def test_sweeps_split_where_another_dimension_changes() -> None:
    assert sweeps(EMBEDDING) == [range(0, 8), range(8, 16)]
    assert sweeps(XS) == [range(0, 30)]  # layer_norm: N varies, M fixed
    # rope: T at H=8192, then H at T=2048; (8192, 2048) is on both sweeps, so it ends one and starts the next
    rope = [f"H={h},T={t}" for h, t in [(8192, 1024), (8192, 2048), (2048, 2048), (512, 2048)]]
    assert sweeps(rope) == [range(0, 2), range(1, 4)]
    # one quantity written more than once, or scaled, is one dimension: a square matmul, a recorded kernel
    assert sweeps([f"M={n},N={n},K={n}" for n in (512, 1000, 2048)]) == [range(0, 3)]
    flce = [f"{r}x128256,{r} n_cols=128256 n_non_ignore={32 * r}" for r in (128, 256, 512, 1024)]
    assert sweeps(flce) == [range(0, 4)]
    # a constexpr derived from the swept size (the next power of two) steps with it by another factor,
    # at the very steps its cliffs are at: still one sweep (cut there, the cliff had no neighbours)
    pow2 = [f"x_ptr=4096x{n},n_cols={n},BLOCK_SIZE={1 << (n - 1).bit_length()}" for n in range(1024, 8193, 512)]
    assert sweeps(pow2) == [range(0, len(pow2))]
    # another form of label (another kernel of a recorded workload) is another sweep; so is a name
    assert sweeps(["4096x4096 n_cols=4096", "4096x4096", "a", "b", "b"]) == [
        range(0, 1),
        range(1, 2),
        range(2, 3),
        range(3, 5),
    ]
    assert sweeps([]) == []


def test_a_cliff_where_a_derived_block_size_steps_is_found() -> None:
    """A recorded kernel's label carries BLOCK_SIZE, the next power of two of n_cols: it doubles between
    n_cols=4096 and 4608, where Liger's layer_norm bwd starts spilling. The cliff there is reported."""
    cols = [1024 + 512 * i for i in range(30)]
    xs = [f"X_ptr=4096x{n},n_cols={n},BLOCK_SIZE={1 << (n - 1).bit_length()}" for n in cols]
    ys = noisy([1.0 if n <= 4096 else 3.0 for n in cols], 0.01, 7)
    cliffs = find_cliffs(xs, ys)
    assert len(cliffs) == 1 and xs[cliffs[0].index].startswith("X_ptr=4096x4608,"), cliffs
