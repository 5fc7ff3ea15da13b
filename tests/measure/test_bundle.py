"""Bundles: a real compiled artifact round-trips through the folder the GPU host reads; env fallback."""

from __future__ import annotations

from pathlib import Path

import pytest

from ktriage.catalog.registry import expand_op
from ktriage.compile.abi import AbiParam
from ktriage.compile.compiler import Artifact, Compiler
from ktriage.errors import KtriageError
from ktriage.measure.driver import STICKY_ERRORS, CudaError
from ktriage.measure.env import GpuRecorder, gpu_state
from ktriage.spec.model import KernelSpec
from ktriage.toolchain.manager import ensure_toolchain
from ktriage.workload.bundles.named_kernels import read_kernel_bundle, write_kernel_bundle

REPO = Path(__file__).resolve().parents[2]


def test_bundle_round_trip_of_a_real_artifact(tmp_path: Path, compiler: Compiler) -> None:
    spec = expand_op("tutorial.vector_add", inputs=["2"])[0]
    art = compiler.compile(spec, ensure_toolchain("triton==3.4.0"))
    assert isinstance(art, Artifact), art
    write_kernel_bundle(tmp_path / "b", {"vector_add@3.4.0": art}, extra={"versions": ["3.4.0"]})
    entries, extra = read_kernel_bundle(tmp_path / "b")  # one loader for op and named-kernel bundles
    e = entries["vector_add@3.4.0"]
    assert e.artifact.cubin_bytes() == art.cubin.cubin_path.read_bytes()
    assert e.artifact.kernel_name == "add_kernel" and e.grid == (1024,)
    assert [AbiParam(**p) for p in e.artifact.abi] == list(art.abi)
    assert e.metadata["num_warps"] == 4 and e.metadata["global_scratch_size"] == 0
    assert "extern_libs" not in e.metadata  # host paths stay behind
    assert e.info["triton_version"] == "3.4.0" and e.info["spec_meta"]["shape"] == {"N": 1048576}
    assert extra == {"versions": ["3.4.0"]}
    with pytest.raises(KtriageError, match="not a bundle of named kernels"):
        read_kernel_bundle(_op_bundle(tmp_path, compiler))


def test_a_kernel_with_16_bit_scalars_passes_the_bundle_check(tmp_path: Path, compiler: Compiler) -> None:
    """PTX declares an fp16/bf16 scalar as ``.param .align 2 .b8 p[2]`` and the ABI keeps ``b8``: the
    check of the cubin's parameter sizes against the manifest must size it by its Triton type (2 bytes),
    not refuse the bundle (it refused the GPU runner's scalars kernel: "[8, 4, 2, 2, ...] bytes, the
    manifest's ABI says [8, 4, 1, 1, ...]")."""
    spec = KernelSpec(
        name="scalars",
        source=f"{REPO / 'benchmarks' / 'gpu' / 'runner_kernels.py'}:scalars_kernel",
        signature={"out_ptr": "*fp32", "a": "fp32", "b": "fp16", "c": "bf16", "d": "i64", "e": "u32", "f": "i1"},
        num_warps=1,
        grid=(1,),
    )
    art = compiler.compile(spec, ensure_toolchain("triton==3.4.0"))
    assert isinstance(art, Artifact), art
    assert [p.ptx_type for p in art.abi][2:4] == ["b8", "b8"]  # what made the check misread the sizes
    write_kernel_bundle(tmp_path / "b", {"scalars@3.4.0": art})
    entries, _ = read_kernel_bundle(tmp_path / "b")
    assert entries["scalars@3.4.0"].artifact.kernel_name == "scalars_kernel"


def test_a_kernel_bundle_written_again_keeps_only_the_cubins_it_names(tmp_path: Path, compiler: Compiler) -> None:
    """Writing a bundle of named kernels again in its folder left the cubins of the kernels it no longer
    names (every bundle writer now leaves its folder pruned, as ``bench --compile-only`` does)."""
    spec = expand_op("tutorial.vector_add", inputs=["2"])[0]
    tc = ensure_toolchain("triton==3.4.0")
    four, eight = compiler.compile(spec, tc), compiler.compile(spec.replace(num_warps=8), tc)
    assert isinstance(four, Artifact) and isinstance(eight, Artifact)
    write_kernel_bundle(tmp_path / "b", {"vector_add@3.4.0": four})
    (before,) = (tmp_path / "b" / "cubins").iterdir()
    write_kernel_bundle(tmp_path / "b", {"vector_add@3.4.0": eight})
    entries, _ = read_kernel_bundle(tmp_path / "b")
    left = [p.name for p in (tmp_path / "b" / "cubins").iterdir()]
    assert left == [entries["vector_add@3.4.0"].artifact.cubin_path.name] and before.name not in left


def _op_bundle(tmp_path: Path, compiler: Compiler) -> Path:
    from ktriage.workload.bundles.build import build_bundle

    return build_bundle(
        "layer_norm",
        "bwd",
        ["0"],
        [ensure_toolchain("triton==3.4.0")],
        tmp_path / "op",
        sm_count=132,
        compiler=compiler,
    )


def test_cuda_error_says_name_and_whether_the_context_is_lost() -> None:
    err = CudaError("cuCtxSynchronize", "CUDA_ERROR_ILLEGAL_ADDRESS", 700)
    assert err.sticky and "CUDA_ERROR_ILLEGAL_ADDRESS (700)" in str(err) and err.fix
    assert not CudaError("cuLaunchKernel", "CUDA_ERROR_INVALID_VALUE", 1).sticky
    assert "CUDA_ERROR_LAUNCH_FAILED" in STICKY_ERRORS


def test_gpu_state_without_nvml_says_why() -> None:
    # On the CPU machine (no NVIDIA driver) NVML is unavailable: the record says so instead of failing.
    state = gpu_state(0)
    assert "time" in state
    assert "nvml" in state and state["nvml"].startswith("unavailable")
    rec = GpuRecorder()
    rec.start()
    record = rec.finish()
    assert set(record) >= {"before", "after", "sm_count", "nvml"}
