"""Specs written by VALUES: the launch as the library makes it; each toolchain's JIT decides the rest.

Why values: what Triton compiles for ``kernel[grid](x, x.stride(0), x.stride(1), n, BLOCK=...)``
depends on the values (a stride of 1 becomes the constant 1, a multiple of 16 is marked divisible,
``@triton.heuristics`` computes constexprs from them, ``@triton.autotune`` picks tiles), and the rules
changed between Triton releases. A spec written by types (``stride_xk = "i32"``) cannot say that the
stride is 1: sglang's ``fused_moe_kernel`` written that way compiled with 255 registers and 1952 B of
spills where the real launch has 96 registers and none.

So a ``[kernel.args]`` table gives values (ints, floats, bools, ``"tl.<dtype>"``, ``{ none = true }``,
tensors as ``{ dtype, shape, strides, align }``), and:

- :func:`by_value_spec` turns them into a KernelSpec whose ``launch`` holds them. Its signature and
  specialization fields are a preview by ktriage's own rules (spec/specialize.py), for listings and
  selectors before anything is compiled; constexprs that the kernel's decorators compute are None
  there (``meta["decided_at_compile"]``).
- At compile time each toolchain asks its own Triton (insitu/launch_spec.py, through the compile
  worker): the real launch path runs the decorators and the binder, and the compile inputs the JIT
  built become that toolchain's spec (:func:`resolved_spec`). No release's rules are restated here.
- :func:`typed_int_warnings`: a spec written by types gets a warning for each int parameter it gives
  only a type, naming what that leaves unspecialized.
"""

from __future__ import annotations

import ast
import dataclasses
import logging
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, TypedDict

from ktriage.errors import SpecError
from ktriage.schema.jsontypes import JSONObject, JSONValue
from ktriage.spec.launch import SPEC_OPTIONS, encode_value
from ktriage.spec.model import KernelSpec, LaunchRecord, is_int_type
from ktriage.spec.source import ParamInfo, Unresolved, called_decorators, kernel_def
from ktriage.spec.specialize import Constexpr, Descriptor, Ptr, canonical_dtype, specialize_args
from ktriage.wording import plural

log = logging.getLogger("ktriage.spec")

# A tensor's data pointer: torch's allocations are aligned to 512 bytes; a view at an offset is not.
DEFAULT_ALIGN = 512
TENSOR_KEYS = frozenset({"dtype", "shape", "strides", "align", "const"})
# A host-side TensorDescriptor (Triton 3.4+): its tensor, and the block shape that makes it a descriptor.
DESCRIPTOR_KEYS = frozenset({"dtype", "shape", "strides", "block_shape", "padding"})
# What an out-of-bounds load through a descriptor reads: "zero" (the default, all Triton 3.4 has) or "nan" (3.5+).
DESCRIPTOR_PADDINGS = ("zero", "nan")
_DESCRIPTOR_EXAMPLE = 'a_desc = { dtype = "fp16", shape = [4096, 4096], strides = [4096, 1], block_shape = [128, 64] }'


def tensor_value(name: str, table: Mapping[str, Any]) -> tuple[Ptr, JSONObject]:
    """``{ dtype = "bf16", shape = [..], strides = [..], align = 16 }`` as a Ptr and its JSON encoding
    (shape and strides go to the stand-in tensor: heuristics may read them)."""
    extra = sorted(set(table) - TENSOR_KEYS)
    if extra:
        raise SpecError(
            f"argument {name}: {plural(len(extra), 'unknown tensor key')} {extra}",
            f"a tensor has {', '.join(sorted(TENSOR_KEYS))}",
        )
    dtype = canonical_dtype(str(table["dtype"]))
    align = table.get("align", DEFAULT_ALIGN)
    if not _is_int(align) or align < 1:
        raise SpecError(
            f"argument {name}: align = {align!r} is not a positive number of bytes",
            "give the data pointer's alignment in bytes, e.g. align = 16 (torch allocations: 512)",
        )
    shape = _dims(name, "shape", table.get("shape", []))
    strides = _dims(name, "strides", table.get("strides", []))
    const = table.get("const", False)
    if not isinstance(const, bool):
        raise SpecError(
            f"argument {name}: const = {const!r} is not true or false",
            "write const = true for a read-only (const) pointer, or leave it out",
        )
    if strides and len(strides) != len(shape):
        raise SpecError(
            f"argument {name}: {plural(len(strides), 'stride')} for {plural(len(shape), 'dimension')}",
            "give one stride per dimension (in elements, as tensor.stride() reports them)",
        )
    ptr = Ptr(dtype, aligned=align % 16 == 0, const=const)
    encoded: JSONObject = {"tensor": dtype, "aligned": ptr.aligned}
    if "shape" in table:  # given, even empty: shape = [] is a 0-d tensor of one element, not an unknown size
        encoded["shape"] = shape
    if strides:
        encoded["strides"] = strides
    return ptr, encoded


