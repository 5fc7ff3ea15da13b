"""embedding as TritonBench defines it (tritonbench/operators/embedding/operator.py).

Inputs: (B,T,D) in {(32,512,768), (8,2048,4096)} x V=2**10..2**17 (the catalog sweep);
``indices = randint(0, V, (B, T))`` (int64) and one weight of ``nn.Embedding(V, D)`` (normal(0,1)),
copied into each backend's own module. Backward: ``y.backward(randn_like(y), retain_graph=True)``.
TritonBench resets no grads for this op, so the weight's gradient accumulates: the timed backward
includes autograd's ``weight.grad += grad_weight`` (a V x D add) after the first call.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ktriage.workload.backends import NativeBackend, OpInput, randn

TORCH_COMPILE_MODE = "max-autotune-no-cudagraphs"


def fill_input(inp: OpInput, dtype: Any, gen: Any) -> None:
    import torch

    b, t, d, v = (inp.case.facts[k] for k in ("B", "T", "D", "V"))
    if inp.device == "meta":
        indices = torch.empty((b, t), dtype=torch.int64, device="meta")
    else:
        indices = torch.randint(0, v, (b, t), generator=gen, device=inp.device)
    inp.tensors.update(indices=indices, weight=randn((v, d), dtype, inp.device, gen), dy=randn((b, t, d), dtype, inp.device, gen))
    inp.params.update(V=v, D=d)


class EmbeddingBackend(NativeBackend):
    """TritonBench's embedding protocol; each backend owns a module whose weight copies the input's."""

    op = "embedding"
    module: Any = None

    def make_module(self, inp: OpInput) -> Any:
        raise NotImplementedError

    def _module(self, inp: OpInput) -> Any:
        import torch

        with torch.device(inp.device):
            mod = self.make_module(inp).to(inp.tensors["weight"].dtype)
        with torch.no_grad():
            mod.weight.copy_(inp.tensors["weight"])
        self.module = mod
        return mod

    def backward(self, inp: OpInput, fwd: Callable[[], Any]) -> Callable[[], Any]:
        y = fwd()
        dy = inp.tensors["dy"]
        return lambda: y.backward(dy, retain_graph=True)

    def grad_leaves(self) -> dict[str, Any]:
        return {"dweight": self.module.weight}


class TorchEmbedding(EmbeddingBackend):
    """``torch.nn.Embedding`` (TritonBench's baseline)."""

    name = "torch_embedding"

    def make_module(self, inp: OpInput) -> Any:
        from torch.nn import Embedding

        return Embedding(inp.params["V"], inp.params["D"])

    def forward(self, inp: OpInput) -> Callable[[], Any]:
        mod, idx = self._module(inp), inp.tensors["indices"]
        return lambda: mod(idx)


class LigerEmbedding(EmbeddingBackend):
    """``liger_kernel.transformers.experimental.embedding.LigerEmbedding`` on the host's Triton."""

    name = "liger_embedding"

    def make_module(self, inp: OpInput) -> Any:
        from liger_kernel.transformers.experimental.embedding import (
            LigerEmbedding as Module,
        )

        return Module(inp.params["V"], inp.params["D"])

    def forward(self, inp: OpInput) -> Callable[[], Any]:
        mod, idx = self._module(inp), inp.tensors["indices"]
        return lambda: mod(idx)


class TorchCompileEmbedding(EmbeddingBackend):
    """``torch.compile(nn.Embedding)``; option ``compile_mode`` as for torch_compile_layer_norm."""

    name = "torch_compile_embedding"

    def make_module(self, inp: OpInput) -> Any:
        from torch.nn import Embedding

        return Embedding(inp.params["V"], inp.params["D"])

    def forward(self, inp: OpInput) -> Callable[[], Any]:
        import torch

        mode = self.options.get("compile_mode", TORCH_COMPILE_MODE)
        mod, idx = self._module(inp), inp.tensors["indices"]
        compiled: Callable[..., Any] = torch.compile(mod, mode=None if mode == "default" else mode)
        return lambda: compiled(idx)


BACKENDS: dict[str, type[NativeBackend]] = {b.name: b for b in (TorchEmbedding, LigerEmbedding, TorchCompileEmbedding)}
