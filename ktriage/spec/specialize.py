"""The one place that decides, from argument VALUES, what Triton's JIT decides for a launch.

Why values: a library launches ``kernel[grid](x, x.stride(0), n_cols, BLOCK_SIZE=...)``; what the
JIT compiles depends on those values (an int of 1 becomes the constant 1, an int or pointer that is
a multiple of 16 gets ``tt.divisibility = 16``, an int above 2**31-1 becomes i64). Recipes describe
launches the way the library makes them, by values, and this module turns them into a spec.

The rules follow ``specialize_impl`` of triton/runtime/jit.py (3.3, 3.4) and its C++ port
``python/src/specialize.cc`` (3.5, 3.6), which agree on every case below:

- ``None`` -> constexpr None; a ``tl.constexpr`` parameter -> constexpr with its value.
- ``bool`` -> "u1" (3.3 wrote "i1"; both mean int1 to the compiler), never specialized.
- ``int`` with specialization on: value 1 -> constexpr 1 (the parameter disappears from the ABI);
  else -2**31..2**31-1 -> "i32", 2**63..2**64-1 -> "u64", otherwise "i64"; and
  ``value % 16 == 0`` -> divisible by 16 (0 counts; negative multiples too).
- ``float`` -> "fp32", never specialized.
- a host-side tensor descriptor -> "tensordesc<dtype[block_shape]>", never specialized (Triton 3.4+).
- a tensor -> "*<dtype>" ("*k<dtype>" for a const annotation); divisible by 16 when its data
  pointer is a multiple of 16 (torch allocations are 512-byte aligned; views at an offset may not be).
- ``do_not_specialize`` turns off both the ==1 rule and divisibility; ``do_not_specialize_on_alignment``
  turns off divisibility only.
- An int parameter annotated with a type (``n: tl.int64``) takes that type and is never turned into
  the constant 1 (the JIT keeps the annotated type and drops the non-string key).
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ktriage.errors import SpecError
from ktriage.spec.model import INT_TYPES, SCALAR_TYPES, ConstexprValue

# torch / numpy dtype names -> Triton type names, so recipes can say "float32" or "fp32".
_DTYPE_ALIASES = {
    "float32": "fp32",
    "float": "fp32",
    "float16": "fp16",
    "half": "fp16",
    "bfloat16": "bf16",
    "float64": "fp64",
    "double": "fp64",
    "int8": "i8",
    "int16": "i16",
    "int32": "i32",
    "int": "i32",
    "int64": "i64",
    "long": "i64",
    "uint8": "u8",
    "uint16": "u16",
    "uint32": "u32",
    "uint64": "u64",
    "bool": "i1",
    "float8_e4m3fn": "fp8e4nv",
    "float8_e5m2": "fp8e5",
}

I32_MIN, I32_MAX = -(2**31), 2**31 - 1
I64_MIN, U64_MIN, U64_MAX = -(2**63), 2**63, 2**64 - 1


def canonical_dtype(dtype: str) -> str:
    """'torch.float32' / 'float32' / 'fp32' -> 'fp32' (Triton's spelling)."""
    name = dtype.split(".")[-1]
    name = _DTYPE_ALIASES.get(name, name)
    if name not in SCALAR_TYPES:
        raise SpecError(f"unknown element dtype {dtype!r}", f"use one of {', '.join(SCALAR_TYPES)}")
    return name


@dataclass(frozen=True)
class Ptr:
    """A tensor argument: element dtype and whether its data pointer is a multiple of 16 bytes."""

    dtype: str
    aligned: bool = True
    const: bool = False


@dataclass(frozen=True)
class Descriptor:
    """A host-side tensor descriptor argument (``triton.tools.tensor_descriptor.TensorDescriptor``,
    Triton 3.4+): its tensor's element dtype, shape and strides (in elements) and the block shape the
    kernel loads and stores. The JIT types it ``tensordesc<dtype[block_shape]>`` and specializes nothing
    else on it: shape and strides are runtime parameters of the kernel. ``padding`` is what an
    out-of-bounds load reads, ``"zero"`` (Triton 3.4's only behaviour, the default) or ``"nan"`` (3.5+): the
    launcher writes it into the descriptor at run time, so it changes nothing Triton compiles."""

    dtype: str
    shape: tuple[int, ...]
    strides: tuple[int, ...]
    block_shape: tuple[int, ...]
    padding: str = "zero"

    def triton_type(self) -> str:
        """The JIT's type string, as ``specialize_impl`` writes it (``tensordesc<fp16[64, 64]>``)."""
        return f"tensordesc<{canonical_dtype(self.dtype)}{list(self.block_shape)}>"


@dataclass(frozen=True)
class Constexpr:
    """A value passed to a ``tl.constexpr`` parameter (or a ``tl.constexpr(...)`` object)."""

    value: ConstexprValue


@dataclass(frozen=True)
class Specialization:
    """What the JIT derives from the argument values (the spec fields of the same names)."""

    signature: dict[str, str] = field(default_factory=dict)
    constexprs: dict[str, ConstexprValue] = field(default_factory=dict)
    divisible_by_16: tuple[str, ...] = ()
    equal_to_1: tuple[str, ...] = ()


def _int_type(name: str, value: int) -> str:
    if I32_MIN <= value <= I32_MAX:
        return "i32"
    if U64_MIN <= value <= U64_MAX:
        return "u64"
    if I64_MIN <= value < U64_MIN:
        return "i64"
    raise SpecError(
        f"argument {name} = {value} does not fit in 64 bits",
        "Triton cannot pass it; use a value in [-2**63, 2**64-1]",
    )


def specialize_args(
    params: Sequence[tuple[str, Any]],
    *,
    do_not_specialize: Collection[str] = (),
    do_not_specialize_on_alignment: Collection[str] = (),
    annotation_types: Mapping[str, str] | None = None,
) -> Specialization:
    """Apply the JIT's rules to ``(name, value)`` pairs in parameter order.

    A value is: ``Constexpr(v)`` (a ``tl.constexpr`` parameter), ``Ptr(dtype, aligned)``, a Python
    ``int``/``float``/``bool``, or ``None``. ``annotation_types`` maps a parameter to the scalar type
    of its annotation (e.g. ``"i64"`` for ``n: tl.int64``).
    """
    annotation_types = annotation_types or {}
    sig: dict[str, str] = {}
    consts: dict[str, ConstexprValue] = {}
    div: list[str] = []
    eq1: list[str] = []
    for name, value in params:
        specialize = name not in do_not_specialize
        align = name not in do_not_specialize_on_alignment
        annotated = annotation_types.get(name, "")
        if isinstance(value, Constexpr):
            sig[name], consts[name] = "constexpr", value.value
        elif value is None:
            sig[name], consts[name] = "constexpr", None
        elif isinstance(value, bool):
            sig[name] = annotated or "u1"
        elif isinstance(value, int):
            if annotated:
                # The JIT keeps the annotated type; the ==1 key is not a string, so no attribute.
                sig[name] = annotated
                if annotated in INT_TYPES and specialize and value != 1 and align and value % 16 == 0:
                    div.append(name)
            elif specialize and value == 1:
                sig[name], consts[name] = "constexpr", 1
                eq1.append(name)
            else:
                sig[name] = _int_type(name, value)
                if specialize and align and value % 16 == 0:
                    div.append(name)
        elif isinstance(value, float):
            sig[name] = annotated or "fp32"
        elif isinstance(value, Ptr):
            dtype = canonical_dtype(value.dtype)
            sig[name] = ("*k" if value.const else "*") + dtype
            if specialize and align and value.aligned:
                div.append(name)
        elif isinstance(value, Descriptor):
            sig[name] = value.triton_type()
        else:
            raise SpecError(
                f"argument {name} = {value!r} has no Triton specialization rule",
                "describe it as Ptr(dtype, aligned), an int, a float, a bool, None or Constexpr(value)",
            )
    return Specialization(sig, consts, tuple(div), tuple(eq1))


def specialize_launch(
    params: Sequence[Any],
    args: Mapping[str, Any],
) -> Specialization:
    """Bind ``args`` (by name) to the kernel's parameters like the JIT's binder, then specialize.

    ``params`` are :class:`ktriage.spec.source.ParamInfo` read from the source: a ``tl.constexpr``
    parameter takes its value as a constexpr, missing arguments take the source default,
    annotations and the decorator's ``do_not_specialize*`` lists apply.
    """
    unknown = sorted(set(args) - {p.name for p in params})
    if unknown:
        raise SpecError(
            f"arguments {unknown} are not parameters of the kernel",
            f"its parameters are {[p.name for p in params]}",
        )
    pairs: list[tuple[str, Any]] = []
    for p in params:
        if p.name in args:
            value = args[p.name]
        elif p.has_default:
            value = p.default
        else:
            raise SpecError(
                f"no value for kernel parameter {p.name!r}",
                f"pass {p.name}=... (the kernel's parameters are {[q.name for q in params]})",
            )
        if p.is_constexpr and not isinstance(value, Constexpr):
            value = Constexpr(value)
        pairs.append((p.name, value))
    return specialize_args(
        pairs,
        do_not_specialize=[p.name for p in params if p.do_not_specialize],
        do_not_specialize_on_alignment=[p.name for p in params if p.do_not_specialize_on_alignment],
        annotation_types={p.name: p.annotation_type for p in params if p.annotation_type},
    )
