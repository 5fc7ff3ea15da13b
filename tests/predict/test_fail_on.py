"""`ktriage explain --fail-on`: the compile-only CI gate, on real compiles of Liger layer_norm bwd
(Triton 3.3.1 -> 3.4.0, sm_90): N=4608 is the spill cliff (a predicted regression of several
times: exit 1), N=2560 moves registers only (200 -> 232) (predicted neutral: exit 0 with --fail-on regression,
exit 1 with --fail-on any). Bad values exit 2 naming the fix."""

from __future__ import annotations

import json

import pytest

pytestmark = pytest.mark.slow
BASE = ["explain", "liger.layer_norm", "--bwd", "--arch", "sm_90", "-t", "triton==3.3.1", "-t", "triton==3.4.0"]


def test_fail_on_regression_exits_1_on_the_spill_cliff(run_cli) -> None:
    r = run_cli(BASE + ["--input", "N=4608", "--fail-on", "regression", "--format", "json"])
    assert r.exit_code == 1, r.stderr
    data = json.loads(r.stdout)
    prediction = data["kernels"][0]["comparisons"][0]["prediction"]
    assert prediction["kind"] == "regression" and prediction["low"] > 1.05 and prediction["ratio"] > 2.5
    assert data["grouped_findings"][0]["kind"] == "regression"
    assert "LDL" in data["grouped_findings"][0]["prediction"]["text"]


def test_fail_on_regression_passes_a_neutral_change_and_any_does_not(run_cli) -> None:
    r = run_cli(BASE + ["--input", "N=2560", "--fail-on", "regression", "--format", "json"])
    assert r.exit_code == 0, r.stderr
    data = json.loads(r.stdout)
    kinds = [g["kind"] for g in data["grouped_findings"]]
    assert kinds and "regression" not in kinds
    assert run_cli(BASE + ["--input", "N=2560", "--fail-on", "any"]).exit_code == 1


def test_fail_on_rejects_other_values(run_cli) -> None:
    r = run_cli(BASE + ["--input", "N=2560", "--fail-on", "slower"])
    assert r.exit_code == 2 and "fix:" in r.err_text and "--fail-on regression" in r.err_text


def test_a_gate_written_in_percent_is_refused_not_read_as_500_percent(run_cli) -> None:
    """--threshold 5 (meant as 5 %) would gate at +500 % and pass the +461 % spill cliff: refused."""
    r = run_cli(BASE + ["--input", "N=4608", "--fail-on", "regression", "--threshold", "5"])
    assert r.exit_code == 2 and "is a fraction here: a 500% gate" in r.err_text
    assert "error: --threshold 5 is a fraction here" in r.err_text and "pass --threshold 0.05" in r.err_text


def test_a_fix_toolchain_without_fixes_is_refused_not_ignored(run_cli) -> None:
    r = run_cli(BASE + ["--input", "N=4608", "--fix-toolchain", "triton==3.5.1"])
    assert (
        r.exit_code == 2
        and "--fix-toolchain names toolchains to try as fixes, but --fixes was not given" in r.err_text
        and "add --fixes, or drop --fix-toolchain" in r.err_text
    )


def test_fixes_carry_the_predicted_gain(run_cli) -> None:
    """--fixes on the spill cliff: the verified num_warps 4 -> 8 config is predicted much faster than the
    kernel as compiled with 3.4.0, about as fast as 3.3.1's, and listed first (ranked by predicted gain)."""
    r = run_cli(BASE + ["--input", "N=4608", "--fixes", "--format", "json"])
    assert r.exit_code == 0, r.stderr
    fixes = json.loads(r.stdout)["fixes"]
    priced = [f for f in fixes if f["prediction"]]
    assert priced and fixes[0] is priced[0] and fixes[0]["kind"] == "spill-free-config" and fixes[0]["verified"]
    gain, vs_ref = fixes[0]["prediction"]["vs_current"], fixes[0]["prediction"]["vs_reference"]
    assert gain["ratio"] < 0.5 and gain["kind"] == "improvement" and vs_ref["ratio"] < 1.2
    assert "predicted -" in fixes[0]["effect"] and "against triton==3.3.1" in fixes[0]["effect"]
    ratios = [f["prediction"]["vs_current"]["ratio"] for f in priced]
    assert ratios == sorted(ratios)


def test_a_gate_or_fixes_with_one_toolchain_is_refused(run_cli) -> None:
    """One toolchain has nothing to compare: `-t triton==3.4.0 --fail-on any` on the kernel that spills 3712 B
    printed "--fail-on any: passed" (exit 0), and --fixes "no fix to propose". Refused before any compile."""
    one = ["explain", "liger.layer_norm", "--bwd", "-t", "triton==3.4.0", "--input", "N=4608"]
    r = run_cli([*one, "--fail-on", "any"])
    assert r.exit_code == 2 and r.problem == (
        "--fail-on needs a toolchain judged against a reference, and triton==3.4.0 is the only one given: "
        "the gate could never fire"
    ), r.output
    assert r.fix == (
        "give the reference first and the toolchain to judge after it, e.g. -t triton==3.3.1 -t triton==3.4.0"
    )
    r = run_cli([*one, "--fixes"])
    assert r.exit_code == 2 and r.problem.endswith("is the only one given: there is no finding to fix"), r.output
