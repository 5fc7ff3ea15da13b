"""Change points (Apache Otava through ktriage.stats.changepoints) on series read back from a real
SQLite store: 30 synthetic nightly runs written with the store's own API, seeded, with night-to-night
noise (1.5% CV on the median, 1% within a run)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from ktriage.errors import KtriageError
from ktriage.stats.changepoints import detect_change_points
from ktriage.store import open_store
from ktriage.store.history import HistoryQuery, cell_history
from ktriage.testing import fake_nightly_runs


def _stored_series(tmp_path: Path, **kw: object) -> list[float]:
    url = f"sqlite:///{tmp_path / 'nightly.db'}"
    with open_store(url) as store:
        for run, cells in fake_nightly_runs(**kw):  # type: ignore[arg-type]
            store.import_run(run, cells)
        series = cell_history(store, HistoryQuery(op="layer_norm", backend="liger_layer_norm", inputs=("7",)))
    (points,) = series.values()
    assert len(points) == 30
    return [p.median_ms for p in points if p.median_ms is not None]


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_planted_step_is_found_at_its_run(tmp_path: Path, seed: int) -> None:
    values = _stored_series(tmp_path, seed=seed, step_at=18, step=0.15)
    (cp,) = detect_change_points(values)
    assert cp.index == 18  # the first run at the new level
    assert cp.pvalue < 1e-6
    assert 10 < cp.step_pct < 20
    assert cp.mean_after > cp.mean_before


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_flat_noisy_series_has_no_change_point(tmp_path: Path, seed: int) -> None:
    values = _stored_series(tmp_path, seed=seed, step_at=None)
    assert float(np.std(values) / np.mean(values)) > 0.008  # it is noisy
    assert detect_change_points(values) == []


def test_one_outlying_run_is_not_a_level() -> None:
    rng = np.random.default_rng(5)
    values = [0.41 * float(np.exp(rng.normal(0, 0.01))) for _ in range(30)]
    values[-1] *= 1.2  # the last night ran throttled
    assert detect_change_points(values) == []
    # with min_segment=1 one run may be a level of its own
    assert [cp.index for cp in detect_change_points(values, min_segment=1)] == [29]


def test_short_and_bad_input() -> None:
    assert detect_change_points([1.0, 2.0, 3.0]) == []
    with pytest.raises(KtriageError):
        detect_change_points([1.0] * 10, max_pvalue=2.0)
    with pytest.raises(KtriageError):
        detect_change_points([1.0, float("nan"), 1.0, 1.0])
