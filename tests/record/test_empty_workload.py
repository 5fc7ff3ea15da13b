"""A workload with nothing to compile is an error, never "no resource changes" (issue 23, point 5)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from record_helpers import record_cli

from ktriage.cli.app import main


def test_explaining_and_benching_a_workload_of_no_kernel_is_an_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], probe_sees_a_gpu: None
) -> None:
    """The empty workload of a GPU host (where record writes one; here the driver probe is faked)."""
    out = tmp_path / "W.json"
    assert record_cli(out, [sys.executable, "-c", "print('no kernel here')"]) == 0
    capsys.readouterr()
    assert main(["explain", str(out), "-t", "triton==3.4.0"]) == 2
    err = capsys.readouterr().err
    assert "has no kernel to compile" in err and "launched no Triton kernel" in err and "fix:" in err
    assert "No resource changes" not in err
    assert main(["bench", str(out), "-t", "triton==3.4.0", "--compile-only", "--bundle", str(tmp_path / "b")]) == 2
    assert "has no kernel to compile" in capsys.readouterr().err
