"""Workload ops: TritonBench's input sweeps, x_vals, input generation, and the gbps/tflops formulas."""

from __future__ import annotations

import pytest

from ktriage.catalog.inputs import InputCase
from ktriage.errors import KtriageError
from ktriage.workload.ops.opdef import (
    bench_op,
    bytes_moved,
    flops,
    gbps,
    list_ops,
    resolve_precision,
    select_op_inputs,
    tflops,
)


def test_ops_and_backends_use_tritonbench_names() -> None:
    assert [o.name for o in list_ops()] == ["layer_norm", "embedding", "rope"]
    assert bench_op("layer_norm").baseline == "torch_layer_norm"
    assert bench_op("embedding").baseline == "torch_embedding"
    assert bench_op("rope").baseline == "apply_rotary_pos_emb"
    assert set(bench_op("layer_norm").backends) == {
        "torch_layer_norm",
        "torch_compile_layer_norm",
        "liger_layer_norm",
        "triton_layer_norm",
    }
    assert set(bench_op("rope").backends) == {
        "apply_rotary_pos_emb",
        "liger_rotary_pos_emb",
        "torch_compile_rotary_pos_emb_full_op",
    }
    with pytest.raises(KtriageError, match="layer_norm, embedding, rope"):
        bench_op("layernorm")


def test_x_vals_match_tritonbench_sweeps() -> None:
    ln, emb, rope = bench_op("layer_norm"), bench_op("embedding"), bench_op("rope")
    # tritonbench layer_norm: M=4096, N in [512*i for i in range(2, 32)]
    assert [ln.x_val(c) for c in ln.inputs()] == [(4096, 512 * i) for i in range(2, 32)]
    assert ln.x_val(ln.inputs()[7]) == (4096, 4608) and ln.x_val(ln.inputs()[15]) == (4096, 8704)
    # embedding: for (B,T,D) in [(32,512,768),(8,2048,4096)]: for V in 2**10..2**17 -> x_val (B, T, D, V)
    expected = [(b, t, d, 2**e) for b, t, d in [(32, 512, 768), (8, 2048, 4096)] for e in range(10, 18)]
    assert [emb.x_val(c) for c in emb.inputs()] == expected
    # rope: H=8192 with T=2**10..2**14, then T=2048 with H=32*2**i for i in range(4, 10, 2)
    assert [rope.x_val(c) for c in rope.inputs()] == [
        (8192, 1024),
        (8192, 2048),
        (8192, 4096),
        (8192, 8192),
        (8192, 16384),
        (512, 2048),
        (2048, 2048),
        (8192, 2048),
    ]
    assert ln.x_val_text(ln.inputs()[7]) == "(4096, 4608)"


def test_the_catalog_is_the_home_of_shared_sweeps() -> None:
    from ktriage.catalog import op_inputs

    assert bench_op("layer_norm").inputs() == op_inputs("liger.layer_norm")
    assert bench_op("embedding").inputs() == op_inputs("liger.embedding")


def test_input_selection_like_tritonbench_flags() -> None:
    ln = bench_op("layer_norm")
    assert [c.facts["N"] for c in select_op_inputs(ln, input_id=7, num_inputs=1)] == [4608]
    assert [c.id for c in select_op_inputs(ln, input_id=28)] == [28, 29]
    assert [c.id for c in select_op_inputs(ln, selectors=["N=4096", "7"])] == [6, 7]
    assert len(select_op_inputs(ln)) == 30
    with pytest.raises(KtriageError, match="out of range"):
        select_op_inputs(ln, input_id=30)


def test_precision_default_is_fp32_and_bypass_means_default() -> None:
    ln = bench_op("layer_norm")
    assert resolve_precision(ln, None) == "fp32" and resolve_precision(ln, "bypass") == "fp32"
    assert resolve_precision(ln, "bf16") == "bf16"
    with pytest.raises(KtriageError, match="fp32, bf16, fp16"):
        resolve_precision(ln, "fp8")


def test_layer_norm_inputs_shapes_dtypes_for_every_input() -> None:
    torch = pytest.importorskip("torch")
    from ktriage.workload.ops.backends import make_input

    ln = bench_op("layer_norm")
    for case in ln.inputs():
        for precision, dtype in (("fp32", torch.float32), ("bf16", torch.bfloat16)):
            inp = make_input("layer_norm", case, precision=precision, device="meta")
            t = inp.tensors
            n = case.facts["N"]
            assert tuple(t["x"].shape) == (4096, n) and t["x"].dtype == dtype
            assert t["x"].requires_grad and t["x"].is_leaf
            assert tuple(t["weight"].shape) == (n,) and t["weight"].requires_grad
            assert tuple(t["bias"].shape) == (n,) and t["bias"].requires_grad
            assert tuple(t["dy"].shape) == (4096, n) and not t["dy"].requires_grad
            assert inp.params == {"w_shape": (n,), "eps": 1e-5}
            # TritonBench's gbps base is x.numel() * x.element_size()
            assert bytes_moved("layer_norm", case, "bwd", precision) == 3 * t["x"].numel() * t["x"].element_size()


