"""Native backends on the CPU (torch eager baselines, TritonBench's fwd/bwd/fwd_bwd protocols) and
the accuracy check. Liger, Triton and torch.compile backends need the GPU host (tests/gpu)."""

from __future__ import annotations

import pytest

from ktriage.catalog.inputs import InputCase
from ktriage.errors import KtriageError

torch = pytest.importorskip("torch")

from ktriage.workload.ops.backends import check_outputs, get_backend, make_input
from ktriage.workload.ops.rope import apply_rotary_pos_emb, rotary_cos_sin

LN = InputCase(0, {"M": 64, "N": 96})
EMB = InputCase(0, {"B": 2, "T": 32, "D": 16, "V": 50})
ROPE = InputCase(0, {"H": 512, "T": 24})


def _layer_norm_backward_by_hand(x, w, dy, eps=1e-5):
    """Layer norm gradients from the closed-form formulas, in float64 (independent of autograd)."""
    x, w, dy = x.double(), w.double(), dy.double()
    n = x.shape[1]
    mean = x.mean(1, keepdim=True)
    rstd = 1 / torch.sqrt(((x - mean) ** 2).mean(1, keepdim=True) + eps)
    xhat = (x - mean) * rstd
    wdy = w * dy
    dx = rstd * (wdy - xhat * (wdy * xhat).sum(1, keepdim=True) / n - wdy.sum(1, keepdim=True) / n)
    return dx, (dy * xhat).sum(0), dy.sum(0)


def test_layer_norm_baseline_backward_is_tritonbench_protocol() -> None:
    inp = make_input("layer_norm", LN, device="cpu")
    b = get_backend("layer_norm", "torch_layer_norm")
    call = b.prepare(inp, "bwd")
    assert b.grad_to_none() == [inp.tensors["x"]]  # TritonBench resets only x.grad
    for _ in range(3):
        for t in b.grad_to_none():
            t.grad = None
        call()
    # weight.grad accumulates over the 3 timed calls (TritonBench does not reset it), x.grad does not
    dx, dw, db = _layer_norm_backward_by_hand(
        inp.tensors["x"].detach(), inp.tensors["weight"].detach(), inp.tensors["dy"]
    )
    assert torch.allclose(inp.tensors["weight"].grad.double(), 3 * dw, rtol=1e-4, atol=1e-4)
    assert torch.allclose(inp.tensors["x"].grad.double(), dx, rtol=1e-4, atol=1e-5)
    out = b.outputs()  # clean: one backward from reset grads
    assert set(out) == {"dx", "dw", "db"}
    assert torch.allclose(out["dw"].double(), dw, rtol=1e-4, atol=1e-4)
    assert torch.allclose(out["db"].double(), db, rtol=1e-4, atol=1e-4)


def test_layer_norm_fwd_and_fwd_bwd() -> None:
    inp = make_input("layer_norm", LN, device="cpu")
    b = get_backend("layer_norm", "torch_layer_norm")
    b.prepare(inp, "fwd")()
    y = b.outputs()["y"]
    x = inp.tensors["x"].detach()
    ref = (x - x.mean(1, keepdim=True)) / torch.sqrt(x.var(1, unbiased=False, keepdim=True) + 1e-5)
    assert torch.allclose(y, ref * inp.tensors["weight"].detach() + inp.tensors["bias"].detach(), atol=1e-5)
    b2 = get_backend("layer_norm", "torch_layer_norm")
    b2.prepare(inp, "fwd_bwd")()
    assert set(b2.outputs()) == {"dx", "dw", "db"}


def test_forward_only_backend_refuses_backward_before_importing_triton() -> None:
    inp = make_input("layer_norm", LN, device="cpu")
    with pytest.raises(KtriageError, match="forward only") as fwd_only:
        get_backend("layer_norm", "triton_layer_norm").prepare(inp, "bwd")
    # kt.bench's keywords as well as the flags (ktriage.errors.option)
    assert fwd_only.value.fix == "run it with mode='fwd' (--mode fwd), or leave triton_layer_norm out of only (--only)"
    with pytest.raises(KtriageError, match="torch_layer_norm"):
        get_backend("layer_norm", "nope")


