"""A bundle is measured as it was compiled: ``bench --bundle DIR --precision P`` with another precision
than the bundle's ran the replay with P's tensors against kernels compiled for the bundle's, and the GPU
worker refused every kernel at its first launch; ``--sm-count`` was dropped without a word. Both are
refused at once, before a GPU worker starts (so also on this CPU machine), naming the bundle's value
and the build that gives the one asked for. Real compiles (one toolchain, one input)."""

from __future__ import annotations

from pathlib import Path

import pytest

from ktriage.cli import exit_codes
from tests.conftest import RunCli

pytestmark = pytest.mark.slow


def test_a_precision_or_sm_count_other_than_the_bundles_is_refused(run_cli: RunCli, tmp_path: Path) -> None:
    bundle = tmp_path / "b"
    built = run_cli(
        ["bench", "--op", "layer_norm", "--only", "liger_layer_norm", "--input-id", "0", "--num-inputs", "1"]
        + ["--precision", "fp32", "--sm-count", "132", "-t", "triton==3.4.0", "--compile-only", "--bundle", str(bundle)]
    )
    assert built.exit_code == exit_codes.OK, built.output
    for given, holds in (
        (["--precision", "bf16"], "--precision fp32, not --precision bf16"),
        (["--sm-count", "114"], "--sm-count 132, not --sm-count 114"),
        # --arch was dropped too: the bundle's cubins are sm_90's whatever --arch says
        (["--arch", "sm_80"], "--arch sm_90, not --arch sm_80"),
        (
            ["--precision", "bf16", "--sm-count", "114"],
            "--precision fp32, --sm-count 132, not --precision bf16, --sm-count 114",
        ),
    ):
        r = run_cli(["bench", "--bundle", str(bundle), *given])
        assert r.exit_code == exit_codes.USAGE, r.output
        assert r.problem == f"bundle {bundle} was compiled with {holds}", r.err_text
        assert r.fix is not None and "--compile-only --bundle DIR" in r.fix, r.err_text
    # the bundle's own values are no mismatch: the run gets past the check (to the GPU, or its absence)
    same = run_cli(
        [
            "bench",
            "--bundle",
            str(bundle),
            "--precision",
            "fp32",
            "--sm-count",
            "132",
            "--arch",
            "90",
            "--max-time",
            "1",
        ]
    )
    assert "was compiled with" not in same.err_text, same.err_text
