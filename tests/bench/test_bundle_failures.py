"""Building a bundle names each kernel a toolchain could not compile, with the reason: those cells are
not timed on the GPU, and "2 failed compiles" alone sent the user digging in the manifest. Real
compiles: Triton 3.3.1 has no bf16 atomic_add, which Liger's embedding bwd needs (3.4.0 has it)."""

from __future__ import annotations

from pathlib import Path

import pytest

from ktriage.cli import exit_codes
from tests.conftest import RunCli

pytestmark = pytest.mark.slow


def test_a_bundle_build_says_which_kernels_failed_and_why(run_cli: RunCli, tmp_path: Path) -> None:
    out = run_cli(
        [
            "bench",
            "--op",
            "embedding",
            "--bwd",
            "--only",
            "liger_embedding",
            "--dtype",
            "bf16",
            "--input-id",
            "0",
            "--num-inputs",
            "1",
            "-t",
            "triton==3.3.1",
            "-t",
            "triton==3.4.0",
            "--compile-only",
            "--bundle",
            str(tmp_path / "b"),
        ]
    )
    assert out.exit_code == exit_codes.OK, out.output
    assert "1 kernel x 2 toolchains: 1 of 2 cubins, 1 failed compile" in out.output, out.output
    assert "triton==3.3.1 could not compile liger.embedding.bwd[" in out.output, out.output
    assert "atomic_add does not support bf16" in out.output, out.output
    assert "triton==3.4.0 could not compile" not in out.output


def test_a_recorded_bundle_counts_kernels_as_workload_show_does(run_cli: RunCli, tmp_path: Path) -> None:
    """The recorded TritonBench layer_norm (10 kernels, 60 inputs) with two toolchains: the build said
    "60 kernel inputs, 20 kernels", counting each kernel once per toolchain, where `workload show` says
    10 kernels; it now says the kernels, the toolchains and the cubins they make apart."""
    workload = Path(__file__).resolve().parents[2] / "benchmarks/record/h200/tb_layer_norm_bwd.workload.json.gz"
    argv = ["bench", str(workload), "-t", "triton==3.3.1", "-t", "triton==3.6.0", "--compile-only"]
    out = run_cli([*argv, "--bundle", str(tmp_path / "b")])
    assert out.exit_code == exit_codes.OK, out.output
    said = "(60 kernel inputs; 10 kernels x 2 toolchains: 20 cubins, 0 failed compiles)"
    assert said in " ".join(out.output.split()), out.output
    assert "20 kernels" not in out.output
