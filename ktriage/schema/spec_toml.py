"""The spec file (``ktriage.spec.toml_file``, format in docs/specs.md): ``[kernel]`` or ``[[kernel]]``.

What a table may hold and of which type, strictly: ``kernel = []`` or ``kernel = 3`` is refused, as
is ``constexprs = 1``, ``num_warps = 64`` (Triton's limit is 32 warps per CTA) or ``num_warps =
2**70``. Relations between fields (a constexpr that is no parameter, the signature against the
source) are checked by ``KernelSpec.validate``, which knows the source. A key left out is ``UNSET``
(TOML has no null, so an error says "expected int", not "int | null").
"""

from __future__ import annotations

import re
from typing import Annotated, Literal

import msgspec
from msgspec import UNSET, UnsetType

Ident = Annotated[str, msgspec.Meta(pattern=r"^[A-Za-z_][A-Za-z0-9_]*$", max_length=256)]
Text = Annotated[str, msgspec.Meta(max_length=4096)]


class NoneValue(msgspec.Struct, forbid_unknown_fields=True):
    """``{ none = true }``: a constexpr whose value is None (TOML has no null)."""

    none: Literal[True]


ConstexprValue = bool | Annotated[int, msgspec.Meta(ge=-(2**63), le=2**63 - 1)] | float | Text | NoneValue


class OptionsSchema(msgspec.Struct, forbid_unknown_fields=True):
    num_warps: Annotated[int, msgspec.Meta(ge=1, le=32)] | UnsetType = UNSET  # a power of two: KernelSpec.validate
    num_stages: Annotated[int, msgspec.Meta(ge=1, le=16)] | UnsetType = UNSET
    num_ctas: Annotated[int, msgspec.Meta(ge=1, le=16)] | UnsetType = UNSET
    maxnreg: Annotated[int, msgspec.Meta(ge=16, le=255)] | UnsetType = UNSET
    enable_fp_fusion: bool | UnsetType = UNSET  # a Triton compile option; false: no FFMA (KernelSpec)


class SpecializeSchema(msgspec.Struct, forbid_unknown_fields=True):
    divisible_by_16: list[Ident] | UnsetType = UNSET
    equal_to_1: list[Ident] = []


GridDim = Annotated[int, msgspec.Meta(ge=1, le=2**31 - 1)]


# A launch value of ``[kernel.args]`` (spec/values.py checks the tables: a tensor, or { none = true }).
ArgValue = bool | Annotated[int, msgspec.Meta(ge=-(2**63), le=2**63 - 1)] | float | Text | dict[str, object]


class KernelSchema(msgspec.Struct, forbid_unknown_fields=True):
    source: Annotated[str, msgspec.Meta(min_length=3, max_length=4096)]
    # by values (args) or by types (signature): one of the two, spec/toml_file.py says which is missing
    args: dict[Ident, ArgValue] | UnsetType = UNSET
    signature: (
        Annotated[dict[Ident, Annotated[str, msgspec.Meta(max_length=64)]], msgspec.Meta(min_length=1)] | UnsetType
    ) = UNSET
    autotune_config: Annotated[int, msgspec.Meta(ge=0, le=100_000)] | UnsetType = UNSET
    name: Annotated[str, msgspec.Meta(min_length=1, max_length=512)] | UnsetType = UNSET
    package: Annotated[str, msgspec.Meta(min_length=1, max_length=512)] | UnsetType = UNSET
    target: Annotated[str, msgspec.Meta(max_length=32)] = "sm_90"
    grid: GridDim | Annotated[list[GridDim], msgspec.Meta(min_length=1, max_length=3)] | UnsetType = UNSET
    constexprs: dict[Ident, ConstexprValue] = {}
    options: OptionsSchema = msgspec.field(default_factory=OptionsSchema)
    specialize: SpecializeSchema = msgspec.field(default_factory=SpecializeSchema)
    meta: dict[str, object] = {}


