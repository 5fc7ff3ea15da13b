"""rope as TritonBench defines it (tritonbench/operators/rope/operator.py).

Inputs (H, T): num_q_heads=32, num_kv_heads=8, head_dim=H/32, batch 1. ``q = randn(1, T, 32, hd)``
and ``k = randn(1, T, 8, hd)`` with requires_grad, transposed to (1, heads, T, hd) and made contiguous
(so q and k are non-leaf tensors, as in TritonBench); ``cos, sin`` from Llama's default rotary
embedding (theta 10000) at positions 0..T-1; ``dq, dk = randn_like(q), randn_like(k)``. Backward:
``torch.autograd.grad((q_out, k_out), (q, k), (dq, dk), retain_graph=True)``.

The baseline ``apply_rotary_pos_emb`` is written here from the formula HF transformers implements
(q*cos + rotate_half(q)*sin, rotate_half(x) = cat(-x[..., d/2:], x[..., :d/2])), not imported.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from torch import Tensor

from ktriage.ops.rope import NUM_KV_HEADS as ROPE_NUM_KV_HEADS
from ktriage.ops.rope import NUM_Q_HEADS as ROPE_NUM_Q_HEADS
from ktriage.workload.ops.backends import NativeBackend, OpInput, randn

ROPE_THETA = 10000.0  # LlamaConfig's default rope_theta
TORCH_COMPILE_MODE = "max-autotune-no-cudagraphs"


def rotary_cos_sin(head_dim: int, position_ids: Any, dtype: Any, theta: float = ROPE_THETA) -> tuple[Any, Any]:
    """cos and sin of shape (batch, T, head_dim): angles pos * theta**(-2i/hd), each half repeated, in fp32."""
    import torch

    inv_freq = 1.0 / (
        theta ** (torch.arange(0, head_dim, 2, device=position_ids.device, dtype=torch.float32) / head_dim)
    )
    angles = position_ids.to(torch.float32)[..., None] * inv_freq  # (batch, T, hd/2)
    emb = torch.cat([angles, angles], dim=-1)
    return emb.cos().to(dtype), emb.sin().to(dtype)


def rotate_half(x: Any) -> Any:
    import torch

    half = x.shape[-1] // 2
    return torch.cat([-x[..., half:], x[..., :half]], dim=-1)


def apply_rotary_pos_emb(
    q: Any, k: Any, cos: Any, sin: Any, position_ids: Any = None, unsqueeze_dim: int = 1
) -> tuple[Any, Any]:
    """The torch reference: rotate q (b, heads, T, hd) and k by cos/sin (b, T, hd)."""
    cos, sin = cos.unsqueeze(unsqueeze_dim), sin.unsqueeze(unsqueeze_dim)
    return q * cos + rotate_half(q) * sin, k * cos + rotate_half(k) * sin


def fill_input(inp: OpInput, dtype: Any, gen: Any) -> None:
    import torch

    h, t = inp.case.facts["H"], inp.case.facts["T"]
    hd = h // ROPE_NUM_Q_HEADS
    q = randn((1, t, ROPE_NUM_Q_HEADS, hd), dtype, inp.device, gen).requires_grad_().transpose(1, 2).contiguous()
    k = randn((1, t, ROPE_NUM_KV_HEADS, hd), dtype, inp.device, gen).requires_grad_().transpose(1, 2).contiguous()
    dq = randn(tuple(q.shape), dtype, inp.device, gen)
    dk = randn(tuple(k.shape), dtype, inp.device, gen)
    pos_ids = torch.arange(t, device=inp.device, dtype=torch.long).unsqueeze(0)
    cos, sin = (
        rotary_cos_sin(hd, pos_ids, dtype)
        if inp.device != "meta"
        else (torch.empty((1, t, hd), dtype=dtype, device="meta"), torch.empty((1, t, hd), dtype=dtype, device="meta"))
    )
    inp.tensors.update(q=q, k=k, dq=dq, dk=dk, cos=cos, sin=sin, pos_ids=pos_ids)
    inp.params.update(head_dim=hd, num_q_heads=ROPE_NUM_Q_HEADS, num_kv_heads=ROPE_NUM_KV_HEADS)


class RopeBackend(NativeBackend):
    """TritonBench's rope backward protocol (autograd.grad into the non-leaf q and k)."""

    op = "rope"

    def _args(self, inp: OpInput) -> tuple[Any, ...]:
        t = inp.tensors
        return t["q"], t["k"], t["cos"], t["sin"], t["pos_ids"]

    def backward(self, inp: OpInput, fwd: Callable[[], Any]) -> Callable[[], Any]:
        import torch

        q_out, k_out = fwd()
        t = inp.tensors
        return lambda: torch.autograd.grad(
            (q_out, k_out), (t["q"], t["k"]), (t["dq"], t["dk"]), allow_unused=True, retain_graph=True
        )

    def grad_to_none(self) -> list[Any]:
        assert self._inp is not None
        return [self._inp.tensors["q"], self._inp.tensors["k"]]

    def grad_leaves(self) -> dict[str, Tensor]:
        return {}

    def fwd_outputs(self, result: Any) -> dict[str, Tensor | None]:
        return {"q": result[0], "k": result[1]}

    def bwd_outputs(self, result: Any) -> dict[str, Tensor | None]:
        return {"dq": result[0], "dk": result[1]}


class ApplyRotaryPosEmb(RopeBackend):
    """The torch reference of HF's apply_rotary_pos_emb (TritonBench's baseline)."""

    name = "apply_rotary_pos_emb"

    def forward(self, inp: OpInput) -> Callable[[], Any]:
        args = self._args(inp)
        return lambda: apply_rotary_pos_emb(*args)


class LigerRotaryPosEmb(RopeBackend):
    """``liger_kernel.transformers.rope.liger_rotary_pos_emb`` on the host's Triton."""

    name = "liger_rotary_pos_emb"

    def forward(self, inp: OpInput) -> Callable[[], Any]:
        from liger_kernel.transformers.rope import liger_rotary_pos_emb

        args = self._args(inp)
        return lambda: liger_rotary_pos_emb(*args)


class TorchCompileRotaryPosEmbFullOp(RopeBackend):
    """cos/sin from a compiled rotary embedding, then a compiled apply (TritonBench's "full op")."""

    name = "torch_compile_rotary_pos_emb_full_op"

    def forward(self, inp: OpInput) -> Callable[[], Any]:
        import torch

        mode = self.options.get("compile_mode", TORCH_COMPILE_MODE)
        mode_arg = None if mode == "default" else mode
        q, k, _, _, pos = self._args(inp)
        cos, sin = torch.compile(rotary_cos_sin, mode=mode_arg)(inp.params["head_dim"], pos, q.dtype)
        compiled = torch.compile(apply_rotary_pos_emb, mode=mode_arg)
        return lambda: compiled(q, k, cos, sin, pos)


BACKENDS: dict[str, type[NativeBackend]] = {
    b.name: b for b in (ApplyRotaryPosEmb, LigerRotaryPosEmb, TorchCompileRotaryPosEmbFullOp)
}
