"""Kernel specs in TOML files: ``load_spec_file`` and ``dump_spec_toml`` (format in docs/specs.md).

Why TOML: a spec is written by hand next to a kernel and read in code review, so it must be short
and obvious. Every error names the file, the key and the fix, because a typo here would otherwise
surface as a compiler traceback in a worker process.
"""

from __future__ import annotations

import json
import math
import re
from pathlib import Path
from typing import Any

from msgspec import UNSET, UnsetType

from ktriage.errors import KtriageError, SpecError
from ktriage.schema.core import convert, parse_toml, read_text, size_limit
from ktriage.schema.spec_toml import FIX, FIXES, OPTION_KEYS, KernelSchema, NoneValue, SpecFileSchema, label
from ktriage.spec.model import KernelSpec, is_int_type, is_pointer_type

# Spec files are written by hand: anything over this is not one (KTRIAGE_MAX_INPUT_MB raises it).
MAX_SPEC_MB = 4


def load_spec_file(path: str | Path) -> list[KernelSpec]:
    """All kernels of a spec file (``[kernel]`` or several ``[[kernel]]``), validated against their source."""
    path = Path(path)
    text = read_text(path, what="spec file", limit=size_limit(MAX_SPEC_MB), error=SpecError)
    return loads_spec(text, base_dir=path.resolve().parent, origin=str(path))


def loads_spec(text: str, *, base_dir: Path, origin: str = "<string>") -> list[KernelSpec]:
    """Parse spec TOML text through its schema (``ktriage.schema.spec_toml``); relative ``.py``
    sources are taken from ``base_dir``."""
    doc = parse_toml(text, origin=origin)
    if "kernel" not in doc:
        raise SpecError(f"{origin}: no [kernel] table", "start the file with [kernel] (or [[kernel]] for several)")
    schema = convert(doc, SpecFileSchema, origin=origin, fix=FIX, fixes=FIXES, error=SpecError, label=label)
    tables = schema.kernel if isinstance(schema.kernel, list) else [schema.kernel]
    specs = []
    for i, table in enumerate(tables):
        where = f"{origin}: [kernel]" if len(tables) == 1 else f"{origin}: [[kernel]] #{i + 1}"
        try:
            specs.append(_spec_from_table(table, base_dir))
        except KtriageError as exc:
            if exc.problem.startswith(origin):
                raise
            raise SpecError(f"{where}: {exc.problem}", exc.fix) from exc
    return specs


def _spec_from_table(table: KernelSchema, base_dir: Path) -> KernelSpec:
    from ktriage.spec.source import read_params, resolve_source_file, split_source

    source = table.source
    where, fn = split_source(source)
    if where.endswith(".py") and not Path(where).is_absolute():
        source = f"{(base_dir / where).resolve()}:{fn}"
    sig = dict(table.signature)
    consts: dict[str, Any] = {k: None if isinstance(v, NoneValue) else v for k, v in table.constexprs.items()}
    options = {k: v for k in OPTION_KEYS if (v := getattr(table.options, k)) is not UNSET}
    equal_to_1 = tuple(table.specialize.equal_to_1)
    if not isinstance(table.specialize.divisible_by_16, UnsetType):
        divisible = tuple(table.specialize.divisible_by_16)
    else:  # the default: every pointer and int argument is taken as a multiple of 16
        divisible = tuple(n for n, t in sig.items() if (is_pointer_type(t) or is_int_type(t)) and n not in equal_to_1)
    grid = None if isinstance(table.grid, UnsetType) else [table.grid] if isinstance(table.grid, int) else table.grid
    spec = KernelSpec(
        name=table.name if isinstance(table.name, str) else fn,
        source=source,
        package=table.package if isinstance(table.package, str) else None,
        signature=sig,
        constexprs=consts,
        divisible_by_16=divisible,
        equal_to_1=equal_to_1,
        target=table.target,
        grid=tuple(grid) if grid is not None else None,
        meta=dict(table.meta),
        **options,
    )
    # Constexpr parameters with a default in the source need no value in the file (like a launch).
    params = read_params(resolve_source_file(spec.source, spec.package), fn)
    filled = dict(spec.constexprs)
    for p in params:
        if spec.signature.get(p.name) == "constexpr" and p.name not in filled and p.has_default:
            from ktriage.spec.source import Unresolved

            if not isinstance(p.default, Unresolved):
                filled[p.name] = p.default
    if filled != spec.constexprs:
        spec = spec.replace(constexprs=filled)
    return spec.validate(check_source=True)


# --------------------------------------------------------------------------- writing
_BARE = re.compile(r"^[A-Za-z0-9_-]+$")


def _key(k: str) -> str:
    return k if _BARE.match(k) else json.dumps(k)


def _value(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        if math.isnan(v):
            return "nan"
        if math.isinf(v):
            return "inf" if v > 0 else "-inf"
        return repr(v)
    if isinstance(v, str):
        return json.dumps(v)
    if isinstance(v, (list, tuple)):
        return "[" + ", ".join(_value(x) for x in v if x is not None) + "]"
    if isinstance(v, dict):
        return "{ " + ", ".join(f"{_key(str(k))} = {_value(x)}" for k, x in v.items() if x is not None) + " }"
    return json.dumps(str(v))


def dump_specs_toml(specs: list[KernelSpec], *, relative_to: Path | None = None) -> str:
    """Several specs as one file of ``[[kernel]]`` tables (one spec gives the ``[kernel]`` form)."""
    if len(specs) == 1:
        return dump_spec_toml(specs[0], relative_to=relative_to)
    return "\n".join(dump_spec_toml(s, relative_to=relative_to, array=True) for s in specs)


def dump_spec_toml(spec: KernelSpec, *, relative_to: Path | None = None, array: bool = False) -> str:
    """The spec as TOML text that :func:`load_spec_file` reads back to an equal spec."""
    source = spec.source
    if relative_to is not None:
        where, _, fn = source.rpartition(":")
        if where.endswith(".py"):
            try:
                source = f"{Path(where).resolve().relative_to(Path(relative_to).resolve())}:{fn}"
            except ValueError:
                pass
    lines = ["[[kernel]]" if array else "[kernel]", f"name = {_value(spec.name)}", f"source = {_value(source)}"]
    if spec.package:
        lines.append(f"package = {_value(spec.package)}")
    lines.append(f"target = {_value(spec.target)}")
    if spec.grid is not None:
        lines.append(f"grid = {_value(list(spec.grid))}")
    lines += ["", "[kernel.signature]"] + [f"{_key(k)} = {_value(v)}" for k, v in spec.signature.items()]
    if spec.constexprs:
        lines += ["", "[kernel.constexprs]"]
        for k, v in spec.constexprs.items():
            lines.append(f"{_key(k)} = {'{ none = true }' if v is None else _value(v)}")
    lines += ["", "[kernel.options]", f"num_warps = {spec.num_warps}", f"num_stages = {spec.num_stages}", f"num_ctas = {spec.num_ctas}"]
    if spec.maxnreg is not None:
        lines.append(f"maxnreg = {spec.maxnreg}")
    lines += [
        "",
        "[kernel.specialize]",
        f"divisible_by_16 = {_value(list(spec.divisible_by_16))}",
        f"equal_to_1 = {_value(list(spec.equal_to_1))}",
    ]
    if spec.meta:
        lines += ["", "[kernel.meta]"] + [f"{_key(str(k))} = {_value(v)}" for k, v in spec.meta.items() if v is not None]
    return "\n".join(lines) + "\n"
