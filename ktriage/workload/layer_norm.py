"""layer_norm as TritonBench defines it (tritonbench/operators/layer_norm/operator.py).

Inputs: M=4096, N=512*i (i=2..31) from the catalog sweep; ``x = -2.3 + 0.5*randn(M, N)``
(requires grad), ``weight = rand(N)``, ``bias = rand(N)`` (both require grad), eps=1e-5.
Backward: ``y = fwd(); dy = 0.1*randn_like(y)``; timed ``y.backward(dy, retain_graph=True)`` with
``x.grad`` reset between calls (TritonBench's ``get_grad_to_none`` returns ``[x]``; weight and bias
grads accumulate, so the timed call includes autograd's ``weight.grad += dw`` and ``bias.grad += db``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ktriage.workload.backends import NativeBackend, OpInput, rand, randn

EPS = 1e-5
TORCH_COMPILE_MODE = "max-autotune-no-cudagraphs"  # TritonBench's mode for torch_compile_layer_norm


def fill_input(inp: OpInput, dtype: Any, gen: Any) -> None:
    m, n = inp.case.facts["M"], inp.case.facts["N"]
    x = (-2.3 + 0.5 * randn((m, n), dtype, inp.device, gen)).detach().requires_grad_()
    weight = rand((n,), dtype, inp.device, gen).requires_grad_()
    bias = rand((n,), dtype, inp.device, gen).requires_grad_()
    dy = 0.1 * randn((m, n), dtype, inp.device, gen)
    inp.tensors.update(x=x, weight=weight, bias=bias, dy=dy)
    inp.params.update(w_shape=(n,), eps=EPS)


class LayerNormBackend(NativeBackend):
    """TritonBench's layer_norm backward protocol, shared by every layer_norm backend."""

    op = "layer_norm"

    def backward(self, inp: OpInput, fwd: Callable[[], Any]) -> Callable[[], Any]:
        y = fwd()
        dy = inp.tensors["dy"]
        return lambda: y.backward(dy, retain_graph=True)

    def grad_to_none(self) -> list[Any]:
        assert self._inp is not None
        return [self._inp.tensors["x"]]

    def grad_leaves(self) -> dict[str, Any]:
        assert self._inp is not None
        t = self._inp.tensors
        return {"dx": t["x"], "dw": t["weight"], "db": t["bias"]}


def _args(inp: OpInput) -> tuple[Any, ...]:
    t, p = inp.tensors, inp.params
    return t["x"], p["w_shape"], t["weight"], t["bias"], p["eps"]


class TorchLayerNorm(LayerNormBackend):
    """``F.layer_norm`` (TritonBench's baseline)."""

    name = "torch_layer_norm"

    def forward(self, inp: OpInput) -> Callable[[], Any]:
        import torch.nn.functional as F

        args = _args(inp)
        return lambda: F.layer_norm(*args)


class TorchCompileLayerNorm(LayerNormBackend):
    """``torch.compile(F.layer_norm)``; option ``compile_mode`` (default TritonBench's
    "max-autotune-no-cudagraphs"; "default" compiles in seconds instead of minutes)."""

    name = "torch_compile_layer_norm"

    def forward(self, inp: OpInput) -> Callable[[], Any]:
        import torch
        import torch.nn.functional as F

        if self._mode in ("bwd", "fwd_bwd"):
            # As TritonBench: the backward runs many times on one graph, so buffers cannot be donated.
            from torch._functorch import config as functorch_config

            functorch_config.donated_buffer = False
        mode = self.options.get("compile_mode", TORCH_COMPILE_MODE)

        def inner(*a: Any) -> Any:
            return F.layer_norm(*a)

        compiled = torch.compile(inner, mode=None if mode == "default" else mode)
        args = _args(inp)
        return lambda: compiled(*args)


class LigerLayerNorm(LayerNormBackend):
    """``LigerLayerNormFunction.apply(x, weight, bias, eps)`` on the host's Triton."""

    name = "liger_layer_norm"

    def forward(self, inp: OpInput) -> Callable[[], Any]:
        from liger_kernel.ops.layer_norm import LigerLayerNormFunction

        x, _, weight, bias, eps = _args(inp)
        return lambda: LigerLayerNormFunction.apply(x, weight, bias, eps)


class TritonLayerNorm(LayerNormBackend):
    """This project's tutorial kernel (ktriage/catalog/kernels/layer_norm.py). Forward only: it has
    no backward kernel (TritonBench's own triton_layer_norm tutorial has one)."""

    name = "triton_layer_norm"
    fwd_only = True

    def forward(self, inp: OpInput) -> Callable[[], Any]:
        from ktriage.catalog.kernels.layer_norm import layer_norm

        x, _, weight, bias, eps = _args(inp)
        return lambda: layer_norm(x, weight, bias, eps)[0]


BACKENDS: dict[str, type[NativeBackend]] = {
    b.name: b for b in (TorchLayerNorm, TritonLayerNorm, TorchCompileLayerNorm, LigerLayerNorm)
}
