"""layer_norm as TritonBench defines it (tritonbench/operators/layer_norm/operator.py).

Inputs: M=4096, N=512*i (i=2..31) from the catalog sweep; ``x = -2.3 + 0.5*randn(M, N)``
(requires grad), ``weight = rand(N)``, ``bias = rand(N)`` (both require grad), eps=1e-5.
Backward: ``y = fwd(); dy = 0.1*randn_like(y)``; timed ``y.backward(dy, retain_graph=True)`` with
``x.grad`` reset between calls (TritonBench's ``get_grad_to_none`` returns ``[x]``; weight and bias
grads accumulate, so the timed call includes autograd's ``weight.grad += dw`` and ``bias.grad += db``).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from torch import Tensor

from ktriage.errors import KtriageError, worded
from ktriage.ops import liger
from ktriage.ops.recipe import TL_DTYPE
from ktriage.ops.tutorial_params import layer_norm_launch
from ktriage.spec.specialize import Constexpr, canonical_dtype
from ktriage.workload.ops.artifacts import ArtifactBackend, NamedArgs
from ktriage.workload.ops.backends import NativeBackend, OpInput, TimedCall, rand, randn

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

    def grad_leaves(self) -> dict[str, Tensor]:
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


# ------------------------------------------------------------------ replays from compiled artifacts
class LigerLayerNormReplay(ArtifactBackend):
    """liger-kernel 0.5.10 ``LigerLayerNormFunction``: forward (one program per row) and backward
    (grid (sm_count,), partial _DW/_DB in W's dtype summed by torch on the host)."""

    name = "liger_layer_norm"
    op = "layer_norm"

    def prepare(self, inp: OpInput, mode: str) -> TimedCall:
        import torch

        self._bind(inp, mode)
        t = inp.tensors
        x, w, b = t["x"].detach(), t["weight"].detach(), t["bias"].detach()
        self._x, self._w, self._b, self._dy, self._eps = x, w, b, t["dy"], inp.params["eps"]
        n = x.shape[1]
        self._block, _ = liger.calculate_settings(n)
        xf = x.float()
        mean = xf.mean(dim=1)
        # Liger 0.5.10 keeps Mean/RSTD in X's dtype.
        self._mean = mean.to(x.dtype)
        self._rstd = torch.rsqrt(((xf - mean[:, None]) ** 2).mean(dim=1) + self._eps).to(x.dtype)
        if "bwd" in self.kernels:
            spec_grid = self.kernels["bwd"].ref.spec.grid
            sm = spec_grid[0] if spec_grid else 1
            dev_sm = self._device_sm_count(x)
            if dev_sm is not None and dev_sm != sm:
                raise KtriageError(
                    f"{self.name}: the bwd kernel was built for {sm} SMs, this GPU has {dev_sm}",
                    worded(lambda o: f"rebuild the bundle with {o('sm_count', '--sm-count', dev_sm)}"),
                )
            self._sm = sm
            self._wgrad = torch.zeros_like(w)  # stands for weight.grad / bias.grad, which TritonBench lets accumulate
            self._bgrad = torch.zeros_like(b)
        # Buffers of the kernel-only target, and a first (checking) launch of each role.
        self._fixed = self._alloc_fwd() if "fwd" in self.kernels else None
        self._fixed_bwd = self._alloc_bwd() if "bwd" in self.kernels else None
        return self._timed()

    # what the library allocates per call
    def _alloc_fwd(self) -> tuple[Any, Any, Any]:
        import torch

        m, n = self._x.shape
        return (
            torch.empty((m, n), dtype=self._x.dtype, device=self._x.device),
            torch.empty(m, dtype=self._x.dtype, device=self._x.device),
            torch.empty(m, dtype=self._x.dtype, device=self._x.device),
        )

    def _alloc_bwd(self) -> tuple[Any, Any, Any]:
        import torch

        m, n = self._x.shape
        return (
            torch.empty((m, n), dtype=self._x.dtype, device=self._x.device),
            torch.empty((self._sm, n), dtype=self._w.dtype, device=self._w.device),
            torch.empty((self._sm, n), dtype=self._w.dtype, device=self._w.device),
        )

    def fwd_args(self, y: Any, mean: Any, rstd: Any) -> NamedArgs:
        x, w, b = self._x, self._w, self._b
        return [
            ("Y_ptr", y),
            ("Y_row_stride", y.stride(0)),
            ("X_ptr", x),
            ("X_row_stride", x.stride(0)),
            ("W_ptr", w),
            ("W_row_stride", w.stride(0)),
            ("B_ptr", b),
            ("B_row_stride", b.stride(0)),
            ("Mean_ptr", mean),
            ("Mean_row_stride", mean.stride(0)),
            ("RSTD_ptr", rstd),
            ("RSTD_row_stride", rstd.stride(0)),
            ("n_cols", x.shape[1]),
            ("eps", self._eps),
            ("BLOCK_SIZE", Constexpr(self._block)),
        ]

    def bwd_args(self, dx: Any, dw_part: Any, db_part: Any) -> NamedArgs:
        x, dy = self._x, self._dy
        m, n = x.shape
        return [
            ("X_ptr", x),
            ("W_ptr", self._w),
            ("Mean_ptr", self._mean),
            ("RSTD_ptr", self._rstd),
            ("DX_ptr", dx),
            ("DW_ptr", dw_part),
            ("DB_ptr", db_part),
            ("DY_ptr", dy),
            ("stride_x", x.stride(0)),
            ("stride_dx", dx.stride(0)),
            ("stride_dw", dw_part.stride(0)),
            ("stride_db", db_part.stride(0)),
            ("stride_dy", dy.stride(0)),
            ("n_rows", m),
            ("n_cols", n),
            ("rows_per_program", Constexpr(math.ceil(m / self._sm))),
            ("BLOCK_SIZE", Constexpr(self._block)),
            ("dtype", Constexpr(TL_DTYPE[canonical_dtype(str(x.dtype))])),
        ]

    def run_fwd(self, bufs: tuple[Any, Any, Any] | None = None) -> Any:
        y, mean, rstd = bufs if bufs is not None else self._alloc_fwd()
        self.kernels["fwd"]((self._x.shape[0],), self.fwd_args(y, mean, rstd))
        return y

    def run_bwd(self, bufs: tuple[Any, Any, Any] | None = None, *, reduce: bool = True) -> tuple[Any, Any, Any]:
        dx, dw_part, db_part = bufs if bufs is not None else self._alloc_bwd()
        self.kernels["bwd"]((self._sm,), self.bwd_args(dx, dw_part, db_part))
        if not reduce:
            return dx, dw_part, db_part
        return dx, dw_part.sum(dim=0).to(self._w.dtype), db_part.sum(dim=0).to(self._w.dtype)

    def _timed(self) -> TimedCall:
        roles = tuple(self.kernels)
        fixed_f, fixed_b = self._fixed, self._fixed_bwd
        # First launches check the arguments against the specs (outside any timed region).
        if "fwd" in roles:
            self.run_fwd(fixed_f)
        if "bwd" in roles:
            self.run_bwd(fixed_b, reduce=False)
        if self.timing == "kernel":

            def kernel_only() -> None:
                if "fwd" in roles:
                    self.run_fwd(fixed_f)
                if "bwd" in roles:
                    self.run_bwd(fixed_b, reduce=False)

            return kernel_only
        accumulate = self.timing == "tritonbench"

        def call() -> None:
            if "fwd" in roles:
                self.run_fwd()
            if "bwd" in roles:
                _, dw, db = self.run_bwd()
                if accumulate:
                    self._wgrad.add_(dw)
                    self._bgrad.add_(db)

        return call

    def outputs(self) -> dict[str, Tensor | None]:
        if self._inp is None:
            raise KtriageError(f"{self.name}: outputs() before prepare()", "call prepare(input, mode) first")
        if self._mode == "fwd":
            return {"y": self.run_fwd()}
        dx, dw, db = self.run_bwd()
        return {"dx": dx, "dw": dw, "db": db}


class TritonLayerNormReplay(ArtifactBackend):
    """This project's tutorial layer_norm forward (ktriage/catalog/kernels/layer_norm.py), as its wrapper launches it."""

    name = "triton_layer_norm"
    op = "layer_norm"
    fwd_only = True

    def prepare(self, inp: OpInput, mode: str) -> TimedCall:
        self._bind(inp, mode)
        t = inp.tensors
        self._x, self._w, self._b, self._eps = (
            t["x"].detach(),
            t["weight"].detach(),
            t["bias"].detach(),
            inp.params["eps"],
        )
        fixed = self._alloc()
        self.run_fwd(fixed)
        kernel_only = self.timing == "kernel"

        def call() -> None:
            self.run_fwd(fixed if kernel_only else None)

        return call

    def _alloc(self) -> tuple[Any, Any, Any]:
        import torch

        m = self._x.shape[0]
        return (
            torch.empty_like(self._x),
            torch.empty(m, dtype=torch.float32, device=self._x.device),
            torch.empty(m, dtype=torch.float32, device=self._x.device),
        )

    def fwd_args(self, y: Any, mean: Any, rstd: Any) -> NamedArgs:
        x = self._x
        block = layer_norm_launch(*x.shape)["BLOCK_SIZE"]
        return [
            ("x_ptr", x),
            ("w_ptr", self._w),
            ("b_ptr", self._b),
            ("y_ptr", y),
            ("mean_ptr", mean),
            ("rstd_ptr", rstd),
            ("row_stride", x.stride(0)),
            ("n_cols", x.shape[1]),
            ("eps", self._eps),
            ("BLOCK_SIZE", Constexpr(block)),
        ]

    def run_fwd(self, bufs: tuple[Any, Any, Any] | None = None) -> Any:
        y, mean, rstd = bufs if bufs is not None else self._alloc()
        grid = layer_norm_launch(*self._x.shape)["grid"]
        assert isinstance(grid, tuple)
        self.kernels["fwd"](grid, self.fwd_args(y, mean, rstd))
        return y

    def outputs(self) -> dict[str, Tensor | None]:
        if self._inp is None:
            raise KtriageError(f"{self.name}: outputs() before prepare()", "call prepare(input, mode) first")
        return {"y": self.run_fwd()}
