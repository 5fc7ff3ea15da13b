"""The launch ABI of a compiled Triton kernel: what cuLaunchKernel must be given, in order.

Triton passes the non-constexpr arguments in signature order, then hidden pointers it appends
itself: a global scratch pointer (Triton 3.3+) and a profile scratch pointer (3.5+). A runner that
launches cubins from several Triton versions side by side must know exactly which ones a cubin takes
and how big their buffers are (NULL is fine when the size is 0). We read the parameter list from the
PTX entry and check it against the signature, so a new hidden parameter is noticed, not guessed.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass

from ktriage.errors import CompileError
from ktriage.ptx import parse_ptx
from ktriage.schema.jsontypes import JSONObject, JSONValue
from ktriage.wording import plural

HIDDEN_PARAMS = ("global_scratch", "profile_scratch")


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


def _int(value: JSONValue) -> int:
    """A size from Triton's metadata: a number, or 0 when absent (None) or not a number."""
    value = value or 0
    return int(value) if isinstance(value, (int, float, str)) else 0