def descriptor_value(name: str, table: Mapping[str, Any]) -> Descriptor:
    """``{ dtype, shape, strides, block_shape, padding }``: the host-side ``TensorDescriptor(tensor, shape,
    strides, block_shape, padding)`` a launch passes (docs/specs.md). Checked here as Triton's constructor
    checks it (rank 1 to 5, one stride and one block dimension per dimension, the last stride 1, the others
    multiples of 16 bytes, block dimensions powers of two, padding "zero" or "nan", "nan" for floating
    types only), so a wrong one is this file's error, not every toolchain's."""
    extra = sorted(set(table) - DESCRIPTOR_KEYS)
    if extra:
        raise SpecError(
            f"argument {name}: {plural(len(extra), 'unknown tensor descriptor key')} {extra}",
            f"a tensor descriptor (a table with block_shape) has {', '.join(sorted(DESCRIPTOR_KEYS))}, e.g. "
            + _DESCRIPTOR_EXAMPLE,
        )
    dtype = canonical_dtype(str(table["dtype"]))
    if "shape" not in table:
        raise SpecError(
            f"argument {name}: a tensor descriptor without shape", f"give its shape, e.g. {_DESCRIPTOR_EXAMPLE}"
        )
    shape = _dims(name, "shape", table["shape"])
    block = _dims(name, "block_shape", table["block_shape"])
    strides = _dims(name, "strides", table["strides"]) if "strides" in table else _contiguous(shape)
    if not 1 <= len(shape) <= 5 or 0 in shape:
        raise SpecError(
            f"argument {name}: a tensor descriptor of shape {shape}", "its shape has 1 to 5 dimensions, each above 0"
        )
    for key, dims in (("strides", strides), ("block_shape", block)):
        if len(dims) != len(shape):
            raise SpecError(
                f"argument {name}: {key} has {plural(len(dims), 'dimension')} for a shape of {len(shape)}",
                f"give one per dimension of shape, e.g. {_DESCRIPTOR_EXAMPLE}",
            )
    size = _element_bytes(dtype)
    if strides[-1] != 1 or any(s * size % 16 for s in strides[:-1]):
        raise SpecError(
            f"argument {name}: strides {strides} of a {dtype} tensor descriptor: a TMA descriptor needs the last "
            "stride 1 and the others multiples of 16 bytes",
            f"describe a tensor whose last dimension is contiguous and whose rows start 16-byte aligned "
            f"(strides in elements: multiples of {16 // size} for {dtype})",
        )
    if any(d < 1 or d & (d - 1) for d in block):
        raise SpecError(
            f"argument {name}: block_shape {block} has a dimension that is not a power of two",
            "Triton's tensor descriptors load and store blocks of powers of two, e.g. block_shape = [128, 64]",
        )
    padding = table.get("padding", "zero")
    if padding not in DESCRIPTOR_PADDINGS:
        raise SpecError(
            f"argument {name}: tensor descriptor padding {padding!r}",
            'padding is "zero" (out-of-bounds loads read 0, the default) or "nan" (they read NaN; Triton 3.5+)',
        )
    if padding == "nan" and not dtype.startswith(("fp", "bf")):
        raise SpecError(
            f'argument {name}: padding = "nan" on a {dtype} tensor descriptor',
            "Triton pads with NaN for floating-point types only: drop padding (zero padding) for an integer tensor",
        )
    return Descriptor(dtype, tuple(shape), tuple(strides), tuple(block), str(padding))


def _contiguous(shape: Sequence[int]) -> list[int]:
    strides: list[int] = []
    step = 1
    for dim in reversed(shape):
        strides.insert(0, step)
        step *= dim
    return strides


