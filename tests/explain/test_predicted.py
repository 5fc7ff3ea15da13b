"""How a change predicted neutral is worded: within the gate, or leaning to one side of it."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from ktriage.explain.predicted import gate_line, prediction_text
from ktriage.predict.model import Contributor, Params, Prediction, interval_text, lean_text, load_params


def _neutral(ratio: float, low: float, high: float) -> Prediction:
    return Prediction(ratio, low, high, "neutral", False, 0.05)


def test_a_neutral_point_inside_the_gate_reads_within_it() -> None:
    p = _neutral(1.002, 0.97, 1.035)
    assert p.lean is None and p.to_json()["lean"] is None
    assert prediction_text([p]) == "change predicted neutral (+0.2% [-3%, +3%]; within the ±5% gate)"


def test_the_gate_reads_as_the_user_gave_it() -> None:
    """``:.0%`` wrote --threshold 0.025 as "+-2%" and 0.125 as "+-12%": a gate the user did not give, in the
    gate line and in every bullet that names the gate."""
    assert gate_line(0.025).startswith("Gate: ±2.5% (--threshold):")
    assert gate_line(0.05).startswith("Gate: ±5% (--threshold):")
    inside = Prediction(1.002, 0.97, 1.035, "neutral", False, 0.125)
    assert prediction_text([inside]).endswith("within the ±12.5% gate)")
    leaning = Prediction(1.04, 1.01, 1.07, "neutral", False, 0.025)
    assert "beyond the ±2.5% gate" in lean_text("regression", 0.025)
    assert "beyond the ±2.5% gate" in prediction_text([leaning])


def test_a_neutral_point_beyond_the_gate_says_which_side_it_leans() -> None:
    faster = _neutral(0.924, 0.894, 0.955)  # tb_welford_fwd held out: measured 0.915
    assert faster.lean == "improvement" and faster.to_json()["lean"] == "improvement"
    words = "leans faster: the point is beyond the ±5% gate, the interval reaches inside it"
    assert words in prediction_text([faster])
    slower = _neutral(1.084, 1.045, 1.125)
    assert slower.lean == "regression"
    assert "leans slower" in prediction_text([slower, _neutral(1.0, 0.97, 1.03)])


def test_a_lean_quotes_how_often_the_calibrations_leans_held() -> None:
    """The shipped fit records its held-out leans; a lean quotes them (at the fit's threshold only)."""
    params = load_params()
    counts = params.cv["leans"]["improvement"]
    assert counts["neutral"] > 0
    words = lean_text("improvement", 0.05, params)
    assert f"{counts['measured_improvement']} of {counts['neutral']} such held-out leans measured faster" in words
    assert "held-out leans" not in lean_text("improvement", 0.10, params)
    assert "held-out leans" not in lean_text("improvement", 0.05, Params())


def test_called_and_identical_predictions_do_not_lean() -> None:
    assert Prediction(1.3, 1.2, 1.4, "regression", False, 0.05).lean is None
    assert Prediction(1.0, 1.0, 1.0, "neutral", True, 0.05).lean is None


def test_an_interval_near_the_gate_is_written_on_its_side_of_the_gate() -> None:
    """Rounded to the nearest percent, tb_welford_fwd's held-out interval 0.893..0.953 read "[-11 %, -5 %]",
    wholly beyond the -5 % gate, next to "the interval reaches inside it". Within a point of the gate an end
    is written with one decimal, rounded outward; elsewhere as before."""
    welford = _neutral(0.923, 0.8935, 0.9534)
    assert welford.interval_text() == "[-11%, -4.6%]"
    assert "-8% [-11%, -4.6%]" in prediction_text([welford])
    assert interval_text(1.0497, 1.12) == "[+4.9%, +12%]"  # just inside the +5% gate: still inside it
    assert interval_text(0.9516, 1.01) == "[-4.9%, +1%]"  # just beyond 1/1.05 (-4.76%), not rounded into it
    assert interval_text(0.97, 1.035) == "[-3%, +3%]"  # far from the gate: as pct writes it


def test_a_sweep_bullet_names_the_input_its_prediction_is_of() -> None:
    """A bullet quotes its largest prediction; where its inputs are predicted differently it says which input
    that is (the bullet's "worst at" names the input of the largest resource change, another one)."""
    spill = Prediction(5.61, 5.43, 5.79, "regression", False, 0.05)
    less = Prediction(5.56, 5.38, 5.74, "regression", False, 0.05)
    text = prediction_text([less, spill], ["N=4608", "N=8192"])
    assert text.startswith("predicted +461% [") and " at N=8192, the largest of 2 inputs" in text
    assert " at " not in prediction_text([spill, spill], ["N=4608", "N=8192"])  # all alike: no input to name
    assert " at " not in prediction_text([less, spill])  # no labels given


def test_two_releases_emitting_the_same_cubin_are_identical_whatever_their_line_paths() -> None:
    """Triton 3.5.0 and 3.5.1 emit the same cubin for Liger's layer_norm bwd; only the line table's
    path of the inlined ``tl.sum`` differs (each release's own environment). They are one toolchain
    reported once, not two bullets with the same words (3.6.0, with other registers, stays apart)."""
    from dataclasses import replace
    from types import SimpleNamespace
    from typing import Any, cast

    from ktriage.analyze.lines import LineStats
    from ktriage.analyze.resources import Resources
    from ktriage.explain.engine import ExplainResult, KernelResult, SpecExplain
    from ktriage.explain.predicted import identical_toolchains

    def lines(env: str) -> tuple[LineStats, ...]:
        return (
            LineStats(
                "triton/language/standard.py", 263, f"/home/envs/{env}/triton/language/standard.py", instructions=4
            ),
        )

    base = Resources("k", "sm_90", 32, 0, 0, 0, 0, 0, None, 0, 0, sass_opcodes={"FADD": 4}, source_lines=lines("a"))
    occupancy = object()
    tcs = [cast(Any, SimpleNamespace(id=i)) for i in ("ref", "t350", "t351", "t360")]

    def result(tc: Any, resources: Resources) -> KernelResult:
        return KernelResult(tc, cast(Any, None), resources, cast(Any, occupancy))

    results = {
        "ref": result(tcs[0], replace(base, registers=40)),
        "t350": result(tcs[1], replace(base, source_lines=lines("triton-3.5.0"))),
        "t351": result(tcs[2], replace(base, source_lines=lines("triton-3.5.1"))),
        "t360": result(tcs[3], replace(base, registers=33, source_lines=lines("triton-3.5.1"))),
    }
    explained = ExplainResult(tcs, [SpecExplain(cast(Any, None), cast(Any, results))])
    assert identical_toolchains(explained) == {"t351": "t350"}


@pytest.mark.slow
def test_the_instructions_contributor_counts_what_it_prices(toolchain) -> None:  # type: ignore[no-untyped-def]
    """The H200 recording of Liger's fused-linear cross entropy forward (three innermost loops), 3.3.1 ->
    3.6.0: the evidence says "main loop 824 -> 782 instructions (-42)" with LDL/STL -2, and the
    contributor said "main loop -41 instructions (arithmetic and control)": it counted every category
    over all three loops under the main loop's name. It now counts the arithmetic and control
    instructions it prices (the main loop's -40 and another loop's +1), and says over which loops."""
    import ktriage.api as kt

    workload = Path(__file__).resolve().parents[2] / "benchmarks/record/h200c/tb_flce_fwd.workload.json.gz"
    toolchain("triton==3.3.1"), toolchain("triton==3.6.0")
    report = kt.explain(target=str(workload), toolchains=["triton==3.3.1", "triton==3.6.0"])
    (bullet,) = [g.summary() for g in report.groups]
    assert "main loop 824 -> 782 instructions (-42)" in bullet and "LDL.LU -1, STL -1" in bullet
    assert "-39 arithmetic and control instructions in the innermost loops" in bullet
    assert "main loop -41" not in bullet


def test_a_change_that_rounds_to_nothing_has_no_minus_sign() -> None:
    """A ratio of 0.9999 read "predicted -0.0 %" in triage's notes: a speedup of nothing, signed."""
    assert prediction_text([_neutral(0.9999, 0.967, 1.033)]).startswith("change predicted neutral (+0.0% [")
    assert prediction_text([_neutral(0.996, 0.964, 1.029)]).startswith("change predicted neutral (-0.4% [")


def test_a_contributor_reads_its_evidence_first_and_its_share_as_its_own() -> None:
    """A prediction read "predicted +4% [+0.5%, +7%]: -23%: 24 more LDG/STG in the main loop ...": the cell's
    predicted change, then a contributor's share, two percentages in a row with different meanings (the -23%
    read as a second prediction). Every surface writes a prediction through ``Prediction.text`` (explain's
    bullets, bisect's and triage's notes), so one home words the contributors: evidence first, the share said
    to be the aspect's own."""
    global_memory = Contributor("global", -0.23, "24 more LDG/STG in the main loop (global memory)")
    spills = Contributor("spills", 0.30, "830 more LDL/STL in the main loop (local memory (spills))")
    p = Prediction(1.04, 1.005, 1.07, "neutral", False, 0.05, (spills, global_memory))
    assert p.text() == (
        "predicted +4% [+0.5%, +7%]: 830 more LDL/STL in the main loop (local memory (spills)), +30% on its own; "
        "24 more LDG/STG in the main loop (global memory), -23% on its own"
    )
    assert prediction_text([p]) == (
        "change predicted neutral (+4% [+0.5%, +7%]: 830 more LDL/STL in the main loop (local memory (spills)), "
        "+30% on its own; within the ±5% gate)"
    )
    called = Prediction(1.63, 1.57, 1.68, "regression", False, 0.05, (global_memory,))
    assert prediction_text([called]).startswith("predicted +63% [+57%, +68%]: 24 more LDG/STG")
    for text in (p.text(), prediction_text([p]), prediction_text([called])):
        assert not re.search(r"%\]?: [+-]\d", text), text  # no percentage right after another one's colon
    assert p.to_json()["contributors"][1]["text"] == global_memory.text()  # the JSON's text is the same words
