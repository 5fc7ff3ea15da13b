"""Artifact backends: a library's kernel launches replayed from compiled cubins of any toolchain.

Why: to compare compiler versions in ONE GPU process, the library's Triton kernels cannot come from
the host's Triton JIT. A replay does what the library's host code does for one call: it allocates
the same buffers (e.g. Liger's ``_DW``/``_DB`` partials of shape (sm_count, N)), launches the catalog
kernel through an injected launcher, and does the same host-side torch work (``_DW.sum(0)``).

The launcher is a callable ``launch(kernel_key, grid, args)``: ``kernel_key`` is the spec key
(a bundle's key), ``grid`` a tuple of ints, ``args`` the runtime arguments in the kernel's ABI order
(the spec's non-constexpr parameters): pointers as int device addresses, ints as int, floats as
float. The launcher appends the hidden scratch pointers its artifact's ABI asks for.

Every launch's arguments are built from names and values the way the library passes them, and
checked once per prepare against the spec through the JIT's own rules (ktriage.spec.specialize):
same parameters in the same order, same types, same constexprs, same divisibility and ==1
specializations. A mismatch (an SM count other than the bundle's, another dtype) is an error, never
a launch of the wrong kernel.

Timing targets (``timing=``):
- ``tritonbench`` (default): what TritonBench times for the library backend: the library's
  allocations, kernel(s) and host reductions, plus autograd's accumulation into the parameters'
  ``.grad`` that TritonBench does not reset (layer_norm: weight and bias; embedding: the weight);
- ``library``: the library's own call (allocations, kernels, host reductions);
- ``kernel``: the kernel launch(es) alone, on buffers allocated at prepare.
Supported: liger-kernel 0.5.10 layer_norm and embedding (fwd, bwd, fwd_bwd) and this project's
tutorial layer_norm (fwd).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from ktriage.ops import liger, registry
from ktriage.ops.inputs import InputCase
from ktriage.ops.tutorial_params import cdiv, layer_norm_launch, next_power_of_2
from ktriage.ops.operator import load
from ktriage.ops.recipe import TL_DTYPE
from ktriage.errors import KtriageError
from ktriage.spec.model import KernelSpec
from ktriage.spec.specialize import Constexpr, Ptr, canonical_dtype, specialize_args
from ktriage.workload.backends import Backend, OpInput, TimedCall

LaunchFn = Callable[[str, tuple[int, ...], Sequence[int | float]], None]
TIMINGS = ("tritonbench", "library", "kernel")
ROLES_BY_MODE = {"fwd": ("fwd",), "bwd": ("bwd",), "fwd_bwd": ("fwd", "bwd")}
NamedArgs = list[tuple[str, Any]]


@dataclass(frozen=True)
class KernelRef:
    """A kernel to launch: the key the launcher knows it by, and the spec its arguments must match."""

    key: str
    spec: KernelSpec


SpecSource = Callable[[str, InputCase, str], KernelRef]
"""(backend name, input case, role "fwd"/"bwd") -> the kernel that backend launches for that input."""


# ------------------------------------------------------------------------------ argument binding
def _is_tensor(value: Any) -> bool:
    return hasattr(value, "data_ptr") and hasattr(value, "dtype")


def spec_value(value: Any) -> Any:
    """A launch value as the specializer sees it: tensors become Ptr(dtype, aligned)."""
    if _is_tensor(value):
        return Ptr(canonical_dtype(str(value.dtype)), aligned=value.data_ptr() % 16 == 0)
    return value


def runtime_value(value: Any) -> int | float:
    if _is_tensor(value):
        return int(value.data_ptr())
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, (int, float)):
        return value
    raise TypeError(f"cannot pass {value!r} to a kernel")


def check_args(spec: KernelSpec, args: NamedArgs, *, where: str) -> None:
    """Raise KtriageError unless ``args`` specialize exactly to ``spec`` (names, order, types, hints)."""
    names = [n for n, _ in args]
    if names != list(spec.signature):
        raise KtriageError(f"{where}: the replay passes parameters {names}, the spec {spec.name!r} has {list(spec.signature)}",
                           "the bundle was built for another library version: rebuild it with this ktriage")
    got = specialize_args([(n, spec_value(v)) for n, v in args])
    problems = []
    if got.signature != spec.signature:
        diff = {n: (got.signature[n], spec.signature[n]) for n in names if got.signature[n] != spec.signature[n]}
        problems.append(f"types (replay, spec) {diff}")
    if got.constexprs != spec.constexprs:
        diff_c = {n: (got.constexprs.get(n), spec.constexprs.get(n)) for n in set(got.constexprs) | set(spec.constexprs)
                  if got.constexprs.get(n) != spec.constexprs.get(n)}
        problems.append(f"constexprs (replay, spec) {diff_c}")
    if set(got.divisible_by_16) != set(spec.divisible_by_16):
        problems.append(f"divisible_by_16 replay {sorted(got.divisible_by_16)} spec {sorted(spec.divisible_by_16)}")
    if set(got.equal_to_1) != set(spec.equal_to_1):
        problems.append(f"equal_to_1 replay {sorted(got.equal_to_1)} spec {sorted(spec.equal_to_1)}")
    if problems:
        raise KtriageError(
            f"{where}: the arguments do not match spec {spec.name!r}: " + "; ".join(problems),
            "build the bundle for this input, precision and GPU (--precision, --sm-count = the GPU's SM count)",
        )


def runtime_args(spec: KernelSpec, args: NamedArgs) -> list[int | float]:
    """The values the launcher passes: the spec's non-constexpr parameters, in order."""
    return [runtime_value(v) for n, v in args if spec.signature[n] != "constexpr"]