def test_layer_norm_input_distributions() -> None:
    torch = pytest.importorskip("torch")
    from ktriage.workload.ops.backends import make_input

    inp = make_input("layer_norm", InputCase(3, {"M": 512, "N": 1024}), device="cpu")
    x, w, dy = inp.tensors["x"].detach(), inp.tensors["weight"].detach(), inp.tensors["dy"]
    assert abs(float(x.mean()) + 2.3) < 0.01 and abs(float(x.std()) - 0.5) < 0.01  # -2.3 + 0.5*randn
    assert 0 <= float(w.min()) and float(w.max()) < 1 and abs(float(w.mean()) - 0.5) < 0.05  # rand
    assert abs(float(dy.std()) - 0.1) < 0.002  # 0.1 * randn_like(y)
    again = make_input("layer_norm", InputCase(3, {"M": 512, "N": 1024}), device="cpu")
    assert torch.equal(again.tensors["x"], inp.tensors["x"])  # seeded per input: every backend sees the same data


def test_embedding_and_rope_inputs() -> None:
    torch = pytest.importorskip("torch")
    from ktriage.workload.ops.backends import make_input

    emb = bench_op("embedding")
    for case in emb.inputs():
        t = make_input("embedding", case, device="meta").tensors
        b, tt, d, v = (case.facts[k] for k in ("B", "T", "D", "V"))
        assert tuple(t["indices"].shape) == (b, tt) and t["indices"].dtype == torch.int64
        assert tuple(t["weight"].shape) == (v, d) and tuple(t["dy"].shape) == (b, tt, d)
    small = make_input("embedding", InputCase(0, {"B": 4, "T": 64, "D": 16, "V": 100}), device="cpu").tensors
    assert int(small["indices"].min()) >= 0 and int(small["indices"].max()) < 100
    for case in bench_op("rope").inputs():
        inp = make_input("rope", case, device="meta", precision="fp16")
        t, hd = inp.tensors, case.facts["H"] // 32
        assert tuple(t["q"].shape) == (1, 32, case.facts["T"], hd) and t["q"].dtype == torch.float16
        assert tuple(t["k"].shape) == (1, 8, case.facts["T"], hd)
        assert not t["q"].is_leaf and t["q"].is_contiguous()  # TritonBench: randn(...).transpose(1, 2).contiguous()
        assert tuple(t["cos"].shape) == (1, case.facts["T"], hd) and tuple(t["dq"].shape) == tuple(t["q"].shape)


def test_bytes_and_flops_formulas() -> None:
    ln7 = bench_op("layer_norm").inputs()[7]
    base = 4096 * 4608 * 4
    assert [bytes_moved("layer_norm", ln7, m) for m in ("fwd", "bwd", "fwd_bwd")] == [2 * base, 3 * base, 5 * base]
    assert bytes_moved("layer_norm", ln7, "fwd", "bf16") == base  # 2 bytes per element
    assert flops("layer_norm", ln7, "fwd") == 7 * 4096 * 4608 and flops("layer_norm", ln7, "bwd") == 13 * 4096 * 4608
    e0 = bench_op("embedding").inputs()[0]  # B=32, T=512, D=768, V=1024
    bt = 32 * 512
    assert bytes_moved("embedding", e0, "fwd") == bt * 8 + 2 * bt * 768 * 4
    assert bytes_moved("embedding", e0, "bwd") == 1024 * 768 * 4 + bt * 8 + 3 * bt * 768 * 4
    assert flops("embedding", e0, "fwd") == 0 and flops("embedding", e0, "bwd") == bt * 768
    r0 = bench_op("rope").inputs()[0]  # H=8192, T=1024, hd=256
    assert bytes_moved("rope", r0, "fwd") == 2 * 40 * 1024 * 256 * 4 + 2 * 1024 * 256 * 4
    assert flops("rope", r0, "bwd") == 3 * 40 * 1024 * 256
    assert gbps(3 * base, 0.5) == pytest.approx(3 * base / 0.5e-3 / 1e9)  # GB/s from ms
    assert tflops(2 * 10**12, 1000.0) == pytest.approx(2.0)
