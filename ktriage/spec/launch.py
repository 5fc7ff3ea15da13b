"""Launch: one kernel launch described by its argument VALUES, as a library makes it.

Why a concept of its own: a KernelSpec is what the JIT derives from a launch (types, constexprs,
divisibility); a Launch is what the library passes (a tensor of bf16 at an aligned address, an int
4096, ``BLOCK_SIZE=1024``, ``num_warps=8``). Catalog recipes restate launches; the JIT-equivalence
harness replays a launch through Triton's real launch path (decorators, binder, compile) and compares
what the JIT compiled with the spec ktriage derives from the same values (ktriage/fidelity); recording
captures launches on a GPU host. ``to_spec`` is the one conversion, through spec.specialize.

Values, in parameter order as the library passes them: ``Ptr(dtype, aligned)`` for tensors, Python
ints/floats/bools/None, ``Constexpr(v)`` for what goes to a ``tl.constexpr`` parameter, and Triton
dtypes written as strings ``"tl.float32"``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypedDict

from ktriage.errors import SpecError
from ktriage.insitu.jitrun import encode_descriptor
from ktriage.schema.jsontypes import JSONObject, JSONValue
from ktriage.spec.model import KernelSpec
from ktriage.spec.specialize import Constexpr, Descriptor, Ptr, canonical_dtype, specialize_args

# Triton's defaults when a launch passes no num_warps / num_stages (CUDAOptions, 3.2 through 3.9).
TRITON_DEFAULT_WARPS = 4
TRITON_DEFAULT_STAGES = 3
# Keyword arguments of a launch that are compile options ktriage's spec carries.
SPEC_OPTIONS = ("num_warps", "num_stages", "num_ctas", "maxnreg", "enable_fp_fusion")


@dataclass(frozen=True)
class Launch:
    """One launch: which function, the argument values, the options and the grid (see module doc)."""

    name: str
    source: str
    package: str | None
    args: tuple[tuple[str, Any], ...]
    target: str = "sm_90"
    grid: tuple[int, ...] = (1,)
    num_warps: int = TRITON_DEFAULT_WARPS
    num_stages: int = TRITON_DEFAULT_STAGES
    num_ctas: int = 1
    maxnreg: int | None = None
    enable_fp_fusion: bool = True
    meta: JSONObject = field(default_factory=dict)

    def to_spec(self) -> KernelSpec:
        """The spec the JIT compiles for this launch (spec.specialize holds the rules)."""
        sp = specialize_args(list(self.args))
        return KernelSpec(
            name=self.name,
            source=self.source,
            package=self.package,
            signature=sp.signature,
            constexprs=sp.constexprs,
            divisible_by_16=sp.divisible_by_16,
            equal_to_1=sp.equal_to_1,
            num_warps=self.num_warps,
            num_stages=self.num_stages,
            num_ctas=self.num_ctas,
            maxnreg=self.maxnreg,
            enable_fp_fusion=self.enable_fp_fusion,
            target=self.target,
            grid=self.grid,
            meta=dict(self.meta),
        )

    def encoded_args(self) -> list[list[Any]]:
        """The arguments as JSON for insitu/jitrun.py (tensors as dtype + alignment, dtypes by name)."""
        return [[name, encode_value(value)] for name, value in self.args]

    def options(self) -> dict[str, int]:
        """The option keywords of the launch (num_warps, ...), as the library passes them."""
        opts: dict[str, int] = {"num_warps": self.num_warps, "num_stages": self.num_stages}
        if self.num_ctas != 1:
            opts["num_ctas"] = self.num_ctas
        if self.maxnreg is not None:
            opts["maxnreg"] = self.maxnreg
        if not self.enable_fp_fusion:  # as the library passes it: only when it turns fusion off
            opts["enable_fp_fusion"] = False
        return opts


def encode_value(value: Any) -> Any:
    """A launch value as JSON (see insitu/jitrun.py for the encoding)."""
    if isinstance(value, Ptr):
        return {"tensor": value.dtype, "aligned": value.aligned}
    if isinstance(value, Descriptor):
        return encode_descriptor(value.dtype, value.shape, value.strides, value.block_shape, value.padding)
    if isinstance(value, Constexpr):
        return encode_value(value.value)
    if isinstance(value, str) and value.startswith("tl."):
        return {"tl": value[3:]}
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    raise SpecError(
        f"cannot describe launch value {value!r}",
        "use Ptr, Descriptor, numbers, bools, None, Constexpr or 'tl.<dtype>'",
    )


LaunchValue = Ptr | Descriptor | JSONValue
"""A launch argument as :func:`decode_value` gives it back: a tensor as its :class:`Ptr`, a host-side
tensor descriptor as its :class:`Descriptor`, a dtype as its ``tl.`` name, any other value as recorded."""


def decode_value(value: object) -> LaunchValue:
    """Inverse of :func:`encode_value`, for values recorded by insitu/jitrun.py and ``ktriage record``
    (insitu/launch_hook.py ``describe``)."""
    if isinstance(value, dict):
        if "tensor" in value:
            return Ptr(str(value["tensor"]), aligned=bool(value.get("aligned", True)))
        if "descriptor" in value:
            return decode_descriptor(value)
        if "tl" in value:
            return f"tl.{value['tl']}"
        if "unsupported" in value:
            raise SpecError(
                f"a launch argument ktriage cannot describe: {value['unsupported']}",
                "such kernels cannot be compiled from a spec yet; report the argument type",
            )
        raise SpecError(f"unknown recorded launch value {value!r}", "record it again with this ktriage")
    if value is None or isinstance(value, (str, int, float, bool, list, tuple)):
        return value
    raise SpecError(f"unknown recorded launch value {value!r}", "record it again with this ktriage")


def decode_descriptor(value: Mapping[str, Any]) -> Descriptor:
    """A recorded host-side tensor descriptor (``{"descriptor": dtype, "shape", "strides", "block_shape"}``
    and ``"padding"`` where the recording Triton has it, 3.5+) as the spec's :class:`Descriptor`. Triton's
    constructor checked it when the program made it; a hand-edited one that is no list of ints is refused."""
    try:
        dims = {key: tuple(_int(d) for d in value[key]) for key in ("shape", "strides", "block_shape")}
    except (KeyError, TypeError, ValueError):
        raise SpecError(
            f"recorded tensor descriptor {dict(value)!r} lacks a shape, strides or block_shape of integers",
            "record it again with this ktriage",
        ) from None
    padding = value.get("padding", "zero")
    if padding not in ("zero", "nan"):
        raise SpecError(
            f"recorded tensor descriptor {dict(value)!r} has padding {padding!r}", 'padding is "zero" or "nan"'
        )
    return Descriptor(
        canonical_dtype(str(value["descriptor"])),
        dims["shape"],
        dims["strides"],
        dims["block_shape"],
        str(padding),
    )


DESCRIPTOR_PADDING = "descriptor_padding"
"""The key of a recorded input's ``meta`` naming its descriptors that pad with other than zeros
(``{"out_desc": "nan"}``): a spec by types does not carry the launch, and Triton 3.4, whose descriptor
has no padding, must refuse it as it refuses the same launch by values (compile.compiler)."""


def descriptor_paddings(pairs: Sequence[Sequence[Any]]) -> dict[str, str]:
    """The recorded launch's ``[[name, encoded], ...]`` descriptors whose padding is not ``"zero"``."""
    return {
        str(pair[0]): str(pair[1]["padding"])
        for pair in pairs
        if len(pair) == 2
        and isinstance(pair[1], Mapping)
        and "descriptor" in pair[1]
        and pair[1].get("padding", "zero") != "zero"
    }


def _int(value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError(value)
    return value


class SpecOptions(TypedDict):
    """The option fields of a :class:`KernelSpec` (keywords of its constructor)."""

    num_warps: int
    num_stages: int
    num_ctas: int
    maxnreg: int | None
    enable_fp_fusion: bool


def spec_options(options: Mapping[str, Any]) -> SpecOptions:
    """The spec's option fields from a launch's option keywords (Triton's defaults where absent)."""
    return {
        "num_warps": int(options.get("num_warps") or TRITON_DEFAULT_WARPS),
        "num_stages": int(options.get("num_stages") or TRITON_DEFAULT_STAGES),
        "num_ctas": int(options.get("num_ctas") or 1),
        "maxnreg": int(options["maxnreg"]) if options.get("maxnreg") else None,
        "enable_fp_fusion": options.get("enable_fp_fusion", True) is not False,
    }


def named_args(pairs: Sequence[Sequence[Any]]) -> dict[str, LaunchValue]:
    """``[[name, encoded], ...]`` as ``{name: value}``, decoded."""
    return {str(name): decode_value(value) for name, value in pairs}
