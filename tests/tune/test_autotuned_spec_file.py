"""``ktriage tune`` and ``explain --fixes`` on a spec file's ``@triton.autotune`` kernel start from what its
JIT compiles. They measured their changes against the spec's preview (Triton's default 4 warps and 3
stages, no tiles), while the JIT compiles the autotuner's config: tune labelled the matmul's 8-warp,
4-stage 128x128x64 cubin "warps=4,stages=3 (default)", a candidate that changed num_stages only kept the
JIT's 8 warps under a label of 4 and was recommended so, and the kernel's own config list was never
searched. Real compiles (Triton 3.4.0, sm_90), no GPU."""

from __future__ import annotations

import json
from pathlib import Path

from ktriage.cli import exit_codes
from ktriage.compile.compiler import Artifact
from ktriage.spec.toml_file import loads_spec
from ktriage.tune.space import config_space

KERNELS = Path(__file__).resolve().parent / "autotuned_kernels.py"

MM = f"""
[kernel]
name = "mm[4096]"
source = "{KERNELS}:bf16_mm_kernel"
target = "sm_90"
grid = [1024]
[kernel.args]
a_ptr = {{ dtype = "bf16", shape = [4096, 4096], strides = [4096, 1] }}
b_ptr = {{ dtype = "bf16", shape = [4096, 4096], strides = [4096, 1] }}
c_ptr = {{ dtype = "bf16", shape = [4096, 4096], strides = [4096, 1] }}
M = 4096
N = 4096
K = 4096
stride_am = 4096
stride_bk = 4096
stride_cm = 4096
"""

ROWS = f"""
[kernel]
name = "rows[N=5120]"
source = "{KERNELS}:scale_rows_kernel"
target = "sm_90"
grid = [64]
[kernel.args]
x_ptr = {{ dtype = "fp32", shape = [64, 5120], strides = [5120, 1] }}
y_ptr = {{ dtype = "fp32", shape = [64, 5120], strides = [5120, 1] }}
N = 5120
stride = 5120
"""


def test_tune_starts_from_the_autotuners_config_and_searches_its_list(tmp_path, toolchain, run_cli) -> None:
    toolchain("triton==3.4.0")
    spec_file = tmp_path / "mm.toml"
    spec_file.write_text(MM)
    explained = run_cli(["explain", str(spec_file), "-t", "triton==3.4.0", "-f", "json"])
    assert explained.exit_code == exit_codes.OK, explained.output
    (result,) = json.loads(explained.stdout)["kernels"][0]["results"].values()
    assert (result["artifact"]["specialization"]["num_warps"], result["artifact"]["specialization"]["num_stages"]) == (
        8,
        4,
    )

    res = run_cli(["tune", str(spec_file), "-t", "triton==3.4.0", "--compile-only", "-f", "json"])
    assert res.exit_code == exit_codes.OK, res.output
    report = json.loads(res.stdout)
    default = report["default"]
    assert default["label"] == "BLOCK_K=64,BLOCK_M=128,BLOCK_N=128,warps=8,stages=4", default["label"]
    # the default row is the cubin explain compiled, not a config the library never runs
    assert default["resources"]["registers"] == result["registers"]
    assert default["resources"]["shared_bytes"] == result["shared_bytes"]
    by_label = {c["label"]: c for c in report["candidates"]}
    assert set(by_label) == {
        "BLOCK_K=64,BLOCK_M=128,BLOCK_N=128,warps=8,stages=4",
        "BLOCK_K=32,BLOCK_M=64,BLOCK_N=64,warps=4,stages=2",
        "BLOCK_K=64,BLOCK_M=128,BLOCK_N=256,warps=8,stages=3",
    }, sorted(by_label)
    # the grid follows the tiles of the launch's M and N (cdiv(M, BLOCK_M) * cdiv(N, BLOCK_N))
    assert by_label["BLOCK_K=64,BLOCK_M=128,BLOCK_N=256,warps=8,stages=3"]["grid"] == [512]
    assert by_label["BLOCK_K=32,BLOCK_M=64,BLOCK_N=64,warps=4,stages=2"]["grid"] == [4096]
    assert any("as its JIT lists them" in n for n in report["space"]["notes"]), report["space"]["notes"]


def test_a_listed_config_runs_the_heuristics_with_its_tile(tmp_path, toolchain, shared_compiler) -> None:
    """The second config's BLOCK_N=4096 does not divide N=5120: launched as the autotuner launches it, the
    heuristics make EVEN_N false (masked loads); as an override of the first config's decision it stayed
    true, an unmasked kernel that reads past the row."""
    tc = toolchain("triton==3.4.0")
    (spec,) = loads_spec(ROWS, base_dir=tmp_path)
    decided = shared_compiler.decide(spec, tc)
    assert decided.constexprs["BLOCK_N"] == 256 and decided.constexprs["EVEN_N"] is True
    assert decided.launch is not None and decided.meta["shape"] == {"N": 5120, "stride": 5120}
    space = config_space(decided)
    assert [c.label() for c in space.configs()] == ["BLOCK_N=256,warps=4,stages=3", "BLOCK_N=4096,warps=8,stages=3"]
    artifact = shared_compiler.compile(space.apply(space.configs()[1]), tc)
    assert isinstance(artifact, Artifact), artifact
    assert artifact.spec.constexprs["BLOCK_N"] == 4096 and artifact.spec.constexprs["EVEN_N"] is False
    assert artifact.spec.num_warps == 8
