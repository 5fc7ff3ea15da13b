"""The mechanics of artifact backends: a library's kernel launches replayed from compiled cubins of any
toolchain. The replays themselves are per operator, next to its native backends
(``ktriage/workload/ops/<op>.py``); ``ktriage.workload.ops.replay`` finds them through the operators' registry.

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
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from ktriage.errors import KtriageError, worded
from ktriage.ops.inputs import InputCase
from ktriage.spec.model import KernelSpec
from ktriage.spec.specialize import Ptr, canonical_dtype, specialize_args
from ktriage.workload.ops.backends import Backend, OpInput

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
        raise KtriageError(
            f"{where}: the replay passes parameters {names}, the spec {spec.name!r} has {list(spec.signature)}",
            "the bundle was built for another library version: rebuild it with this ktriage",
        )
    got = specialize_args([(n, spec_value(v)) for n, v in args])
    problems = []
    if got.signature != spec.signature:
        diff = {n: (got.signature[n], spec.signature[n]) for n in names if got.signature[n] != spec.signature[n]}
        problems.append(f"types (replay, spec) {diff}")
    if got.constexprs != spec.constexprs:
        diff_c = {
            n: (got.constexprs.get(n), spec.constexprs.get(n))
            for n in set(got.constexprs) | set(spec.constexprs)
            if got.constexprs.get(n) != spec.constexprs.get(n)
        }
        problems.append(f"constexprs (replay, spec) {diff_c}")
    if set(got.divisible_by_16) != set(spec.divisible_by_16):
        problems.append(f"divisible_by_16 replay {sorted(got.divisible_by_16)} spec {sorted(spec.divisible_by_16)}")
    if set(got.equal_to_1) != set(spec.equal_to_1):
        problems.append(f"equal_to_1 replay {sorted(got.equal_to_1)} spec {sorted(spec.equal_to_1)}")
    if problems:
        raise KtriageError(
            f"{where}: the arguments do not match spec {spec.name!r}: " + "; ".join(problems),
            worded(
                lambda o: (
                    f"build the bundle for this input, precision and GPU ({o('precision', '--precision')}, "
                    f"{o('sm_count', '--sm-count')} = the GPU's SM count)"
                )
            ),
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
                raise KtriageError(
                    f"{self.where}: grid {tuple(grid)} differs from the spec's {spec.grid}",
                    worded(lambda o: f"build the bundle for this GPU's SM count ({o('sm_count', '--sm-count')})"),
                )
            self._checked = True
        self._launch(self.ref.key, tuple(grid), runtime_args(spec, args))


# ------------------------------------------------------------------------------------- backends
class ArtifactBackend(Backend):
    """Base of the replays: resolves the kernels for an input, runs roles, picks the timing target."""

    kind = "artifact"

    def __init__(
        self, *, launch: LaunchFn, specs: SpecSource, timing: str = "tritonbench", sm_count: int | None = None
    ) -> None:
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
