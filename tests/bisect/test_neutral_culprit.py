"""The note a compile-only bisect adds when its culprit's change is predicted neutral."""

from __future__ import annotations

from ktriage.bisect.run import neutral_culprit_note
from ktriage.predict.model import Prediction


def _p(ratio: float, low: float, high: float, kind: str = "neutral") -> Prediction:
    return Prediction(ratio, low, high, kind, False, 0.05)


def test_a_culprit_predicted_within_the_gate_is_said_so() -> None:
    note = neutral_culprit_note([_p(1.01, 0.98, 1.04), _p(0.99, 0.96, 1.02)])
    assert note is not None and "predicted neutral (within the ±5% gate)" in note and "--metric latency" in note


def test_a_culprit_leaning_slower_names_its_point() -> None:
    note = neutral_culprit_note([_p(1.01, 0.98, 1.04), _p(1.084, 1.045, 1.125)])
    assert note is not None
    assert "its point leans slower, +8%, but the interval reaches inside the ±5% gate" in note


def test_no_note_where_some_change_is_called() -> None:
    assert neutral_culprit_note([_p(1.3, 1.2, 1.4, "regression"), _p(1.0, 0.97, 1.03)]) is None
    assert neutral_culprit_note([]) is None
