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
    assert r.exit_code == 2 and "fix:" in r.stderr and "--fail-on regression" in r.stderr
