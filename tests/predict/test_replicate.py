"""The second GPU run of the calibration's cells (benchmarks/calibration/replicate/): the committed
comparison reproduces from the committed data, and what the closing notes quote from it holds."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

REPLICATE = Path(__file__).resolve().parents[2] / "benchmarks" / "calibration" / "replicate"


def test_the_agreement_of_two_gpu_runs_reproduces_from_the_committed_data(tmp_path: Path) -> None:
    out = tmp_path / "agreement.md"
    subprocess.run(
        [sys.executable, str(REPLICATE / "agreement.py"), "--out", str(out)], check=True, capture_output=True
    )
    text = out.read_text()
    assert text == (REPLICATE / "agreement.md").read_text()
    # every run-1 cell but Triton 3.9.0's three was benched again, and the GPU reproduces its own verdicts
    # far above the 80 %: the target is not out of reach for reasons of measurement noise
    assert "968 of run 1's 971 cells" in text
    assert "| regression | 149 | 0 | 0 | 13 | 92% (149 of 162) |" in text
    assert "| improvement | 1 | 1 | 31 | 2 | 89% (31 of 35) |" in text
