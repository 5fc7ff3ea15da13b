"""The launch ABI of a compiled Triton kernel: what cuLaunchKernel must be given, in order.

Triton passes the non-constexpr arguments in signature order, then hidden pointers it appends
itself: a global scratch pointer (Triton 3.3+) and a profile scratch pointer (3.5+). A runner that
launches cubins from several Triton versions side by side must know exactly which ones a cubin takes
and how big their buffers are (NULL is fine when the size is 0). We read the parameter list from the
PTX entry and check it against the signature, so a new hidden parameter is noticed, not guessed.

A host-side tensor descriptor argument (``tensordesc<fp16[64, 64]>``, Triton 3.4+) is several PTX
parameters, as Triton's launcher expands it: lowered to TMA (its ``tensordesc_meta`` entry, sm_90+) the
128-byte CUtensorMap, then its shape (i32) and strides (i64) per dimension, in every release from 3.4 to
3.9; not lowered, a base pointer, shape and strides twice and, from 3.5, one or two flag bytes, whose
count is read off the PTX. Its parameters carry the descriptor's type: the runner cannot fill them and
says so (``measure.params.param_size``); the compile and its resources stand.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass

from ktriage.errors import CompileError
from ktriage.ptx import parse_ptx
from ktriage.schema.jsontypes import JSONObject, JSONValue
from ktriage.wording import plural

HIDDEN_PARAMS = ("global_scratch", "profile_scratch")
_DESCRIPTOR = re.compile(r"^tensordesc<[^\[>]*\[([^\]]*)\]")


@dataclass(frozen=True)
class AbiParam:
    """One kernel parameter: the spec's name (or a hidden name), its Triton type and its PTX type."""

    name: str
    triton_type: str
    ptx_type: str
    hidden: bool = False
    size_bytes_per_cta: int = 0  # for hidden scratch buffers

    def to_json(self) -> JSONObject:
        return asdict(self)

    @classmethod
    def from_json(cls, data: Mapping[str, JSONValue]) -> AbiParam:
        """The inverse of :meth:`to_json` (a bundle's ``abi`` entry); a missing or mistyped field
        is a CompileError naming it."""

        def text(key: str) -> str:
            value = data.get(key)
            if not isinstance(value, str):
                raise CompileError(f"ABI parameter field {key!r} is {value!r}, not a string", _ABI_FIX)
            return value

        size = data.get("size_bytes_per_cta", 0)
        if not isinstance(size, int) or isinstance(size, bool):
            raise CompileError(f"ABI parameter field 'size_bytes_per_cta' is {size!r}, not an integer", _ABI_FIX)
        return cls(text("name"), text("triton_type"), text("ptx_type"), bool(data.get("hidden", False)), size)


_ABI_FIX = "rebuild the bundle with this ktriage (`ktriage bench --compile-only`)"


def ptx_entry_params(ptx: str) -> tuple[str, list[str]]:
    """The kernel name and the PTX types of its parameters, in order."""
    entries = parse_ptx(ptx).entries
    if not entries:
        raise CompileError("no .entry function found in the PTX", "check that the compile produced a kernel")
    return entries[0].name, [p.ptx_type for p in entries[0].params]


def launch_abi(
    signature: dict[str, str], equal_to_1: tuple[str, ...], ptx: str, metadata: Mapping[str, JSONValue]
) -> list[AbiParam]:
    """Match the PTX parameters to the signature and name the hidden ones Triton appended."""
    _, ptx_types = ptx_entry_params(ptx)
    visible = [(n, t) for n, t in signature.items() if t != "constexpr" and n not in equal_to_1]
    if any(_DESCRIPTOR.match(t) for _, t in visible):
        return _descriptor_abi(visible, ptx_types, metadata)
    extra = len(ptx_types) - len(visible)
    if extra < 0 or extra > len(HIDDEN_PARAMS):
        raise CompileError(
            f"the PTX entry takes {plural(len(ptx_types), 'parameter')} but the signature has {plural(len(visible), 'runtime argument')}",
            "this Triton version appends hidden parameters ktriage does not know; please report it",
        )
    params = [AbiParam(n, t, ptx_types[i]) for i, (n, t) in enumerate(visible)]
    for j, hidden in enumerate(HIDDEN_PARAMS[:extra]):
        size = _int(metadata.get(f"{hidden}_size", 0))
        params.append(AbiParam(hidden, "*i8", ptx_types[len(visible) + j], hidden=True, size_bytes_per_cta=size))
    return params


def _descriptor_abi(
    visible: Sequence[tuple[str, str]], ptx_types: Sequence[str], metadata: Mapping[str, JSONValue]
) -> list[AbiParam]:
    """:func:`launch_abi` for a signature with tensor descriptors (module docstring): each one's PTX
    parameters by its rank and whether Triton lowered it to TMA; the hidden ones are those whose size
    the metadata gives (``global_scratch_size`` from 3.3, ``profile_scratch_size`` from 3.5)."""
    raw = metadata.get("tensordesc_meta")
    metas = list(raw) if isinstance(raw, list) else []
    hidden = [h for h in HIDDEN_PARAMS if f"{h}_size" in metadata]
    groups: list[tuple[int, bool]] = []  # (rank, lowered to TMA) per descriptor, in order
    for _, ty in visible:
        match = _DESCRIPTOR.match(ty)
        if match:
            groups.append(
                (
                    match.group(1).count(",") + 1,
                    isinstance(metas[len(groups)], dict) if len(groups) < len(metas) else False,
                )
            )
    plain = len(visible) - len(groups)
    known = plain + len(hidden) + sum(1 + (2 if tma else 4) * rank for rank, tma in groups)
    untouched = sum(1 for _, tma in groups if not tma)
    left = len(ptx_types) - known
    flags = left // untouched if untouched and left >= 0 and left % untouched == 0 else 0
    if left != flags * untouched or flags > 2:
        raise CompileError(
            f"the PTX entry takes {plural(len(ptx_types), 'parameter')}, which ktriage cannot match to "
            f"{plural(plain, 'argument')}, {plural(len(groups), 'tensor descriptor')} and "
            f"{plural(len(hidden), 'hidden parameter')}",
            "this Triton version passes tensor descriptors in a way ktriage does not know; please report it",
        )
    params: list[AbiParam] = []
    index = 0
    descriptors = iter(groups)
    for name, ty in visible:
        if not _DESCRIPTOR.match(ty):
            params.append(AbiParam(name, ty, ptx_types[index]))
            index += 1
            continue
        rank, tma = next(descriptors)
        count = 1 + 2 * rank if tma else 1 + 4 * rank + flags
        params += [AbiParam(name if j == 0 else f"{name}[{j}]", ty, ptx_types[index + j]) for j in range(count)]
        index += count
    for j, name in enumerate(hidden):
        size = _int(metadata.get(f"{name}_size", 0))
        params.append(AbiParam(name, "*i8", ptx_types[index + j], hidden=True, size_bytes_per_cta=size))
    return params


def _int(value: JSONValue) -> int:
    """A size from Triton's metadata: a number, or 0 when absent (None) or not a number."""
    value = value or 0
    return int(value) if isinstance(value, (int, float, str)) else 0
