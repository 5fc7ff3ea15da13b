"""``ktriage.api.triage`` takes its arguments as the library does (a fraction for the gate, the command's
10 % by default), takes a side already loaded, and refuses a typo in a toolchain or target before
anything compiles (a KtriageError, exit 2 on the command line; it was a failed step, exit 4). Real
TritonBench CSVs of the H200, no fakes; bisect and fixes are off and nothing compiles."""

from __future__ import annotations

from pathlib import Path

import pytest

import ktriage.api as kt
from ktriage.compare.sides import load_side
from ktriage.errors import KtriageError

DATA = Path(__file__).resolve().parents[2] / "tests" / "data" / "tritonbench"
OLD, NEW = DATA / "layer_norm_bwd_run1.csv", DATA / "layer_norm_bwd_run2.csv"
QUICK = {"bisect": False, "fixes": False, "old_toolchain": "triton==3.4.0", "new_toolchain": "triton==3.4.0"}


def test_the_library_gate_is_a_fraction_and_its_refusal_says_so() -> None:
    with pytest.raises(KtriageError) as err:
        kt.triage(old=OLD, new=NEW, threshold=10, **QUICK)
    assert "threshold=10 is a fraction here" in err.value.problem
    assert "pass threshold=0.1 (--threshold 10)" in (err.value.fix or "")  # the command's flag is in percent
    assert "in percent" not in str(err.value)


def test_the_default_gate_is_the_commands_and_a_loaded_side_is_taken() -> None:
    report = kt.triage(old=load_side(str(OLD)), new=NEW, **QUICK)
    assert report.options.threshold == 0.10 and "past the ±10% gate" in report.headline()


@pytest.mark.parametrize(
    ("given", "problem"),
    [
        ({"old_toolchain": "tritn==3.3.1"}, "unknown toolchain spec key 'tritn'"),
        ({"arch": "sm_1"}, "unknown or unsupported GPU target 'sm_1'"),
        ({"old": 42}, "not a int"),
        ({"jobs": 0}, r"jobs \(--jobs\) 0 is out of range"),
        ({"max_time": float("nan")}, "max_time"),
    ],
)
def test_a_typo_is_refused_before_anything_runs(given: dict[str, object], problem: str) -> None:
    args: dict[str, object] = {"old": OLD, "new": NEW, **QUICK, **given}
    with pytest.raises(KtriageError, match=problem):
        kt.triage(**args)  # type: ignore[arg-type]


def test_the_target_is_read_in_any_spelling_the_command_takes() -> None:
    assert kt.triage(old=OLD, new=NEW, arch="9.0", **QUICK).options.arch == "sm_90"
