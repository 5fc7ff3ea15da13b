"""How a recorded launch's arguments are rebuilt on the GPU host: the pure plan (no torch here).

Why a plan apart from the allocation: what a replay allocates (dtype, shape, strides, storage
size, how it is filled) is decided from the recorded descriptions alone (``ktriage record`` wrote
them, ``docs/record.md``), so it is tested on a CPU machine; ``replay`` only carries it out
with torch.

The fill rules, and why:

- floating tensors: seeded N(0, 1) scaled by :data:`FLOAT_SCALE` (0.1), so sums and dot products
  over tens of thousands of elements stay far from fp16/bf16 overflow and ``exp`` stays near 1;
- integer tensors recorded with ``values`` (at most 4096 elements: indices, offsets,
  ``cu_seqlens``) get exactly those values;
- larger integer tensors recorded with a ``value_sample`` (values read at evenly spaced positions,
  ``insitu/launch_hook.py``) get values drawn from that sample, seeded: every one is a value the
  program used, so an index stays in range, and a scatter's atomics spread over the rows the program
  touched instead of all hitting row 0;
- other integer tensors (recorded before the sample existed) get **zeros**: they are almost always
  indices (class targets, token ids, gather offsets) and 0 is in range for every index, where random
  integers could address outside a buffer and fault; the price is that a kernel branching on the
  values (a target equal to ``ignore_index``) takes only one path, and every atomic hits one row;
- a 64-bit integer tensor recorded as a **pointer table** (its values were addresses inside live CUDA
  allocations: a grouped GEMM's per-group A/B/C) cannot be rebuilt: the plan refuses it with that
  cause instead of a launch that faults on the recording process's addresses;
- bool tensors: seeded fair coin flips.

A host-side tensor descriptor argument (``TensorDescriptor``, Triton 3.4+) is refused with that cause:
its kernel reads a CUtensorMap the runner cannot fill (``measure.params.param_size``); explain needs no replay.

A tensor the program passed unaligned (``aligned: false``: its data pointer was not a multiple of
16 bytes, so the spec has no divisibility hint) starts one element into its storage, so the replay
sees the same misalignment. The storage holds ``storage_bytes`` (what the tensor's storage had) and
never less than the view's extent.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ktriage.errors import SpecError, worded
from ktriage.insitu.launch_hook import POINTER_TABLE

FLOAT_SCALE = 0.1
#: Element sizes of the Triton dtype names ``ktriage record`` writes (``insitu/launch_hook.py``).
ITEMSIZE = {
    "fp64": 8,
    "fp32": 4,
    "fp16": 2,
    "bf16": 2,
    "fp8e4nv": 1,
    "fp8e5": 1,
    "i64": 8,
    "i32": 4,
    "i16": 2,
    "i8": 1,
    "u64": 8,
    "u32": 4,
    "u16": 2,
    "u8": 1,
    "i1": 1,
}
FLOATS = {"fp64", "fp32", "fp16", "bf16", "fp8e4nv", "fp8e5"}
FIX = "record the program again with this ktriage (ktriage record -o W.json -- COMMAND)"


@dataclass(frozen=True)
class TensorArg:
    """One tensor argument: a view (shape, strides, offset in elements) over its own storage."""

    name: str
    dtype: str  # Triton's name: fp32, bf16, i64, i1, ...
    shape: tuple[int, ...]
    strides: tuple[int, ...]
    offset: int  # elements
    storage_elems: int
    fill: str  # "normal" | "values" | "sample" | "zeros" | "bits"
    values: Any = None  # the recorded values (nested lists, as tolist() gave them), or the sample drawn from
    runtime: bool = True  # False: the spec made it a constexpr (never for a tensor today)

    @property
    def itemsize(self) -> int:
        return ITEMSIZE[self.dtype]

    @property
    def storage_bytes(self) -> int:
        return self.storage_elems * self.itemsize


@dataclass(frozen=True)
class ScalarArg:
    """A number, bool, string, None or Triton dtype, passed as recorded."""

    name: str
    value: Any
    runtime: bool  # passed to the kernel (not a constexpr of the spec)


Arg = TensorArg | ScalarArg


@dataclass(frozen=True)
class LaunchPlan:
    """Everything one recorded launch needs: the arguments in the kernel's parameter order, and the grid."""

    args: tuple[Arg, ...]
    grid: tuple[int, ...]

    @property
    def tensors(self) -> list[TensorArg]:
        return [a for a in self.args if isinstance(a, TensorArg)]

    @property
    def runtime(self) -> list[Arg]:
        """The arguments the launcher passes, in ABI order (the spec's non-constexpr parameters)."""
        return [a for a in self.args if a.runtime]