class SpecFileSchema(msgspec.Struct, forbid_unknown_fields=True):
    kernel: KernelSchema | Annotated[list[KernelSchema], msgspec.Meta(min_length=1, max_length=10_000)]


class SpecFileShape(msgspec.Struct, forbid_unknown_fields=True):
    """The file's shape only (``kernel`` a table or a non-empty array of tables): the loader takes each
    table through ``KernelSchema`` on its own, so that one bad table does not refuse the others."""

    kernel: dict[str, object] | Annotated[list[dict[str, object]], msgspec.Meta(min_length=1, max_length=10_000)]


KERNEL_KEYS = tuple(KernelSchema.__struct_fields__)
OPTION_KEYS = tuple(OptionsSchema.__struct_fields__)
SPECIALIZE_KEYS = tuple(SpecializeSchema.__struct_fields__)

FIX = "see docs/specs.md for the format of a spec file"
FIXES = {
    "kernel": "write one [kernel] table, or [[kernel]] tables for several (kernel = [] or a value is not a kernel)",
    "kernel.source": 'source = "path/to/file.py:kernel" or "package.module:kernel"',
    "kernel.args": 'give each argument\'s value under [kernel.args]: n = 4096, stride = 1, BLOCK = 128, DTYPE = "tl.float16", x = { dtype = "fp16", shape = [4096], align = 16 }',
    "kernel.autotune_config": "autotune_config is the index of the @triton.autotune config to compile, e.g. autotune_config = 0",
    "kernel.signature": 'list every argument in order under [kernel.signature], e.g. x_ptr = "*fp32"',
    "kernel.package": 'e.g. package = "liger-kernel==0.5.10"',
    "kernel.grid": "e.g. grid = [132] (1 to 3 positive integers)",
    "kernel.constexprs": 'write [kernel.constexprs] with a number, bool or string per name; { none = true } means None; Triton dtypes are written "tl.float32"',
    "kernel.options": f"write [kernel.options] with integers (enable_fp_fusion: true or false); valid options are {', '.join(OPTION_KEYS)}",
    "kernel.options.num_warps": "num_warps is a power of two from 1 to 32, e.g. num_warps = 4",
    "kernel.options.num_stages": "num_stages is an integer from 1 to 16, e.g. num_stages = 3",
    "kernel.options.num_ctas": "num_ctas is an integer from 1 to 16, e.g. num_ctas = 1",
    "kernel.options.maxnreg": "maxnreg is an integer in 16..255, or leave it out",
    "kernel.options.enable_fp_fusion": "enable_fp_fusion is true (Triton's default) or false, e.g. enable_fp_fusion = false",
    "kernel.specialize": f'write [kernel.specialize] with lists of argument names ({", ".join(SPECIALIZE_KEYS)}), e.g. divisible_by_16 = ["x_ptr", "n"]',
    "kernel.meta": "write [kernel.meta] with key = value lines",
    "kernel.name": 'e.g. name = "my_kernel"',
    "kernel.target": 'e.g. target = "sm_90"',
    # unknown keys: the fix lists the valid ones
    "*": "put every setting under [kernel]",
    "kernel.*": f"valid keys are {', '.join(KERNEL_KEYS)}",
    "kernel.options.*": f"valid options are {', '.join(OPTION_KEYS)}",
    "kernel.specialize.*": f"valid keys are {', '.join(SPECIALIZE_KEYS)}",
}

_KERNEL = re.compile(r"^kernel(?:\[(\d+)\])?\.?")


def label(path: str) -> str:
    """``kernel[1].options.num_warps`` as ``[[kernel]] #2 options.num_warps``."""
    m = _KERNEL.match(path)
    if not path:
        return "top level"
    if m is None:
        return path
    rest = path[m.end() :] or "table"
    head = f"[[kernel]] #{int(m.group(1)) + 1}" if m.group(1) is not None else "[kernel]"
    return f"{head} {rest}"