class _Kernel:
    """One kernel of a replay, bound to its launcher; checks its arguments on the first launch."""

    def __init__(self, ref: KernelRef, launch: LaunchFn, where: str) -> None:
        self.ref, self._launch, self.where = ref, launch, where
        self._checked = False

    def __call__(self, grid: tuple[int, ...], args: NamedArgs) -> None:
        spec = self.ref.spec
        if not self._checked:
            check_args(spec, args, where=self.where)
            if spec.grid is not None and tuple(grid) != tuple(spec.grid):
                raise KtriageError(f"{self.where}: grid {tuple(grid)} differs from the spec's {spec.grid}",
                                   "build the bundle for this GPU's SM count (--sm-count)")
            self._checked = True
        self._launch(self.ref.key, tuple(grid), runtime_args(spec, args))


# ------------------------------------------------------------------------------------- backends
class ArtifactBackend(Backend):
    """Base of the replays: resolves the kernels for an input, runs roles, picks the timing target."""

    kind = "artifact"

    def __init__(self, *, launch: LaunchFn, specs: SpecSource, timing: str = "tritonbench", sm_count: int | None = None) -> None:
        if timing not in TIMINGS:
            raise KtriageError(f"unknown timing target {timing!r}", f"use one of: {', '.join(TIMINGS)}")
        self.launch, self.specs, self.timing, self.sm_count = launch, specs, timing, sm_count
        self.kernels: dict[str, _Kernel] = {}
        self._inp: OpInput | None = None
        self._mode = "fwd"

    def _bind(self, inp: OpInput, mode: str) -> None:
        self.check_mode(mode)
        self._inp, self._mode = inp, mode
        self.kernels = {
            role: _Kernel(self.specs(self.name, inp.case, role), self.launch, f"{self.name} {role} input {inp.case.id}")
            for role in ROLES_BY_MODE[mode]
        }

    def _device_sm_count(self, tensor: Any) -> int | None:
        if self.sm_count is not None:
            return self.sm_count
        if getattr(tensor, "is_cuda", False):
            import torch

            return int(torch.cuda.get_device_properties(tensor.device).multi_processor_count)
        return None


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
                raise KtriageError(f"{self.name}: the bwd kernel was built for {sm} SMs, this GPU has {dev_sm}",
                                   f"rebuild the bundle with --sm-count {dev_sm}")
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
        return (torch.empty((m, n), dtype=self._x.dtype, device=self._x.device),
                torch.empty(m, dtype=self._x.dtype, device=self._x.device),
                torch.empty(m, dtype=self._x.dtype, device=self._x.device))

    def _alloc_bwd(self) -> tuple[Any, Any, Any]:
        import torch

        m, n = self._x.shape
        return (torch.empty((m, n), dtype=self._x.dtype, device=self._x.device),
                torch.empty((self._sm, n), dtype=self._w.dtype, device=self._w.device),
                torch.empty((self._sm, n), dtype=self._w.dtype, device=self._w.device))

    def fwd_args(self, y: Any, mean: Any, rstd: Any) -> NamedArgs:
        x, w, b = self._x, self._w, self._b
        return [
            ("Y_ptr", y), ("Y_row_stride", y.stride(0)), ("X_ptr", x), ("X_row_stride", x.stride(0)),
            ("W_ptr", w), ("W_row_stride", w.stride(0)), ("B_ptr", b), ("B_row_stride", b.stride(0)),
            ("Mean_ptr", mean), ("Mean_row_stride", mean.stride(0)), ("RSTD_ptr", rstd), ("RSTD_row_stride", rstd.stride(0)),
            ("n_cols", x.shape[1]), ("eps", self._eps), ("BLOCK_SIZE", Constexpr(self._block)),
        ]  # fmt: skip

    def bwd_args(self, dx: Any, dw_part: Any, db_part: Any) -> NamedArgs:
        x, dy = self._x, self._dy
        m, n = x.shape
        return [
            ("X_ptr", x), ("W_ptr", self._w), ("Mean_ptr", self._mean), ("RSTD_ptr", self._rstd),
            ("DX_ptr", dx), ("DW_ptr", dw_part), ("DB_ptr", db_part), ("DY_ptr", dy),
            ("stride_x", x.stride(0)), ("stride_dx", dx.stride(0)), ("stride_dw", dw_part.stride(0)),
            ("stride_db", db_part.stride(0)), ("stride_dy", dy.stride(0)), ("n_rows", m), ("n_cols", n),
            ("rows_per_program", Constexpr(math.ceil(m / self._sm))), ("BLOCK_SIZE", Constexpr(self._block)),
            ("dtype", Constexpr(TL_DTYPE[canonical_dtype(str(x.dtype))])),
        ]  # fmt: skip

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

    def outputs(self) -> dict[str, Any]:
        if self._inp is None:
            raise KtriageError(f"{self.name}: outputs() before prepare()", "call prepare(input, mode) first")
        if self._mode == "fwd":
            return {"y": self.run_fwd()}
        dx, dw, db = self.run_bwd()
        return {"dx": dx, "dw": dw, "db": db}


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
        return [("embedding_dim", Constexpr(self._w.shape[1])), ("BLOCK_SIZE_M", Constexpr(self._block)),
                ("BLOCK_SIZE_N", Constexpr(self._block))]

    def fwd_args(self, out: Any) -> NamedArgs:
        return [("embeddings_ptr", self._w), ("indices_ptr", self._idx), ("output_ptr", out),
                ("n_elements", self._idx.numel()), *self._consts()]

    def bwd_args(self, grad_weight: Any) -> NamedArgs:
        return [("grad_output_ptr", self._dy), ("grad_weight_ptr", grad_weight), ("indices_ptr", self._idx),
                ("n_elements", self._idx.numel()), *self._consts()]

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

    def outputs(self) -> dict[str, Any]:
        if self._inp is None:
            raise KtriageError(f"{self.name}: outputs() before prepare()", "call prepare(input, mode) first")
        if self._mode == "fwd":
            shape = tuple(self._inp.tensors["indices"].shape) + (self._w.shape[1],)
            return {"y": self.run_fwd().view(shape)}
        return {"dweight": self.run_bwd()}


