"""`ktriage triage` on the six-op TritonBench A/A pair recorded on the H200 (benchmarks/triage/tritonbench_aa:
same software, minutes apart): CSV and JSON both parse, the software has 0 regressions, and every cell
TritonBench moved past 10 % is named not-the-compiler (the same toolchain on both sides), never
"unexplained", also for the torch baselines and for ops whose first CSV column is an input tuple."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ktriage.cli.app import main
from ktriage.measure.tritonbench_format import read_tritonbench

AA = Path(__file__).resolve().parents[2] / "benchmarks" / "triage" / "tritonbench_aa"
OPS = {"layer_norm": 60, "embedding": 32, "rms_norm": 12, "swiglu": 8, "geglu": 8, "cross_entropy": 12}


@pytest.mark.parametrize("op", sorted(OPS))
def test_csv_and_json_of_one_run_are_the_same_cells(op: str) -> None:
    _, from_csv = read_tritonbench(AA / f"{op}_bwd_run1.csv")
    _, from_json = read_tritonbench(AA / f"{op}_bwd_run1.json")
    assert len(from_csv) == OPS[op]
    key = lambda c: (c.key.op, c.key.mode, c.key.input_id, c.key.backend)  # noqa: E731
    assert {key(c): c.samples_ms for c in from_csv} == {key(c): c.samples_ms for c in from_json}


@pytest.mark.parametrize("op", sorted(OPS))
def test_the_six_op_aa_pair_has_no_regression(op: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "triage.json"
    code = main(
        [
            "triage",
            str(AA / f"{op}_bwd_run1.csv"),
            str(AA / f"{op}_bwd_run2.csv"),
            "--old-toolchain",
            "triton==3.6.0",
            "--new-toolchain",
            "triton==3.6.0",
            "-o",
            str(out),
        ]
    )
    capsys.readouterr()
    report = json.loads(out.read_text())
    assert code == 0 and report["complete"]
    assert report["compared"] == OPS[op]
    assert report["counts"]["regression"] == 0 and report["counts"]["unexplained"] == 0
    assert all(c["compile_change"] is False for c in report["cells"])