def extent(shape: Sequence[int], strides: Sequence[int]) -> int:
    """Elements a view spans from its first element: 1 + sum((size - 1) * stride); 0 when empty."""
    if any(s == 0 for s in shape):
        return 0
    return 1 + sum((s - 1) * abs(st) for s, st in zip(shape, strides, strict=True))


def contiguous_strides(shape: Sequence[int]) -> tuple[int, ...]:
    out, step = [], 1
    for size in reversed(shape):
        out.append(step)
        step *= max(1, size)
    return tuple(reversed(out))


def tensor_arg(name: str, desc: Mapping[str, Any], *, runtime: bool = True) -> TensorArg:
    """The plan of one recorded tensor description (see the module docstring for the fill rules)."""
    dtype = str(desc.get("tensor"))
    if dtype not in ITEMSIZE:
        raise SpecError(
            f"argument {name}: tensor dtype {dtype!r} cannot be replayed",
            f"ktriage replays tensors of {', '.join(sorted(ITEMSIZE))}",
        )
    shape = tuple(int(s) for s in desc.get("shape") or ())
    strides = tuple(int(s) for s in desc.get("strides") or contiguous_strides(shape))
    if len(strides) != len(shape) or any(s < 0 for s in shape) or any(s < 0 for s in strides):
        raise SpecError(
            f"argument {name}: shape {list(shape)} and strides {list(strides)} do not describe a tensor", FIX
        )
    itemsize = ITEMSIZE[dtype]
    offset = 0 if desc.get("aligned", True) or itemsize >= 16 else 1
    need = offset + extent(shape, strides)
    recorded = desc.get("storage_bytes")
    storage = max(need, math.ceil(int(recorded) / itemsize) if isinstance(recorded, int) else 0, 1)
    if desc.get(POINTER_TABLE):
        raise SpecError(
            f"argument {name} cannot be benched: it is a pointer table ({desc[POINTER_TABLE]}): the replay "
            "cannot rebuild the addresses of the recording process",
            "bench the kernel on its own launch path on the GPU host (ktriage triage --run), or explain it "
            "from the recording: explain needs no replay",
        )
    values = desc.get("values")
    sample = desc.get("value_sample")
    if values is None and dtype not in FLOATS and dtype != "i1" and isinstance(sample, list) and sample:
        if not all(isinstance(v, int) and not isinstance(v, bool) for v in sample):
            raise SpecError(f"argument {name}: its value_sample holds non-integers", FIX)
        return TensorArg(name, dtype, shape, strides, offset, storage, "sample", list(sample), runtime)
    if values is not None and dtype not in FLOATS:
        fill = "values"
        if _count(values) != math.prod(shape):
            raise SpecError(f"argument {name}: {_count(values)} recorded values for shape {list(shape)}", FIX)
    elif dtype in FLOATS:
        fill, values = "normal", None
    elif dtype == "i1":
        fill, values = "bits", None
    else:
        fill, values = "zeros", None
    return TensorArg(name, dtype, shape, strides, offset, storage, fill, values, runtime)


def _count(values: Any) -> int:
    if isinstance(values, list):
        return sum(_count(v) for v in values)
    return 1