class TritonLayerNormReplay(ArtifactBackend):
    """This project's tutorial layer_norm forward (ktriage/catalog/kernels/layer_norm.py), as its wrapper launches it."""

    name = "triton_layer_norm"
    op = "layer_norm"
    fwd_only = True

    def prepare(self, inp: OpInput, mode: str) -> TimedCall:
        self._bind(inp, mode)
        t = inp.tensors
        self._x, self._w, self._b, self._eps = t["x"].detach(), t["weight"].detach(), t["bias"].detach(), inp.params["eps"]
        fixed = self._alloc()
        self.run_fwd(fixed)
        kernel_only = self.timing == "kernel"

        def call() -> None:
            self.run_fwd(fixed if kernel_only else None)

        return call

    def _alloc(self) -> tuple[Any, Any, Any]:
        import torch

        m = self._x.shape[0]
        return (torch.empty_like(self._x), torch.empty(m, dtype=torch.float32, device=self._x.device),
                torch.empty(m, dtype=torch.float32, device=self._x.device))

    def fwd_args(self, y: Any, mean: Any, rstd: Any) -> NamedArgs:
        x = self._x
        block = layer_norm_launch(*x.shape)["BLOCK_SIZE"]
        return [("x_ptr", x), ("w_ptr", self._w), ("b_ptr", self._b), ("y_ptr", y), ("mean_ptr", mean),
                ("rstd_ptr", rstd), ("row_stride", x.stride(0)), ("n_cols", x.shape[1]), ("eps", self._eps),
                ("BLOCK_SIZE", Constexpr(block))]

    def run_fwd(self, bufs: tuple[Any, Any, Any] | None = None) -> Any:
        y, mean, rstd = bufs if bufs is not None else self._alloc()
        grid = layer_norm_launch(*self._x.shape)["grid"]
        assert isinstance(grid, tuple)
        self.kernels["fwd"](grid, self.fwd_args(y, mean, rstd))
        return y

    def outputs(self) -> dict[str, Any]:
        if self._inp is None:
            raise KtriageError(f"{self.name}: outputs() before prepare()", "call prepare(input, mode) first")
        return {"y": self.run_fwd()}


