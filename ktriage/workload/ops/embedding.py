"""embedding as TritonBench defines it (tritonbench/operators/embedding/operator.py).

Inputs: (B,T,D) in {(32,512,768), (8,2048,4096)} x V=2**10..2**17 (the catalog sweep);
``indices = randint(0, V, (B, T))`` (int64) and one weight of ``nn.Embedding(V, D)`` (normal(0,1)),
copied into each backend's own module. Backward: ``y.backward(randn_like(y), retain_graph=True)``.
TritonBench resets no grads for this op, so the weight's gradient accumulates: the timed backward
includes autograd's ``weight.grad += grad_weight`` (a V x D add) after the first call.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from torch import Tensor

from ktriage.errors import KtriageError
from ktriage.ops.tutorial_params import cdiv, next_power_of_2
from ktriage.spec.specialize import Constexpr
from ktriage.workload.ops.artifacts import ArtifactBackend, NamedArgs
from ktriage.workload.ops.backends import NativeBackend, OpInput, TimedCall, randn

TORCH_COMPILE_MODE = "max-autotune-no-cudagraphs"


def fill_input(inp: OpInput, dtype: Any, gen: Any) -> None:
    import torch

    b, t, d, v = (inp.case.facts[k] for k in ("B", "T", "D", "V"))
    if inp.device == "meta":
        indices = torch.empty((b, t), dtype=torch.int64, device="meta")
    else:
        indices = torch.randint(0, v, (b, t), generator=gen, device=inp.device)
    inp.tensors.update(
        indices=indices, weight=randn((v, d), dtype, inp.device, gen), dy=randn((b, t, d), dtype, inp.device, gen)
    )
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

    def grad_leaves(self) -> dict[str, Tensor]:
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


# ------------------------------------------------------------------ replays from compiled artifacts
class LigerEmbeddingReplay(ArtifactBackend):
    """liger-kernel 0.5.10 experimental ``LigerEmbeddingFunction``: forward gather; backward
    ``grad_weight = zeros_like(weight)`` then an atomic-add scatter of the output gradient."""

    name = "liger_embedding"
    op = "embedding"

    def prepare(self, inp: OpInput, mode: str) -> TimedCall:
        import torch

        self._bind(inp, mode)
        t = inp.tensors
        self._w = t["weight"].detach()
        self._idx = t["indices"].reshape(-1)
        d = self._w.shape[1]
        self._dy = t["dy"].contiguous().view(-1, d)
        self._block = next_power_of_2(min(128, d))
        n = self._idx.numel()
        self._grid = (cdiv(n, self._block), cdiv(d, self._block))
        self._wgrad = torch.zeros_like(self._w)
        self._fixed_out = torch.empty((n, d), dtype=self._w.dtype, device=self._w.device)
        self._fixed_gw = torch.zeros_like(self._w)
        roles = tuple(self.kernels)
        if "fwd" in roles:
            self.run_fwd(self._fixed_out)
        if "bwd" in roles:
            self.run_bwd(self._fixed_gw)
        if self.timing == "kernel":

            def kernel_only() -> None:
                if "fwd" in roles:
                    self.run_fwd(self._fixed_out)
                if "bwd" in roles:
                    self.run_bwd(self._fixed_gw)

            return kernel_only
        accumulate = self.timing == "tritonbench"

        def call() -> None:
            if "fwd" in roles:
                self.run_fwd()
            if "bwd" in roles:
                gw = self.run_bwd()
                if accumulate:
                    self._wgrad.add_(gw)

        return call

    def _consts(self) -> NamedArgs:
        return [
            ("embedding_dim", Constexpr(self._w.shape[1])),
            ("BLOCK_SIZE_M", Constexpr(self._block)),
            ("BLOCK_SIZE_N", Constexpr(self._block)),
        ]

    def fwd_args(self, out: Any) -> NamedArgs:
        return [
            ("embeddings_ptr", self._w),
            ("indices_ptr", self._idx),
            ("output_ptr", out),
            ("n_elements", self._idx.numel()),
            *self._consts(),
        ]

    def bwd_args(self, grad_weight: Any) -> NamedArgs:
        return [
            ("grad_output_ptr", self._dy),
            ("grad_weight_ptr", grad_weight),
            ("indices_ptr", self._idx),
            ("n_elements", self._idx.numel()),
            *self._consts(),
        ]

    def run_fwd(self, out: Any = None) -> Any:
        import torch

        if out is None:
            out = torch.empty((self._idx.numel(), self._w.shape[1]), dtype=self._w.dtype, device=self._w.device)
        self.kernels["fwd"](self._grid, self.fwd_args(out))
        return out

    def run_bwd(self, grad_weight: Any = None) -> Any:
        import torch

        if grad_weight is None:
            grad_weight = torch.zeros_like(self._w)
        self.kernels["bwd"](self._grid, self.bwd_args(grad_weight))
        return grad_weight

    def outputs(self) -> dict[str, Tensor | None]:
        if self._inp is None:
            raise KtriageError(f"{self.name}: outputs() before prepare()", "call prepare(input, mode) first")
        if self._mode == "fwd":
            shape = tuple(self._inp.tensors["indices"].shape) + (self._w.shape[1],)
            return {"y": self.run_fwd().view(shape)}
        return {"dweight": self.run_bwd()}
