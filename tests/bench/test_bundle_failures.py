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
    assert "1 failed compiles" in out.output, out.output
    assert "triton==3.3.1 could not compile liger.embedding.bwd[" in out.output, out.output
    assert "atomic_add does not support bf16" in out.output, out.output
    assert "triton==3.4.0 could not compile" not in out.output
