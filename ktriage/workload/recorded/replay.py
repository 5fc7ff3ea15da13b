"""Replay one recorded launch on the GPU host: its arguments allocated with torch, its cubin launched.

The plan (``args``: dtypes, shapes, strides, storage sizes, fill rules) is carried out
here: each tensor argument is a view (``as_strided``) over its own flat storage, filled with seeded
data, so every toolchain's kernel can run on a fresh copy of exactly the same inputs
(:meth:`Buffers.clone`) and be compared with the reference's (``check``, storage against
storage: a write anywhere in a buffer counts, not only inside the view).

Launching goes through the bundle launcher (``ktriage.workload.bundles.launch.make_launcher``, given
the GPU loader by the caller): arguments are the spec's runtime parameters in order, tensors by
device address, a ``None`` pointer as NULL.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ktriage.errors import MeasureError
from ktriage.schema.jsontypes import JSONObject
from ktriage.workload.ops.artifacts import LaunchFn
from ktriage.workload.recorded.args import FLOAT_SCALE, LaunchPlan, ScalarArg, TensorArg
from ktriage.workload.recorded.check import ArgDiff, diff_arrays

if TYPE_CHECKING:
    from torch import Tensor

TORCH_DTYPES = {
    "fp32": "float32",
    "fp16": "float16",
    "bf16": "bfloat16",
    "fp64": "float64",
    "fp8e4nv": "float8_e4m3fn",
    "fp8e5": "float8_e5m2",
    "i64": "int64",
    "i32": "int32",
    "i16": "int16",
    "i8": "int8",
    "u8": "uint8",
    "u16": "uint16",
    "u32": "uint32",
    "u64": "uint64",
    "i1": "bool",
}


def torch_dtype(name: str) -> Any:
    import torch

    dtype = getattr(torch, TORCH_DTYPES.get(name, ""), None)
    if dtype is None:
        raise MeasureError(f"this torch has no dtype for Triton's {name}", "use a torch that has it (2.3 or newer)")
    return dtype


@dataclass
class Buffers:
    """The tensor arguments of one launch: flat storages and the views the kernel receives."""

    storages: dict[str, Tensor]
    views: dict[str, Tensor]

    def clone(self) -> Buffers:
        storages = {n: s.clone() for n, s in self.storages.items()}
        return Buffers(storages, {n: _view(storages[n], v) for n, v in self.views.items()})

    def reset_from(self, other: Buffers) -> None:
        """Copy ``other``'s contents into these buffers in place (addresses unchanged)."""
        for name, storage in self.storages.items():
            storage.copy_(other.storages[name])

    def nbytes(self) -> int:
        return sum(int(s.numel()) * int(s.element_size()) for s in self.storages.values())


def _view(storage: Any, like: Any) -> Any:
    return storage.as_strided(tuple(like.shape), tuple(like.stride()), int(like.storage_offset()))


def _fill(arg: TensorArg, storage: Any, generator: Any) -> None:
    import torch

    n = arg.storage_elems
    if arg.fill == "normal" and arg.dtype in ("fp32", "fp16", "bf16", "fp64"):
        storage.normal_(0.0, FLOAT_SCALE, generator=generator)  # in place: no temporary of a multi-GB tensor
    elif arg.fill == "normal":  # fp8: torch draws no normal values in it
        storage.copy_(torch.randn(n, generator=generator, device=storage.device, dtype=torch.float32) * FLOAT_SCALE)
    elif arg.fill == "bits":
        storage.copy_(torch.rand(n, generator=generator, device=storage.device) < 0.5)
    elif arg.fill == "sample":  # seeded draws from the values the program used (in range, not all one row)
        pool = torch.tensor(arg.values, dtype=storage.dtype, device=storage.device)
        storage.copy_(pool[torch.randint(0, len(arg.values), (n,), generator=generator, device=storage.device)])
    else:
        storage.zero_()


def allocate(plan: LaunchPlan, *, seed: int, device: str = "cuda") -> Buffers:
    """The pristine buffers of ``plan``: seeded per argument (same seed, same data on every run)."""
    import torch

    storages: dict[str, Tensor] = {}
    views: dict[str, Tensor] = {}
    for index, arg in enumerate(plan.tensors):
        dtype = torch_dtype(arg.dtype)
        storage = torch.empty(arg.storage_elems, dtype=dtype, device=device)
        generator = torch.Generator(device=device)
        generator.manual_seed(seed * 1009 + index)
        _fill(arg, storage, generator)
        view = storage.as_strided(arg.shape, arg.strides, arg.offset)
        if arg.fill == "values":
            view.copy_(torch.tensor(arg.values, dtype=dtype, device=device).reshape(arg.shape))
        storages[arg.name], views[arg.name] = storage, view
    return Buffers(storages, views)


