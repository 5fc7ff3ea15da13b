"""Kernel parameters as bytes, from an artifact's launch ABI: the pure half of the runner.

Why its own module: packing is where a cross-version runner silently goes wrong (a bf16 scalar
passed as 4 bytes, a forgotten hidden scratch pointer), and it needs no GPU, so it is unit-tested
on a CPU machine. ``ktriage.measure.launch`` turns these bytes into the ``void**`` array the driver
reads; the driver copies exactly as many bytes per parameter as the kernel image declares.

Facts used (PTX of Triton 3.3.1 and 3.4.0 for sm_90, checked on the CPU machine):
- pointers are ``.param .u64``; i1/i8/u8 ``.u8``; i16/u16 ``.u16``; i32/u32 ``.u32``;
  i64/u64 ``.u64``; fp32 ``.f32``; fp64 ``.f64``; fp16 and bf16 ``.align 2 .b8 p[2]`` (raw bits).
- hidden scratch pointers come last (global scratch from 3.3, profile scratch from 3.5); the
  launcher passes NULL when the metadata size is 0, else a buffer of
  ``grid_x*grid_y*grid_z * num_ctas * size_per_cta`` bytes (3.4+; 3.3.1 allocated
  ``grid * size``, which the 3.4+ size covers, since num_ctas >= 1).
"""

from __future__ import annotations

import math
import struct
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ktriage.compile.abi import AbiParam
from ktriage.errors import MeasureError
from ktriage.wording import agree, plural

#: Bytes of each Triton scalar type as the kernel receives it.
SCALAR_SIZES = {
    "i1": 1,
    "u1": 1,
    "i8": 1,
    "u8": 1,
    "i16": 2,
    "u16": 2,
    "i32": 4,
    "u32": 4,
    "i64": 8,
    "u64": 8,
    "fp16": 2,
    "bf16": 2,
    "fp32": 4,
    "fp64": 8,
}
_INT_SIGNED = {
    "i1": False,
    "u1": False,
    "i8": True,
    "u8": False,
    "i16": True,
    "u16": False,
    "i32": True,
    "u32": False,
    "i64": True,
    "u64": False,
}

Grid = tuple[int, int, int]


def param_size(p: AbiParam) -> int:
    """Bytes the kernel reads for ``p``; checked against the PTX type so a mismatch is loud."""
    if p.triton_type.startswith("*") or p.hidden:
        size = 8
    elif p.triton_type in SCALAR_SIZES:
        size = SCALAR_SIZES[p.triton_type]
    else:
        raise MeasureError(
            f"parameter {p.name!r} has Triton type {p.triton_type!r}, which the runner cannot pass",
            "launch this kernel through Triton's own launcher; tensor descriptors are not supported yet",
        )
    ptx_width = "".join(ch for ch in p.ptx_type if ch.isdigit())
    # fp16/bf16 scalars are declared as a 2-byte .b8 array: its element width says nothing.
    if ptx_width and not (p.ptx_type == "b8" and size == 2) and int(ptx_width) // 8 != size:
        raise MeasureError(
            f"parameter {p.name!r}: Triton type {p.triton_type} is {size} bytes but the PTX declares .{p.ptx_type}",
            "the artifact's ABI does not match its PTX; recompile it (ktriage compile) and report the mismatch",
        )
    return size


def _bf16_bits(value: float) -> int:
    """Round-to-nearest-even fp32 -> bf16, as the hardware conversion does (NaN stays NaN)."""
    bits = int.from_bytes(struct.pack("<f", value), "little")
    if math.isnan(value):
        return 0x7FC0
    rounding = 0x7FFF + ((bits >> 16) & 1)
    return ((bits + rounding) >> 16) & 0xFFFF


def encode_scalar(triton_type: str, value: float | bool) -> bytes:
    """Little-endian bytes of one scalar argument."""
    if triton_type in ("fp32", "fp64", "fp16", "bf16"):
        if not isinstance(value, (int, float)):
            raise MeasureError(
                f"expected a number for {triton_type}, got {type(value).__name__}",
                "pass a float",
            )
        f = float(value)
        if triton_type == "fp32":
            return struct.pack("<f", f)
        if triton_type == "fp64":
            return struct.pack("<d", f)
        if triton_type == "fp16":
            return struct.pack("<e", f)
        return struct.pack("<H", _bf16_bits(f))
    if triton_type in _INT_SIGNED:
        if isinstance(value, float) and not value.is_integer():
            raise MeasureError(f"expected an integer for {triton_type}, got {value!r}", "pass an int")
        size = SCALAR_SIZES[triton_type]
        v = int(value)
        lo = -(1 << (8 * size - 1)) if _INT_SIGNED[triton_type] else 0
        hi = (1 << (8 * size - (1 if _INT_SIGNED[triton_type] else 0))) - 1
        if triton_type in ("i1", "u1"):
            lo, hi = 0, 1
        if not lo <= v <= hi:
            raise MeasureError(
                f"value {v} does not fit in {triton_type}",
                "check the argument order against the ABI",
            )
        return (v & ((1 << (8 * size)) - 1)).to_bytes(size, "little")
    raise MeasureError(
        f"cannot encode a scalar of type {triton_type!r}",
        "use an int or float parameter type",
    )


