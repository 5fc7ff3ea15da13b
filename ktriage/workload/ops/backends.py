"""Backends: what gets timed for one (op, input, mode), and what it computed.

A backend follows TritonBench's contract: it builds a zero-argument callable once per input and
mode (``prepare``), and that callable is what the timer calls. Two kinds:

- *native*: a Python callable in the GPU host's environment (torch eager, torch.compile, Liger on
  the host's Triton, this project's tutorial kernel). Defined per op in layer_norm.py, embedding.py
  and rope.py.
- *artifact*: the kernel launches of a library backend replayed from cubins of any toolchain through
  an injected launcher (replay.py), so several compiler versions run side by side in one process.

Modes are TritonBench's: ``fwd`` times the forward; ``bwd`` runs the forward once and times
``y.backward(dy, retain_graph=True)``; ``fwd_bwd`` times ``fwd(); bwd()``. The tensors whose
``.grad`` TritonBench resets between calls (its ``get_grad_to_none``) are given by
:meth:`Backend.grad_to_none`; the timer resets them outside the timed region, as
``triton.testing.do_bench`` does.

torch is imported lazily: this module loads without it.
"""

from __future__ import annotations

import abc
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar

if TYPE_CHECKING:
    from torch import Tensor

from ktriage.errors import MeasureError, SpecError, worded
from ktriage.measure.correctness import Accuracy
from ktriage.ops.inputs import InputCase
from ktriage.workload.ops.opdef import MAIN_RANDOM_SEED, bench_op, check_mode, resolve_precision

TimedCall = Callable[[], None]

# (rtol, atol) per precision for comparing a backend's outputs with the baseline's, in fp32:
# |got - ref| <= atol + rtol * |ref| elementwise. fp32 allows for reduction-order differences of
# sums over 4096 rows (layer_norm dw/db); half precisions for one rounding of each side.


@dataclass
class OpInput:
    """One generated input of an op: the tensors all backends of that input share.

    ``tensors`` holds the op's arguments and the upstream gradients of the backward (generated here,
    from the input's seed, so that every backend — native or artifact — differentiates the same dy).
    """

    op: str
    case: InputCase
    precision: str
    device: str
    tensors: dict[str, Tensor] = field(default_factory=dict)
    params: dict[str, Any] = field(default_factory=dict)  # non-tensor arguments (eps, head counts)

    @property
    def x_val(self) -> tuple[int, ...]:
        return bench_op(self.op).x_val(self.case)


