"""Catalog expansions: launch parameters computed by hand from the libraries' source, and errors."""

from __future__ import annotations

import pytest

from ktriage.catalog import catalog_op, expand_op, list_ops
from ktriage.errors import KtriageError


def test_layer_norm_bwd_4608_on_sm90_matches_liger_0_5_10() -> None:
    (spec,) = expand_op("liger.layer_norm", inputs=["7"])
    assert spec.name == "liger.layer_norm.bwd[N=4608]"
    assert spec.source == "liger_kernel.ops.layer_norm:_layer_norm_backward_kernel"
    assert spec.package == "liger-kernel==0.5.10"
    assert spec.constexprs == {"rows_per_program": 32, "BLOCK_SIZE": 8192, "dtype": "tl.float32"}  # ceil(4096/132)=32
    assert (spec.num_warps, spec.num_stages, spec.grid) == (4, 3, (132,))  # 0.5.10 passes no num_warps
    assert spec.signature["X_ptr"] == "*fp32" and spec.signature["n_rows"] == "i32"
    assert set(spec.divisible_by_16) == {n for n, t in spec.signature.items() if t != "constexpr"}
    assert spec.equal_to_1 == ()
    assert spec.meta["shape"] == {"M": 4096, "N": 4608} and spec.meta["package_version"] == "0.5.10"
    spec.validate()  # against the real 0.5.10 source (installed once)


def test_layer_norm_sweep_block_sizes_and_sm_count() -> None:
    specs = expand_op("liger.layer_norm", mode="bwd")
    assert len(specs) == 30
    blocks = {s.meta["shape"]["N"]: s.constexprs["BLOCK_SIZE"] for s in specs}
    assert blocks[1024] == 1024 and blocks[4096] == 4096 and blocks[8192] == 8192 and blocks[8704] == 16384
    (a100,) = expand_op("liger.layer_norm", target="sm_80", inputs=["N=4608"])
    assert a100.grid == (108,) and a100.constexprs["rows_per_program"] == 38  # ceil(4096/108)
    (custom,) = expand_op("liger.layer_norm", inputs=["N=4608"], sm_count=100)
    assert custom.grid == (100,) and custom.constexprs["rows_per_program"] == 41


def test_layer_norm_fwd_and_bf16() -> None:
    (fwd,) = expand_op("liger.layer_norm", mode="fwd", inputs=["N=4608"])
    assert fwd.grid == (4096,) and fwd.num_warps == 16 and fwd.constexprs["BLOCK_SIZE"] == 8192
    # W.stride(0), B.stride(0), Mean.stride(0), RSTD.stride(0) are 1: the JIT makes them constants.
    assert fwd.equal_to_1 == ("W_row_stride", "B_row_stride", "Mean_row_stride", "RSTD_row_stride")
    assert fwd.signature["eps"] == "fp32"
    (bf,) = expand_op("liger.layer_norm", dtype="bf16", inputs=["7"])
    assert (
        bf.signature["X_ptr"] == "*bf16"
        and bf.signature["DW_ptr"] == "*bf16"
        and bf.constexprs["dtype"] == "tl.bfloat16"
    )


def test_layer_norm_latest_release() -> None:
    assert catalog_op("liger.layer_norm@latest").name == "liger.layer_norm@0.8.5"
    (spec,) = expand_op("liger.layer_norm@latest", inputs=["N=4608"])
    assert spec.package == "liger-kernel==0.8.5"
    assert spec.num_warps == 16  # 0.8.5 passes calculate_settings' num_warps
    assert spec.equal_to_1 == ("stride_mean", "stride_rstd")
    assert spec.constexprs["COMPUTE_DW"] is True and spec.constexprs["rows_per_program"] == 32
    assert spec.signature["DW_ptr"] == "*fp32" and spec.signature["Mean_ptr"] == "*fp32"
    spec.validate()