def _element_bytes(dtype: str) -> int:
    """Bytes of one element of a Triton scalar type (``fp8e4nv``: 1, ``bf16``: 2, ``i1``: 1)."""
    digits = "".join(c if c.isdigit() else " " for c in dtype).split()
    return max(1, int(digits[0]) // 8) if digits else 1


def _is_int(value: object) -> bool:
    """An int as TOML or JSON gives it (a bool is no size)."""
    return isinstance(value, int) and not isinstance(value, bool)


def _dims(name: str, key: str, value: object) -> list[int]:
    """A tensor's ``shape`` or ``strides``: a list of non-negative ints. Checked here because the
    schema types ``[kernel.args]`` values as free tables: ``shape = 4096`` was a TypeError (an
    internal error, exit 3), ``shape = [-1, 64]`` or ``[1.5]`` a stand-in tensor no launch has."""
    if not isinstance(value, (list, tuple)) or not all(_is_int(v) and v >= 0 for v in value):
        raise SpecError(
            f"argument {name}: {key} = {value!r} is not a list of non-negative integers",
            f"write the tensor's {key} in elements as a list, e.g. shape = [4096, 128], strides = [128, 1]",
        )
    return [int(v) for v in value]


def decorator_params(path: Path, function: str) -> tuple[set[str], bool]:
    """(the parameters ``@triton.heuristics`` computes, "*" when its rules are a variable; whether
    ``@triton.autotune`` decorates) for ``function``, read with ``ast``: these may be left out of
    ``[kernel.args]`` (with "*" or autotune: any constexpr parameter)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    try:  # the def read_params read: a factory's (in this module or another of the project), a class body's
        fn: ast.FunctionDef | None = kernel_def(tree, function, str(path), path)
    except SpecError:
        fn = None
    heuristics: set[str] = set()
    autotuned = False
    # `k = triton.heuristics({...})(k)` decorates as `@triton.heuristics({...})` does (unsloth's cross entropy)
    applied = called_decorators(tree, function, path) if fn is not None else []
    for deco in [*(fn.decorator_list if fn is not None else []), *applied]:
        target = deco.func if isinstance(deco, ast.Call) else deco
        called = target.attr if isinstance(target, ast.Attribute) else getattr(target, "id", "")
        if called == "heuristics" and isinstance(deco, ast.Call) and deco.args and isinstance(deco.args[0], ast.Dict):
            heuristics |= {
                k.value for k in deco.args[0].keys if isinstance(k, ast.Constant) and isinstance(k.value, str)
            }
        elif called.endswith("autotune"):
            autotuned = True
        elif called == "heuristics":
            heuristics.add("*")  # rules from a variable: which constexprs they set is known at run time only
    return heuristics, autotuned


def missing_value_fix(p: ParamInfo) -> str:
    """The fix for a parameter ``[kernel.args]`` leaves out, in the values that parameter can take. Why
    two: a ``tl.constexpr`` is compiled into the kernel, so it takes a number, a bool or a string (a
    dtype as "tl.float32"), never a tensor; a runtime parameter takes a number or a tensor."""
    if p.is_constexpr:
        return (
            f"add {p.name} = <value>: a tl.constexpr takes a number, a bool (true/false) or a string "
            '(a dtype as "tl.float32"), or { none = true } for None'
        )
    return f'add {p.name} = <value> (a number, {{ none = true }}, or a tensor {{ dtype = "fp16", shape = [...] }})'


def by_value_spec(
    *,
    name: str,
    source: str,
    package: str | None,
    params: Sequence[ParamInfo],
    source_file: Path,
    args: Mapping[str, Any],
    options: Mapping[str, int],
    target: str,
    grid: Sequence[int] | None,
    autotune_config: int | None,
    meta: Mapping[str, Any],
) -> KernelSpec:
    """The KernelSpec of a ``[kernel.args]`` table (see the module docstring); ``args`` are the TOML
    values (tensors as tables, ``{ none = true }`` as ``None`` already)."""
    function = source.rpartition(":")[2]
    known = [p.name for p in params]
    unknown = [a for a in args if a not in known]
    if unknown:
        raise SpecError(f"[kernel.args] names {unknown}, which {function} does not take", f"its parameters are {known}")
    heuristics, autotuned = decorator_params(source_file, function)
    pairs: list[tuple[str, Any]] = []
    encoded: list[list[Any]] = []
    decided: list[str] = []
    for p in params:
        if p.name in args:
            value = args[p.name]
        elif p.has_default and not isinstance(p.default, Unresolved):
            pairs.append((p.name, Constexpr(p.default) if p.is_constexpr else p.default))
            continue  # the JIT's binder takes the default too: the launch does not pass it
        elif p.name in heuristics or ((autotuned or "*" in heuristics) and p.is_constexpr) or p.has_default:
            # computed by the decorators, or a default ast cannot evaluate: the JIT decides at compile
            decided.append(p.name)
            pairs.append((p.name, Constexpr(None)))
            continue
        else:
            raise SpecError(f"[kernel.args] has no value for {p.name!r}", missing_value_fix(p))
        if isinstance(value, Constexpr):
            value = value.value
        if isinstance(value, Descriptor):  # the Python form: checked as the file's table is
            value = descriptor_value(p.name, dataclasses.asdict(value))
        if isinstance(value, (Ptr, Descriptor)):
            pairs.append((p.name, value))
            encoded.append([p.name, encode_value(value)])
            continue
        if isinstance(value, Mapping):
            if "dtype" not in value:
                raise SpecError(
                    f"argument {p.name} = {dict(value)!r} is not a tensor",
                    'write a tensor as { dtype = "bf16", shape = [4096, 128], strides = [128, 1], align = 16 }, a '
                    "tensor descriptor as " + _DESCRIPTOR_EXAMPLE,
                )
            if "block_shape" in value:  # a host-side TensorDescriptor
                descriptor = descriptor_value(p.name, value)
                pairs.append((p.name, descriptor))
                encoded.append([p.name, encode_value(descriptor)])
                continue
            ptr, enc = tensor_value(p.name, value)
            pairs.append((p.name, ptr))
            encoded.append([p.name, enc])
            continue
        pairs.append((p.name, Constexpr(value) if p.is_constexpr else value))
        encoded.append([p.name, encode_value(value)])
    if autotune_config is not None and not autotuned:
        raise SpecError(
            f"autotune_config = {autotune_config} but {function} has no @triton.autotune", "remove autotune_config"
        )
    sp = specialize_args(
        pairs,
        do_not_specialize=[p.name for p in params if p.do_not_specialize],
        do_not_specialize_on_alignment=[p.name for p in params if p.do_not_specialize_on_alignment],
        annotation_types={p.name: p.annotation_type for p in params if p.annotation_type},
    )
    # enable_fp_fusion = true is Triton's default: the launch that leaves it out (one key, one artifact)
    options = {k: v for k, v in options.items() if not (k == "enable_fp_fusion" and v is True)}
    launch: LaunchRecord = {"args": encoded, "options": dict(options)}
    if grid is not None:
        launch["grid"] = [int(g) for g in grid]
    if autotune_config is not None:
        launch["autotune_config"] = int(autotune_config)
    all_meta = dict(meta)
    if decided:
        all_meta["decided_at_compile"] = decided
    opts: dict[str, Any] = {k: v for k, v in options.items() if k in SPEC_OPTIONS}
    return KernelSpec(
        name=name,
        source=source,
        package=package,
        signature=sp.signature,
        constexprs=sp.constexprs,
        divisible_by_16=sp.divisible_by_16,
        equal_to_1=sp.equal_to_1,
        target=target,
        grid=tuple(grid) if grid is not None else None,
        meta=all_meta,
        launch=launch,
        **opts,
    )


def spec_by_values(
    source: str,
    args: Mapping[str, Any],
    *,
    package: str | None = None,
    target: str = "sm_90",
    grid: Sequence[int] | None = None,
    options: Mapping[str, int] | None = None,
    autotune_config: int | None = None,
    name: str | None = None,
    meta: Mapping[str, Any] | None = None,
) -> KernelSpec:
    """The Python form of a ``[kernel.args]`` spec: ``args`` by name, tensors as ``Ptr(dtype,
    aligned)`` or ``{"dtype": ..., "shape": ..., "strides": ..., "align": ...}``; compiled as each
    toolchain's JIT specializes the launch (module docstring)."""
    from ktriage.spec.source import read_params, resolve_source_file, split_source

    function = split_source(source)[1]
    path = resolve_source_file(source, package)
    spec = by_value_spec(
        name=name or function,
        source=source,
        package=package,
        params=read_params(path, function),
        source_file=path,
        args=args,
        options=dict(options or {}),
        target=target,
        grid=grid,
        autotune_config=autotune_config,
        meta=dict(meta or {}),
    )
    return spec.validate(check_source=True)


class ResolveRequest(TypedDict):
    """The body of the compile worker's ``resolve`` request (insitu/launch_spec.py reads it)."""

    source: str
    args: list[list[JSONValue]]  # [name, encoded value] pairs (encode_value)
    options: JSONObject  # the launch's option keywords
    grid: list[int]
    autotune_config: int | None


def resolve_request(spec: KernelSpec) -> ResolveRequest:
    """The compile worker's ``resolve`` request body for a by-value spec (insitu/launch_spec.py)."""
    if spec.launch is None:
        raise SpecError(f"spec {spec.name!r} is not written by values", "only [kernel.args] specs are resolved")
    # A constexpr that tune or a fix changed, and that the launch passes, is passed changed: the
    # kernel's heuristics then see it as they would in the library.
    constexprs = (spec.launch.get("overrides") or {}).get("constexprs")
    changed = dict(constexprs) if isinstance(constexprs, Mapping) else {}
    args = [[n, encode_value(changed[n]) if n in changed else v] for n, v in spec.launch.get("args") or []]
    return {
        "source": spec.source,
        "args": args,
        "options": dict(spec.launch.get("options") or {}),
        "grid": list(spec.launch.get("grid") or [1]),
        "autotune_config": spec.launch.get("autotune_config"),
    }


def resolved_spec(spec: KernelSpec, reply: Mapping[str, Any]) -> KernelSpec:
    """``spec`` as one toolchain's JIT specialized it: the worker's ``resolve`` reply's fields. The
    result has no ``launch`` (its key is that of the same spec written by types, so both share the
    compile); the launch, the JIT-level arguments (after the decorators), the heuristics and the
    autotune config list (what ``ktriage tune`` searches, as for recorded kernels) go to ``meta``."""
    fields = dict(reply["fields"])
    meta = dict(spec.meta)
    meta.pop("decided_at_compile", None)
    meta["launch"] = spec.launch
    meta["jit_args"] = list(reply.get("jit_args") or [])
    if reply.get("heuristics"):
        meta["heuristics"] = list(reply["heuristics"])
    if reply.get("autotune_configs"):
        meta["autotune_configs"] = [_config_entry(c, fields["signature"]) for c in reply["autotune_configs"]]
        meta["autotune_config"] = int((spec.launch or {}).get("autotune_config") or 0)
    # overrides (tune's configs, fixes) on top of the JIT's decision; constexprs the launch passes
    # were already passed changed (resolve_request)
    overrides = dict((spec.launch or {}).get("overrides") or {})
    for name, value in overrides.items():
        if name == "constexprs":
            fields["constexprs"] = {**dict(fields["constexprs"]), **(dict(value) if isinstance(value, Mapping) else {})}
        else:
            fields[name] = value
    return spec.replace(
        signature=dict(fields["signature"]),
        constexprs=dict(fields["constexprs"]),
        divisible_by_16=tuple(fields["divisible_by_16"]),
        equal_to_1=tuple(fields["equal_to_1"]),
        num_warps=int(fields["num_warps"]),
        num_stages=int(fields["num_stages"]),
        num_ctas=int(fields["num_ctas"]),
        maxnreg=fields.get("maxnreg"),
        enable_fp_fusion=fields.get("enable_fp_fusion", True) is not False,
        meta=meta,
        launch=None,
    )


def decided_spec(spec: KernelSpec, resolved: KernelSpec) -> KernelSpec:
    """``spec`` (by values) with its preview replaced by what one toolchain's JIT decided (``resolved``,
    from :func:`resolved_spec`), the launch kept.

    Why: a tuner or a fix changes a spec by values as an override of the JIT's decision
    (``KernelSpec.replace``), measured against the spec's fields. The preview is ktriage's guess
    before any toolchain is asked: an ``@triton.autotune`` kernel's preview has Triton's default 4
    warps and 3 stages and no tile sizes, while its JIT compiles the autotuner's config (8 warps, 4
    stages, 128x128x64). Measured against the preview, ``ktriage tune`` labelled the JIT's config
    "warps=4,stages=3 (default)" and a config that changed num_stages only kept the JIT's 8 warps
    under a label of 4. Against the decision, the default is the config the library runs, a change is
    exactly what a candidate's label says, and the autotuner's own list (``meta.autotune_configs``)
    is what ``tune`` searches, as for a recorded kernel, with the launch's int scalars as its problem
    size (``meta.shape``) and a grid that follows the tiles where the launch's grid is theirs."""
    if spec.launch is None:
        return spec
    meta = {k: v for k, v in spec.meta.items() if k != "decided_at_compile"}
    for key in ("heuristics", "autotune_configs", "autotune_config"):
        if key in resolved.meta:
            meta[key] = resolved.meta[key]
    if "shape" not in meta:  # the launch's int scalars (a matmul's M, N, K): tune's problem size, as recorded
        shape = {
            str(name): value
            for name, value in spec.launch.get("args") or []
            if isinstance(value, int) and not isinstance(value, bool) and name not in resolved.constexprs
        }
        if shape:
            meta["shape"] = shape
    return dataclasses.replace(
        spec,
        signature=dict(resolved.signature),
        constexprs=dict(resolved.constexprs),
        divisible_by_16=tuple(resolved.divisible_by_16),
        equal_to_1=tuple(resolved.equal_to_1),
        num_warps=resolved.num_warps,
        num_stages=resolved.num_stages,
        num_ctas=resolved.num_ctas,
        maxnreg=resolved.maxnreg,
        enable_fp_fusion=resolved.enable_fp_fusion,
        meta=meta,
    )


def autotune_config_index(
    spec: KernelSpec, num_warps: int, num_stages: int, constexprs: Mapping[str, Any]
) -> int | None:
    """The index of the kernel's own ``@triton.autotune`` config that is this config (the decided spec's
    ``meta.autotune_configs``), or None. Why: that config is launched by choosing it
    (``launch.autotune_config``), so the kernel's ``@triton.heuristics`` see its tile sizes as they
    do in the library (an ``EVEN_N`` computed from ``BLOCK_N``); an override of the constexprs would
    keep the heuristics' values of the default config."""
    raw = spec.meta.get("autotune_configs")
    if spec.launch is None or not isinstance(raw, list):
        return None
    for index, entry in enumerate(raw):
        if not isinstance(entry, Mapping):
            continue
        kwargs = entry.get("kwargs")
        if (
            int(entry.get("num_warps") or spec.num_warps) == num_warps
            and int(entry.get("num_stages") or spec.num_stages) == num_stages
            and isinstance(kwargs, Mapping)
            and dict(kwargs) == {k: v for k, v in constexprs.items() if k in kwargs}
        ):
            return index
    return None


def _config_entry(entry: object, signature: Mapping[str, str]) -> JSONValue:
    """One ``@triton.autotune`` config as a recorded kernel's ``meta.autotune_configs`` holds it
    (``{"kwargs": {...}, "num_warps": 8, ...}``, insitu/launch_hook._config_view), from the worker's
    ``Config.all_kwargs()`` (the kernel's keywords and the options in one table). Why one form: ``tune``
    reads the list of a recorded kernel and of a spec file alike (tune/space._listed); read flat, every
    config had no tile sizes and the list was searched as warps and stages only."""
    if not isinstance(entry, Mapping) or "kwargs" in entry:
        return entry if isinstance(entry, Mapping) else None
    out: JSONObject = {"kwargs": {k: v for k, v in entry.items() if signature.get(k) == "constexpr"}}
    for option in ("num_warps", "num_stages", "num_ctas", "maxnreg"):
        if entry.get(option) is not None:
            out[option] = entry[option]
    return out


def typed_int_warnings(spec: KernelSpec, params: Sequence[ParamInfo], where: str) -> list[str]:
    """One line per int parameter that a spec written by types gives only a type: the JIT would have
    turned it into the constant 1 (when it is 1) and decided its divisibility by 16 from its value."""
    by_name = {p.name: p for p in params}
    lines = []
    for name, ty in spec.signature.items():
        p = by_name.get(name)
        if not is_int_type(ty) or p is None or p.do_not_specialize:
            continue
        taken = "taken as divisible by 16" if name in spec.divisible_by_16 else "not taken as divisible by 16"
        eq1 = "" if p.annotation_type else "not specialized for ==1, "
        hint = (
            "the JIT would make it the constant 1 if it is 1"
            if not p.annotation_type
            else "the JIT decides its divisibility by 16 from the value"
        )
        example = "" if p.annotation_type else f", e.g. `{name} = 1`"
        lines.append(
            f"{where}: {name}: {ty} given without a value: {eq1}{taken}; {hint} "
            f"(write the kernel by values: `{name} = <value>` under [kernel.args]{example})"
        )
    return lines


_WARNED: set[str] = set()


def warn(lines: Sequence[str]) -> None:
    """The warnings as ``warning:`` lines (the CLI routes logger ``ktriage`` to stderr), each once per
    process: a bisect reads the same spec file at every candidate."""
    for line in lines:
        if line not in _WARNED:
            _WARNED.add(line)
            log.warning(line)