def encode_pointer(address: int) -> bytes:
    if not 0 <= address < (1 << 64):
        raise MeasureError(
            f"pointer value {address:#x} is not a 64-bit address",
            "pass tensor.data_ptr()",
        )
    return address.to_bytes(8, "little")


def normalize_grid(grid: Sequence[int] | int) -> Grid:
    """A 1-3 element grid as (x, y, z); Triton's grid tuple semantics."""
    g = (grid,) if isinstance(grid, int) else tuple(int(v) for v in grid)
    if not 1 <= len(g) <= 3 or any(v < 0 for v in g):
        raise MeasureError(
            f"invalid grid {grid!r}",
            "give 1 to 3 non-negative program counts, e.g. (132,)",
        )
    return (g + (1, 1))[:3]  # type: ignore[return-value]


def num_ctas_of(metadata: Mapping[str, Any]) -> int:
    """CTAs per program: the product of cluster_dims (what the 3.4+ launcher multiplies scratch by),
    or ``num_ctas`` where cluster_dims is absent."""
    dims = metadata.get("cluster_dims")
    if dims:
        return max(1, math.prod(int(d) for d in dims))
    return max(1, int(metadata.get("num_ctas", 1) or 1))


def scratch_bytes(size_per_cta: int, grid: Grid, num_ctas: int) -> int:
    """Bytes of a hidden scratch buffer for one launch (0: pass NULL)."""
    if size_per_cta <= 0:
        return 0
    return grid[0] * grid[1] * grid[2] * num_ctas * size_per_cta


def visible_params(abi: Sequence[AbiParam]) -> list[AbiParam]:
    return [p for p in abi if not p.hidden]


def hidden_params(abi: Sequence[AbiParam]) -> list[AbiParam]:
    return [p for p in abi if p.hidden]


@dataclass(frozen=True)
class PackedParams:
    """One launch's parameters: ``blobs[i]`` is what ``kernelParams[i]`` must point to."""

    blobs: tuple[bytes, ...]
    names: tuple[str, ...]


def pack_params(
    abi: Sequence[AbiParam],
    args: Sequence[Any],
    scratch_addresses: Mapping[str, int] | None = None,
) -> PackedParams:
    """Encode ``args`` (the non-hidden ABI params, in order) plus the hidden scratch pointers.

    A pointer argument is an int address or any object with ``data_ptr()`` (a torch tensor).
    ``scratch_addresses`` maps hidden param names to buffer addresses; missing means NULL, which is
    only allowed for a buffer of size 0 (the caller sizes them with ``scratch_bytes``).
    """
    vis = visible_params(abi)
    if len(args) != len(vis):
        names = ", ".join(p.name for p in vis)
        raise MeasureError(
            f"the kernel takes {plural(len(vis), 'argument')} ({names}) but {len(args)} {agree(len(args), 'was', 'were')} given",
            "pass the runtime arguments of the spec in order, without constexprs or ints specialized to 1",
        )
    scratch = dict(scratch_addresses or {})
    blobs: list[bytes] = []
    it = iter(args)
    for p in abi:
        size = param_size(p)
        if p.hidden:
            addr = int(scratch.get(p.name, 0))
            if addr == 0 and p.size_bytes_per_cta > 0:
                raise MeasureError(
                    f"hidden {p.name} needs a buffer ({p.size_bytes_per_cta} B per CTA)",
                    "allocate it with scratch_bytes() before packing",
                )
            blob = encode_pointer(addr)
        else:
            value = next(it)
            if p.triton_type.startswith("*"):
                addr = value.data_ptr() if hasattr(value, "data_ptr") else value
                if not isinstance(addr, int) or isinstance(addr, bool):
                    raise MeasureError(
                        f"argument {p.name!r} is a pointer; got {type(value).__name__}",
                        "pass a CUDA tensor or an int device address",
                    )
                blob = encode_pointer(addr)
            else:
                if hasattr(value, "data_ptr"):
                    raise MeasureError(
                        f"argument {p.name!r} is a {p.triton_type} scalar; got a tensor",
                        "check the argument order against the ABI",
                    )
                blob = encode_scalar(p.triton_type, value)
        assert len(blob) == size
        blobs.append(blob)
    return PackedParams(tuple(blobs), tuple(p.name for p in abi))