def plan_launch(
    args: Sequence[Sequence[Any]],
    signature: Mapping[str, str],
    grid: Sequence[int] | None,
    *,
    where: str = "the recorded launch",
    constexprs: Mapping[str, Any] | None = None,
) -> LaunchPlan:
    """The plan of one recorded input: ``args`` as the workload lists them (``[name, description]``
    pairs in parameter order), ``signature`` its spec's (which names are constexprs), its grid.

    A JIT launch records every parameter; an inductor launch only the runtime ones (inductor's
    launcher passes its config's constexprs, ``XBLOCK``, to the compiler, not the kernel): those
    come from the spec's ``constexprs``."""
    if not grid:
        raise SpecError(
            f"{where} has no recorded grid (the launch's grid could not be evaluated)",
            worded(lambda o: f"it cannot be replayed; bench the workload's other kernels ({o('kernels', '--kernel')})"),
        )
    names = [str(a[0]) for a in args]
    runtime_names = [n for n, t in signature.items() if t != "constexpr"]
    if names == runtime_names and names != list(signature) and constexprs is not None:
        recorded = {str(a[0]): a[1] for a in args}
        if all(n in constexprs for n in signature if n not in recorded):
            args = [[n, recorded[n] if n in recorded else constexprs[n]] for n in signature]
            names = list(signature)
    if names != list(signature):
        raise SpecError(f"{where}: recorded arguments {names} differ from the spec's parameters {list(signature)}", FIX)
    out: list[Arg] = []
    for name, desc in ((str(a[0]), a[1]) for a in args):
        runtime = signature[name] != "constexpr"
        if isinstance(desc, Mapping) and "descriptor" in desc:
            raise SpecError(
                f"argument {name} cannot be benched: it is a host-side tensor descriptor (TMA), and ktriage's "
                "runner cannot fill a CUtensorMap",
                "explain it from the recording (explain needs no replay: ktriage explain W.json -t OLD -t NEW), or "
                "time it on its own launch path on the GPU host (ktriage triage --run)",
            )
        if isinstance(desc, Mapping) and "tensor" in desc:
            if not runtime:
                raise SpecError(f"{where}: tensor argument {name} is a constexpr of the spec", FIX)
            out.append(tensor_arg(name, desc, runtime=runtime))
        elif isinstance(desc, Mapping):
            if runtime:
                raise SpecError(
                    f"{where}: argument {name} ({desc}) cannot be passed to the kernel",
                    "only tensors, numbers and None reach a kernel at run time",
                )
            out.append(ScalarArg(name, dict(desc), False))
        else:
            if runtime and not (desc is None or isinstance(desc, (bool, int, float))):
                raise SpecError(f"{where}: argument {name} = {desc!r} cannot be passed to the kernel", FIX)
            out.append(ScalarArg(name, desc, runtime))
    return LaunchPlan(tuple(out), tuple(int(g) for g in grid))


def short_label(
    args: Sequence[Sequence[Any]],
    signature: Mapping[str, str] | None = None,
    *,
    max_shapes: int = 4,
    max_scalars: int = 2,
) -> str:
    """A short readable name of one recorded input: the distinct tensor shapes (in argument order)
    and the runtime integer scalars that are not strides, e.g. ``2048x1024,1024,2048 n_cols=1024``.
    Constexprs are left out: all inputs of one kernel share them (they are part of its spec)."""
    shapes: list[str] = []
    scalars: list[str] = []
    for name, desc in ((str(a[0]), a[1]) for a in args):
        constexpr = signature is not None and signature.get(name) == "constexpr"
        if isinstance(desc, Mapping) and ("tensor" in desc or "descriptor" in desc):
            text = "x".join(str(s) for s in desc.get("shape") or ()) or "scalar"
            if text not in shapes:
                shapes.append(text)
        elif isinstance(desc, int) and not isinstance(desc, bool) and not constexpr and "stride" not in name.lower():
            scalars.append(f"{name}={desc}")
    parts = [",".join(shapes[:max_shapes]) + (",..." if len(shapes) > max_shapes else "")] if shapes else []
    parts += scalars[:max_scalars]
    return " ".join(parts) or "no args"