def test_embedding_inputs() -> None:
    specs = expand_op("liger.embedding")
    assert len(specs) == 16
    small, big = specs[0], specs[8]
    assert small.meta["shape"] == {"B": 32, "T": 512, "D": 768, "V": 1024}
    assert small.grid == (128, 6) and big.grid == (128, 32)  # 16384 tokens / 128; D / 128
    assert small.constexprs == {"embedding_dim": 768, "BLOCK_SIZE_M": 128, "BLOCK_SIZE_N": 128}
    assert small.signature == {
        "grad_output_ptr": "*fp32",
        "grad_weight_ptr": "*fp32",
        "indices_ptr": "*i64",
        "n_elements": "i32",
        "embedding_dim": "constexpr",
        "BLOCK_SIZE_M": "constexpr",
        "BLOCK_SIZE_N": "constexpr",
    }
    assert (small.num_warps, small.num_stages) == (4, 3)
    # V changes the table, not the kernel: same compiled kernel for every V of one D.
    assert len({s.key() for s in specs[:8]}) == 1 and specs[0].key() != specs[8].key()
    picked = expand_op("liger.embedding", inputs=["D=4096,V=65536", "3"])
    assert [s.meta["input_id"] for s in picked] == [3, 14]


def test_tutorial_ops_cover_memory_and_compute_bound() -> None:
    (mm,) = expand_op("tutorial.matmul", inputs=["M=4096"])
    assert mm.signature["a_ptr"] == "*fp16" and mm.equal_to_1 == ("stride_ak", "stride_bn", "stride_cn")
    assert (mm.num_warps, mm.num_stages, mm.grid) == (8, 3, (1024,))
    (va,) = expand_op("tutorial.vector_add", inputs=["N=1000"])
    assert "n_elements" not in va.divisible_by_16 and va.grid == (1,)
    (sm,) = expand_op("tutorial.softmax", inputs=["N=1000"])
    assert "in_row_stride" not in sm.divisible_by_16 and sm.constexprs["BLOCK_SIZE"] == 1024
    for op in list_ops():
        for mode in op.modes:
            for spec in expand_op(op.name, mode=mode)[:3]:
                spec.validate()


def test_unknown_op_version_mode_and_input_messages() -> None:
    with pytest.raises(KtriageError) as info:
        expand_op("liger.layernorm")
    assert "unknown catalog op 'liger.layernorm'" in info.value.problem
    assert "did you mean liger.layer_norm" in info.value.fix and "tutorial.matmul" in info.value.fix
    with pytest.raises(KtriageError) as info:
        expand_op("liger")  # a prefix: every op it starts, not the two closest spellings
    assert info.value.fix is not None
    assert info.value.fix.startswith("did you mean liger.layer_norm or liger.rms_norm or liger.embedding? ")
    with pytest.raises(KtriageError, match="no recipe for liger.layer_norm at version '0.6.0'") as info:
        expand_op("liger.layer_norm@0.6.0")
    assert "liger.layer_norm@0.8.5" in info.value.fix and "liger.layer_norm@latest" in info.value.fix
    with pytest.raises(KtriageError, match="has no mode 'bwd'"):
        expand_op("tutorial.softmax", mode="bwd")
    with pytest.raises(KtriageError, match="no input of liger.layer_norm matches 'N=4600'") as info:
        expand_op("liger.layer_norm", inputs=["N=4600"])
    assert "ids 0..29" in info.value.fix and "4608" in info.value.fix
    with pytest.raises(KtriageError, match="no input of liger.layer_norm matches '30'"):
        expand_op("liger.layer_norm", inputs=["30"])
    with pytest.raises(KtriageError, match="have no fact"):
        expand_op("liger.layer_norm", inputs=["X=1"])
    with pytest.raises(KtriageError, match="does not support dtype"):
        expand_op("tutorial.matmul", dtype="fp32")
    with pytest.raises(KtriageError, match="unknown target"):
        expand_op("liger.embedding", target="sm_42")
