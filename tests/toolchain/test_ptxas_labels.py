"""Labels name the ptxas that actually ran, per arch (issue 23, point 7): Triton 3.6 assembles sm_100
with its bundled ptxas-blackwell 12.9.86, sm_90 with ptxas 12.8.93; a bundle built for sm_100 (and the
results of its bench, which copy the bundle's toolchain records) says 12.9.86. Real toolchains, real
probe compiles, the real CLI."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow


def test_the_ptxas_of_each_arch_is_named(toolchain) -> None:  # type: ignore[no-untyped-def]
    tc = toolchain("triton==3.6.0")
    assert tc.ptxas_version == "12.8.93"  # the headline (sm_90) that names the toolchain
    hopper, blackwell = tc.to_json_for("sm_90"), tc.to_json_for("sm_100")
    assert hopper["ptxas_version"] == "12.8.93" and hopper["assembler"] == "ptxas 12.8.93"
    assert blackwell["ptxas_version"] == "12.9.86" and blackwell["headline_ptxas_version"] == "12.8.93"
    assert blackwell["assembler"].startswith("ptxas 12.9.86 (ptxas-blackwell)")


def test_a_bundle_for_sm_100_names_ptxas_blackwell(toolchain, run_cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    tc = toolchain("triton==3.6.0")
    bundle = tmp_path / "b"
    res = run_cli(
        [
            "bench",
            "--op",
            "layer_norm",
            "--only",
            "liger_layer_norm",
            "-i",
            "N=4608",
            "-t",
            "triton==3.6.0",
            "--arch",
            "sm_100",
            "--compile-only",
            "--bundle",
            str(bundle),
        ]
    )
    assert res.exit_code == 0, res.stderr
    manifest = json.loads((bundle / "manifest.json").read_text())
    record = manifest["toolchains"][tc.id]
    assert record["ptxas_version"] == "12.9.86" and "ptxas-blackwell" in record["assembler"]
    # the artifacts were assembled by that ptxas: the label and the cubins agree
    versions = {
        a["ptxas_version"] for per_tc in manifest["artifacts"].values() for a in per_tc.values() if "ptxas_version" in a
    }
    assert versions == {"12.9.86"}