# Which backend replays with which class is the operators' fact (``Kernels.replay`` in ktriage/ops/<op>.py).
REPLAYS: dict[str, type[ArtifactBackend]] = {b: load(k.replay) for b, k in registry.replays().items() if k.replay}


def artifact_backend(name: str, *, launch: LaunchFn, specs: SpecSource, timing: str = "tritonbench",
                     sm_count: int | None = None) -> ArtifactBackend:
    """The replay of backend ``name`` launching through ``launch`` (one instance per toolchain)."""
    if name not in REPLAYS:
        raise KtriageError(f"backend {name!r} cannot run as an artifact", f"artifact backends: {', '.join(REPLAYS)}")
    return REPLAYS[name](launch=launch, specs=specs, timing=timing, sm_count=sm_count)


# ------------------------------------------------------------------------------- spec sources
def catalog_spec(backend: str, case: InputCase, role: str, *, precision: str = "fp32", target: str = "sm_90",
                 sm_count: int = 132) -> KernelSpec:
    """The catalog spec of the kernel ``backend`` launches for ``case`` in ``role`` (the recipe of the
    release its replay is written for: liger-kernel 0.5.10)."""
    found = registry.by_backend(backend)
    if found is not None:
        _, kernels = found
        if role in kernels.modes:
            version = kernels.versions[0]
            return kernels.recipe(case, op=kernels.catalog_name(version), mode=role, dtype=precision, target=target,
                                  sm_count=sm_count, version=version).to_spec()
    raise KtriageError(f"no catalog kernel for {backend} {role}", f"artifact backends: {', '.join(REPLAYS)}")


def catalog_specs(*, precision: str = "fp32", target: str = "sm_90", sm_count: int = 132) -> SpecSource:
    """A SpecSource straight from the catalog (needs the kernel sources: the CPU machine, or a GPU
    host with the packages under the ktriage home). A bundle's ``spec_source()`` needs nothing."""

    def source(backend: str, case: InputCase, role: str) -> KernelRef:
        spec = catalog_spec(backend, case, role, precision=precision, target=target, sm_count=sm_count)
        return KernelRef(spec.key(), spec)

    return source
