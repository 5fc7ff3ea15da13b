"""Kernel-parameter packing from launch ABIs (pure; the GPU test launches the same packing)."""

from __future__ import annotations

import struct
from pathlib import Path

import pytest
import torch

from ktriage.compile.abi import AbiParam
from ktriage.compile.compiler import Artifact
from ktriage.errors import KtriageError
from ktriage.measure.params import (
    encode_scalar,
    normalize_grid,
    num_ctas_of,
    pack_params,
    param_size,
    scratch_bytes,
)
from ktriage.spec.model import KernelSpec
from ktriage.toolchain.manager import ensure_toolchain

REPO = Path(__file__).resolve().parents[2]
RUNNER_KERNELS = REPO / "benchmarks" / "gpu" / "runner_kernels.py"
SCALARS_SIG = {
    "out_ptr": "*fp32",
    "a": "fp32",
    "b": "fp16",
    "c": "bf16",
    "d": "i64",
    "e": "u32",
    "f": "i1",
}


class FakeTensor:
    """Stands in for a CUDA tensor: only ``data_ptr()`` matters to packing."""

    def __init__(self, address: int) -> None:
        self.address = address

    def data_ptr(self) -> int:
        return self.address


@pytest.fixture(scope="module")
def scalars_artifact(tmp_path_factory: pytest.TempPathFactory) -> Artifact:
    """The runner's scalar-type kernel compiled by the real Triton 3.4.0 toolchain."""
    from ktriage.compile.compiler import Compiler

    spec = KernelSpec(
        name="scalars",
        source=f"{RUNNER_KERNELS}:scalars_kernel",
        signature=SCALARS_SIG,
        num_warps=1,
        target="sm_90",
        grid=(1,),
    )
    with Compiler(jobs=1, cache_dir=tmp_path_factory.mktemp("artifacts")) as c:
        art = c.compile(spec, ensure_toolchain("triton==3.4.0"))
    assert isinstance(art, Artifact), art
    return art


def test_real_abi_packs_every_scalar_type_and_a_null_scratch(
    scalars_artifact: Artifact,
) -> None:
    abi = scalars_artifact.abi
    assert [p.name for p in abi] == [*SCALARS_SIG, "global_scratch"]
    assert [p.ptx_type for p in abi] == [
        "u64",
        "f32",
        "b8",
        "b8",
        "u64",
        "u32",
        "u8",
        "u64",
    ]
    packed = pack_params(
        abi,
        [
            FakeTensor(0x7F00_1234_5600),
            1.5,
            -2.25,
            2.5,
            -(2**40) - 8,
            4_000_000_000,
            True,
        ],
    )
    assert packed.names[-1] == "global_scratch"
    assert packed.blobs == (
        (0x7F00_1234_5600).to_bytes(8, "little"),
        struct.pack("<f", 1.5),
        struct.pack("<e", -2.25),  # 0xC080
        (0x4020).to_bytes(2, "little"),  # bf16 2.5
        struct.pack("<q", -(2**40) - 8),
        struct.pack("<I", 4_000_000_000),
        b"\x01",
        bytes(8),  # size 0: NULL
    )
    assert [param_size(p) for p in abi] == [8, 4, 2, 2, 8, 4, 1, 8]


def test_bf16_and_fp16_encodings_match_torch() -> None:
    gen = torch.Generator().manual_seed(0)
    values = torch.randn(2000, generator=gen, dtype=torch.float32) * 1e3
    values = torch.cat(
        [
            values,
            torch.tensor([1 + 2**-8, 1 + 3 * 2**-8, 0.0, -0.0, 65504.0, 1e-8, float("inf")]),
        ]
    )
    for v in values.tolist():
        bf = int(torch.tensor(v, dtype=torch.float32).to(torch.bfloat16).view(torch.int16)) & 0xFFFF
        assert encode_scalar("bf16", v) == bf.to_bytes(2, "little"), v
        if abs(v) <= 65504:
            hf = int(torch.tensor(v, dtype=torch.float32).to(torch.float16).view(torch.int16)) & 0xFFFF
            assert encode_scalar("fp16", v) == hf.to_bytes(2, "little"), v


def test_ints_are_range_checked_and_twos_complement() -> None:
    assert encode_scalar("i32", -1) == b"\xff\xff\xff\xff"
    assert encode_scalar("u32", 2**32 - 1) == b"\xff\xff\xff\xff"
    assert encode_scalar("i64", 2**40) == (2**40).to_bytes(8, "little")
    for ty, bad in (("i32", 2**31), ("u32", -1), ("i1", 2), ("i16", 40000)):
        with pytest.raises(KtriageError, match="does not fit"):
            encode_scalar(ty, bad)
    with pytest.raises(KtriageError, match="integer"):
        encode_scalar("i32", 1.5)


def test_argument_mistakes_are_named() -> None:
    abi = [
        AbiParam("x_ptr", "*fp32", "u64"),
        AbiParam("n", "i32", "u32"),
        AbiParam("global_scratch", "*i8", "u64", True),
    ]
    with pytest.raises(KtriageError, match=r"takes 2 arguments \(x_ptr, n\) but 3"):
        pack_params(abi, [FakeTensor(16), 4, 5])
    with pytest.raises(KtriageError, match="scalar; got a tensor"):
        pack_params(abi, [FakeTensor(16), FakeTensor(32)])
    with pytest.raises(KtriageError, match="is a pointer"):
        pack_params(abi, [1.5, 4])
    with pytest.raises(KtriageError, match="does not match its PTX"):
        param_size(AbiParam("n", "i32", "u64"))
    with pytest.raises(KtriageError, match="cannot pass"):
        param_size(AbiParam("d", "tensordesc<fp32[64, 64]>", "b8"))


def test_hidden_scratch_of_triton_35_gets_buffers_or_null() -> None:
    # Triton 3.5's ABI: global scratch then profile scratch, both hidden, appended last.
    abi = [
        AbiParam("x_ptr", "*fp32", "u64"),
        AbiParam("global_scratch", "*i8", "u64", hidden=True, size_bytes_per_cta=256),
        AbiParam("profile_scratch", "*i8", "u64", hidden=True, size_bytes_per_cta=0),
    ]
    packed = pack_params(abi, [FakeTensor(0x1000)], {"global_scratch": 0xABC000})
    assert packed.blobs == (
        (0x1000).to_bytes(8, "little"),
        (0xABC000).to_bytes(8, "little"),
        bytes(8),
    )
    with pytest.raises(KtriageError, match="needs a buffer"):
        pack_params(abi, [FakeTensor(0x1000)])


def test_scratch_sizing_follows_the_34_launcher() -> None:
    assert scratch_bytes(0, (132, 1, 1), 1) == 0
    assert scratch_bytes(256, (8, 4, 1), 1) == 8 * 4 * 256
    assert scratch_bytes(128, (10, 1, 1), 2) == 10 * 2 * 128  # per CTA of each cluster
    assert num_ctas_of({"num_ctas": 2, "cluster_dims": [2, 1, 1]}) == 2
    assert num_ctas_of({"cluster_dims": [1, 1, 1], "num_ctas": 1}) == 1
    assert num_ctas_of({"num_ctas": 4}) == 4
    assert normalize_grid((132,)) == (132, 1, 1)
    assert normalize_grid(7) == (7, 1, 1)
    assert normalize_grid([2, 3, 4]) == (2, 3, 4)
    with pytest.raises(KtriageError):
        normalize_grid((1, 2, 3, 4))