def test_embedding_baseline_grad_accumulates_like_tritonbench() -> None:
    inp = make_input("embedding", EMB, device="cpu")
    b = get_backend("embedding", "torch_embedding")
    call = b.prepare(inp, "bwd")
    assert b.grad_to_none() == []  # TritonBench's embedding resets nothing
    call()
    call()
    idx, dy = inp.tensors["indices"].reshape(-1), inp.tensors["dy"].reshape(-1, 16)
    expect = torch.zeros(50, 16).index_add_(0, idx, dy)
    assert torch.allclose(b.module.weight.grad, 2 * expect, atol=1e-5)
    assert torch.allclose(b.outputs()["dweight"], expect, atol=1e-5)
    b.prepare(inp, "fwd")()
    assert torch.equal(b.outputs()["y"], inp.tensors["weight"][inp.tensors["indices"]])


def test_rope_reference_is_a_rotation_of_half_pairs() -> None:
    """Independent check of the HF formula: (x_i, x_{i+d/2}) rotated by pos * theta**(-2i/d), as complex numbers."""
    inp = make_input("rope", ROPE, device="cpu")
    t = inp.tensors
    q, k, cos, sin = t["q"].detach(), t["k"].detach(), t["cos"], t["sin"]
    qo, ko = apply_rotary_pos_emb(q, k, cos, sin)
    hd = q.shape[-1]
    pos = torch.arange(24, dtype=torch.float64)[:, None]
    angle = pos * 10000.0 ** (-torch.arange(0, hd, 2, dtype=torch.float64) / hd)
    z = torch.complex(q[..., : hd // 2].double(), q[..., hd // 2 :].double()) * torch.exp(1j * angle)
    assert torch.allclose(qo.double(), torch.cat([z.real, z.imag], -1), atol=1e-4)
    assert tuple(ko.shape) == tuple(k.shape)
    c, _s = rotary_cos_sin(hd, torch.arange(24)[None], torch.float32)
    assert torch.allclose(c[0, :, : hd // 2].double(), torch.cos(angle), atol=1e-5) and torch.equal(c, cos)


def test_rope_backward_protocol() -> None:
    inp = make_input("rope", ROPE, device="cpu")
    b = get_backend("rope", "apply_rotary_pos_emb")
    b.prepare(inp, "bwd")()
    assert b.grad_to_none() == [inp.tensors["q"], inp.tensors["k"]]
    out = b.outputs()
    # The rotation is orthogonal: the gradient is dq rotated back (by -angle)
    cos, sin = inp.tensors["cos"], inp.tensors["sin"]
    back, _ = apply_rotary_pos_emb(inp.tensors["dq"], inp.tensors["dk"], cos, -sin)
    assert torch.allclose(out["dq"], back, atol=1e-5)


def test_check_outputs_tolerance_by_precision() -> None:
    ref = {"dx": torch.ones(10), "dw": torch.full((4,), 5.0)}
    assert check_outputs(ref, {k: v.clone() for k, v in ref.items()}, precision="fp32").passed
    off = {"dx": torch.ones(10), "dw": torch.tensor([5.0, 5.0, 5.0, 5.5])}
    acc = check_outputs(ref, off, precision="fp32")
    assert not acc.passed and acc.reason.startswith("dw:") and acc.to_cell()["max_abs_err"] == pytest.approx(0.5)
    assert check_outputs(ref, {"dx": torch.ones(10), "dw": torch.full((4,), 5.05)}, precision="bf16").passed
    assert not check_outputs(ref, {"dx": torch.ones(10), "dw": torch.full((4,), 5.05)}, precision="fp32").passed
    assert check_outputs(ref, {"dx": torch.ones(11), "dw": ref["dw"]}, precision="fp32").reason.startswith("dx: shape")
    assert not check_outputs(ref, {"dx": ref["dx"]}, precision="fp32").passed
    nan = {"dx": torch.full((10,), float("nan")), "dw": ref["dw"]}
    assert not check_outputs(ref, nan, precision="fp32").passed
