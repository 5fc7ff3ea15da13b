"""What a triaged cell says of the cost model's prediction next to its measured slowdown."""

from __future__ import annotations

from ktriage.predict.model import Prediction
from ktriage.triage.model import CellTriage
from ktriage.triage.pipeline import _predicted_note


def _cell(ratio: float) -> CellTriage:
    return CellTriage("layer_norm", "bwd", 3, "N=4608", "liger", 1.0, ratio, ratio, "regression", "regression", False)


def _neutral(ratio: float, low: float, high: float) -> Prediction:
    return Prediction(ratio, low, high, "neutral", False, 0.05)


def test_a_prediction_leaning_slower_keeps_the_kernel_a_suspect() -> None:
    c = _cell(1.10)
    _predicted_note(c, [_neutral(1.01, 0.98, 1.04), _neutral(1.084, 1.045, 1.125)], 0.05)
    (note,) = c.notes
    assert note.startswith("the compile-side change leans toward the slowdown (measured +10.0%; predicted +8%")
    assert "profile the kernels" in note and "no compile-side change" not in note


def test_a_prediction_within_the_gate_points_elsewhere() -> None:
    c = _cell(1.10)
    _predicted_note(c, [_neutral(1.01, 0.98, 1.04)], 0.05)
    (note,) = c.notes
    assert note.startswith("no compile-side change predicts the measured slowdown (measured +10.0%;")
    assert "within the ±5% gate" in note


def test_the_notes_name_the_gate_the_user_gave() -> None:
    """``:.0%`` wrote triage's --threshold 2.5 as "+-2%" in the notes (the header said 2.5 %)."""
    within, leaning = _cell(1.10), _cell(1.10)
    _predicted_note(within, [Prediction(1.01, 0.99, 1.02, "neutral", False, 0.025)], 0.025)
    _predicted_note(leaning, [Prediction(1.04, 1.01, 1.07, "neutral", False, 0.025)], 0.025)
    assert "within the ±2.5% gate" in within.notes[0]
    assert "its point beyond the ±2.5% gate" in leaning.notes[0]


def test_the_notes_send_each_reader_to_a_time_bisect_in_its_own_words() -> None:
    """The notes said "bisect by timing (ktriage bisect --metric latency)" to kt.triage's callers too; the
    command's report reads the command line, the library's text the api's function and keyword."""
    from ktriage.errors import in_flags

    leaning, within = _cell(1.10), _cell(1.10)
    _predicted_note(leaning, [_neutral(1.084, 1.045, 1.125)], 0.05)
    _predicted_note(within, [_neutral(1.01, 0.98, 1.04)], 0.05)
    for note in (leaning.notes[0], within.notes[0]):
        assert "bisect by timing (ktriage bisect --metric latency)" in in_flags(note), in_flags(note)
        assert "bisect by timing (kt.bisect with metric='latency' (--metric latency))" in note, note
    assert "profile the kernels (ktriage profile); bisect" in in_flags(leaning.notes[0])
    assert "profile the kernels (kt.profile); bisect" in leaning.notes[0]
