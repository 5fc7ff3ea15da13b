"""The magnitude gate's one check: each verb refuses the other verbs' spelling of it instead of
reading 5 (meant as 5 %) as a 500 % gate, or triage's 0.05 (meant as 5 %) as a 0.05 % one."""

from __future__ import annotations

import pytest

from ktriage.errors import KtriageError
from ktriage.stats.gate import check_gate, gate_percent


@pytest.mark.parametrize("threshold", [0.05, 0.5, 0.999])
def test_a_fraction_is_a_gate(threshold: float) -> None:
    check_gate(threshold)


@pytest.mark.parametrize(
    ("threshold", "percent", "problem", "fix"),
    [
        (
            5.0,
            False,
            "threshold=5 (--threshold 5) is a fraction here: a 500% gate",
            "pass threshold=0.05 (--threshold 0.05)",
        ),
        (1.0, False, "a 100% gate", "pass threshold=0.01 (--threshold 0.01)"),
        (0.0, False, "threshold=0 (--threshold 0) is not a gate", "threshold=0.05 (--threshold 0.05)"),
        (
            -1.0,
            False,
            "threshold=-1 (--threshold -1) is not a gate",
            "threshold=0.05 (--threshold 0.05) for a 5% gate",
        ),
        (-0.05, False, "is not a gate", "positive"),
        (float("nan"), False, "is not a gate", "positive"),
        (0.0005, True, "--threshold 0.05 is in percent: a 0.05% gate", "pass --threshold 5"),
        (1.5, True, "--threshold 150 would be a 150% gate", "--threshold 10"),
        (-0.05, True, "--threshold -5 is not a gate", "--threshold 5 for a 5% gate"),
    ],
)
def test_a_gate_no_one_means_is_refused_with_the_likely_spelling(
    threshold: float, percent: bool, problem: str, fix: str
) -> None:
    with pytest.raises(KtriageError) as err:
        check_gate(threshold, percent=percent)
    assert problem in err.value.problem and err.value.fix and fix in err.value.fix


def test_explain_may_gate_at_zero_and_triage_at_one_percent() -> None:
    check_gate(0.0, allow_zero=True)
    check_gate(0.01, percent=True)


@pytest.mark.parametrize(
    ("threshold", "problem", "fix"),
    [
        (10.0, "threshold=10 is a fraction here: a 1000% gate", "pass threshold=0.1 (--threshold 10)"),
        (-0.1, "threshold=-0.1 (--threshold -10) is not a gate", "threshold=0.1 (--threshold 10) for a 10% gate"),
    ],
)
def test_triages_library_gate_is_told_in_both_spellings(threshold: float, problem: str, fix: str) -> None:
    """kt.triage takes a fraction, its command percent: ``--threshold 10 is a fraction here ... pass
    --threshold 0.1`` told the caller a flag the command reads as a 0.1 % gate."""
    with pytest.raises(KtriageError) as err:
        check_gate(threshold, flag_percent=True)
    assert problem in err.value.problem and err.value.fix and fix in err.value.fix
    assert "--threshold 0.1)" not in err.value.fix


@pytest.mark.parametrize(
    ("threshold", "words"),
    [(0.05, "5%"), (0.1, "10%"), (0.07, "7%"), (0.025, "2.5%"), (0.125, "12.5%"), (0.0, "0%"), (0.0125, "1.25%")],
)
def test_the_gate_is_written_as_the_user_gave_it(threshold: float, words: str) -> None:
    """Whole percents as such, others with the decimals they need (``:.0%`` made 0.025 "2%"); 0.07 * 100 is
    7.000000000000001 in floating point, and still "7%"."""
    assert gate_percent(threshold) == words