def runtime_args(plan: LaunchPlan, buffers: Buffers) -> list[int | float]:
    """The values the launcher passes, in ABI order: device addresses, ints (bools as 0/1), floats."""
    out: list[int | float] = []
    for arg in plan.runtime:
        if isinstance(arg, TensorArg):
            out.append(int(buffers.views[arg.name].data_ptr()))
        elif isinstance(arg, ScalarArg):
            value = arg.value
            out.append(0 if value is None else int(value) if isinstance(value, bool) else value)
    return out


class RecordedKernel:
    """One toolchain's kernel of one entry: ``kernel(buffers)`` launches it on those buffers."""

    def __init__(self, launch: LaunchFn, spec_key: str, plan: LaunchPlan) -> None:
        self.launch, self.spec_key, self.plan = launch, spec_key, plan

    def __call__(self, buffers: Buffers) -> None:
        self.launch(self.spec_key, self.plan.grid, runtime_args(self.plan, buffers))


def compare_buffers(ref: Buffers, out: Buffers, plan: LaunchPlan) -> list[ArgDiff]:
    """Every tensor argument of ``out`` against ``ref`` (their whole storages), by the rule of
    ``check``."""
    import torch

    return [diff_arrays(a.name, a.dtype, ref.storages[a.name], out.storages[a.name], torch) for a in plan.tensors]


def bitwise_equal(a: Buffers, b: Buffers, names: Sequence[str] | None = None) -> bool:
    import torch

    return all(torch.equal(_raw(a.storages[n]), _raw(b.storages[n])) for n in (names or list(a.storages)))


def _raw(t: Any) -> Any:
    import torch

    return (
        t.view(torch.uint8)
        if t.element_size() == 1
        else t.view({2: torch.int16, 4: torch.int32, 8: torch.int64}[t.element_size()])
    )


@dataclass
class Outcome:
    """What the differential check made of one toolchain (see :func:`differential_check`)."""

    status: str  # "ok" (timed next), "wrong" or "error"
    accuracy: JSONObject
    error: str | None = None


@dataclass
class CheckResult:
    reference: str | None  # the toolchain the others were compared with (None: none ran)
    deterministic: bool  # the reference's two runs were bitwise equal
    idempotent: bool  # a second launch on the state the first left changed nothing
    outcomes: dict[str, Outcome]


def differential_check(
    order: Sequence[str],
    kernels: Mapping[str, Callable[[Buffers], None]],
    pristine: Buffers,
    plan: LaunchPlan,
    *,
    synchronize: Callable[[], None],
    describe: Callable[[BaseException], str],
) -> CheckResult:
    """Run each toolchain's kernel (``order``: the reference first) on a fresh copy of ``pristine``
    and compare its buffers with the reference's (the first toolchain that runs): the rule of
    ``ktriage.workload.recorded.check``. The reference runs twice (determinism) and once more on
    its own result (idempotence: may timed calls share buffers without a reset?). A kernel that
    raises is an "error" outcome; a sticky CUDA error is re-raised (the worker is replaced)."""
    from ktriage.workload.recorded.check import judge

    def run_fresh(tc: str) -> Buffers:
        buffers = pristine.clone()
        kernels[tc](buffers)
        synchronize()
        return buffers

    result = CheckResult(None, False, False, {})
    reference: Buffers | None = None
    for tc in order:
        try:
            out = run_fresh(tc)
            if reference is None:
                again = run_fresh(tc)
                result.deterministic = bitwise_equal(out, again)
                kernels[tc](again)
                synchronize()
                result.idempotent = result.deterministic and bitwise_equal(out, again)
                del again
                reference, result.reference = out, tc
                result.outcomes[tc] = Outcome(
                    "ok",
                    {
                        "reference": True,
                        "deterministic": result.deterministic,
                        "idempotent": result.idempotent,
                        "reset_before_each_call": not result.idempotent,
                        "compared_args": len(plan.tensors),
                    },
                )
                continue
            verdict = judge(
                compare_buffers(reference, out, plan),
                reference_deterministic=result.deterministic,
                reference_toolchain=str(result.reference),
            )
            del out
            result.outcomes[tc] = Outcome("ok" if verdict.passed else "wrong", verdict.to_cell(), verdict.reason)
        except Exception as exc:
            if getattr(exc, "sticky", False):
                raise
            result.outcomes[tc] = Outcome("error", {}, describe(exc))
    return result