def torch_dtype(precision: str) -> Any:
    import torch

    return {"fp32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}[precision]


def make_input(
    op: str, case: InputCase, *, precision: str | None = None, device: str = "cuda", seed: int = MAIN_RANDOM_SEED
) -> OpInput:
    """Generate ``case``'s tensors exactly as TritonBench's ``get_input_iter`` does (same shapes,
    dtypes and distributions), seeded per input: ``seed + case.id``.

    The values differ from a TritonBench run's (TritonBench seeds once and draws inputs 0..k in
    sequence); distributions, shapes and dtypes are the same, which is what timing depends on.
    """
    import torch

    opdef = bench_op(op)
    prec = resolve_precision(opdef, precision)
    gen = torch.Generator(device=device if device != "meta" else "cpu")
    gen.manual_seed(seed + case.id)
    inp = OpInput(op=op, case=case, precision=prec, device=device)
    opdef.impl().fill_input(inp, torch_dtype(prec), gen)
    return inp


def randn(shape: tuple[int, ...], dtype: Any, device: str, gen: Any) -> Any:
    """``torch.randn`` from the input's generator (drawn in fp32 then cast: half-precision draws
    are not supported by every generator, and TritonBench casts fp32 inputs for --precision too)."""
    import torch

    if device == "meta":
        return torch.empty(shape, dtype=dtype, device="meta")
    return torch.randn(shape, generator=gen, device=device, dtype=torch.float32).to(dtype)


def rand(shape: tuple[int, ...], dtype: Any, device: str, gen: Any) -> Any:
    import torch

    if device == "meta":
        return torch.empty(shape, dtype=dtype, device="meta")
    return torch.rand(shape, generator=gen, device=device, dtype=torch.float32).to(dtype)


class Backend(abc.ABC):
    """One TritonBench backend of one op. ``prepare`` then call the result; ``outputs`` for checks."""

    name: ClassVar[str]
    op: ClassVar[str]
    kind: ClassVar[str] = "native"
    fwd_only: ClassVar[bool] = False

    def check_mode(self, mode: str) -> None:
        check_mode(bench_op(self.op), mode)
        if self.fwd_only and mode != "fwd":
            raise SpecError(
                f"{self.name} has no backward (forward only)",
                worded(
                    lambda o: (
                        f"run it with {o('mode', '--mode', 'fwd')}, or leave {self.name} out of {o('only', '--only')}"
                    )
                ),
            )

    @abc.abstractmethod
    def prepare(self, inp: OpInput, mode: str) -> TimedCall:
        """Build what TritonBench times for this input and mode (the forward of ``bwd`` runs here, once)."""

    @abc.abstractmethod
    def outputs(self) -> dict[str, Tensor | None]:
        """Run the prepared call once from a clean state (grads reset) and return its named results
        (fwd: ``y`` or ``q``/``k``; bwd: the gradients, e.g. ``dx``/``dw``/``db``)."""

    def grad_to_none(self) -> list[Any]:
        """Tensors whose ``.grad`` the timer sets to None before every timed call (TritonBench's list)."""
        return []


class NativeBackend(Backend):
    """A backend that runs a Python callable of the host environment. Subclasses give the forward;
    the op's base class gives the backward (how TritonBench differentiates that op)."""

    def __init__(self, **options: Any) -> None:
        self.options = dict(options)
        self._inp: OpInput | None = None
        self._mode = "fwd"
        self._fwd: Callable[[], Any] | None = None
        self._bwd: Callable[[], Any] | None = None

    @abc.abstractmethod
    def forward(self, inp: OpInput) -> Callable[[], Any]:
        """TritonBench's registered benchmark: a zero-argument callable returning the op's output."""

    @abc.abstractmethod
    def backward(self, inp: OpInput, fwd: Callable[[], Any]) -> Callable[[], Any]:
        """Run ``fwd`` once and return the timed backward of its output."""

    @abc.abstractmethod
    def grad_leaves(self) -> dict[str, Tensor]:
        """Named tensors whose ``.grad`` the backward fills (e.g. dx: x, dw: weight)."""

    def fwd_outputs(self, result: Any) -> dict[str, Tensor | None]:
        return {"y": result}

    def bwd_outputs(self, result: Any) -> dict[str, Tensor | None]:
        return {name: t.grad for name, t in self.grad_leaves().items()}

    def prepare(self, inp: OpInput, mode: str) -> TimedCall:
        self.check_mode(mode)
        self._inp, self._mode = inp, mode
        fwd = self._fwd = self.forward(inp)
        if mode == "fwd":
            return _discard(fwd)
        bwd = self._bwd = self.backward(inp, fwd)
        if mode == "bwd":
            return _discard(bwd)

        def fwd_bwd() -> None:  # TritonBench's FWD_BWD: a new forward, then the backward of the first graph
            fwd()
            bwd()

        return fwd_bwd

    def outputs(self) -> dict[str, Tensor | None]:
        if self._fwd is None:
            raise MeasureError(f"{self.name}: outputs() before prepare()", "call prepare(input, mode) first")
        if self._mode == "fwd":
            return _detached(self.fwd_outputs(self._fwd()))
        assert self._bwd is not None
        for t in self.grad_leaves().values():
            t.grad = None
        return _detached(self.bwd_outputs(self._bwd()))


def _discard(fn: Callable[[], Any]) -> TimedCall:
    def call() -> None:
        fn()

    return call


def _detached(outputs: Mapping[str, Any]) -> dict[str, Tensor | None]:
    return {k: (v.detach().clone() if v is not None else None) for k, v in outputs.items()}


# ------------------------------------------------------------------------------------- registry
def native_backends(op: str) -> dict[str, type[NativeBackend]]:
    """The op's native backend classes by TritonBench name (imports the op module, i.e. torch)."""
    classes: dict[str, type[NativeBackend]] = bench_op(op).impl().BACKENDS
    return classes


def get_backend(op: str, name: str, **options: Any) -> NativeBackend:
    """A native backend instance; ``options`` go to its constructor (e.g. ``compile_mode=``)."""
    classes = native_backends(op)
    if name not in classes:
        raise SpecError(f"{op} has no backend {name!r}", f"use one of: {', '.join(classes)} (TritonBench's names)")
    return classes[name](**options)


# ------------------------------------------------------------------------------------- accuracy
def check_outputs(reference: Mapping[str, Any], candidate: Mapping[str, Any], *, precision: str) -> Accuracy:
    """Compare a backend's named outputs with the baseline's, with the tolerance of the op's precision.

    One home for correctness: each output goes through ktriage.measure.correctness.compare
    (||out-ref||/||ref|| and peak error in float64); a missing output fails."""
    from ktriage.measure.correctness import OutputCheck, compare, tolerance_for

    tol = tolerance_for(precision)
    checks = []
    for name, ref in reference.items():
        got = candidate.get(name)
        if got is None or ref is None:
            checks.append(
                OutputCheck(
                    name, precision, False, math.inf, math.inf, 0.0, 0, tol.rel, tol.peak, f"output {name!r} missing"
                )
            )
        else:
            checks.append(compare(got, ref.to(got.device), name=name, tolerance=tol))
    return Accuracy(tuple(checks))
