"""Kernel specs in TOML files: ``load_spec_file`` and ``dump_spec_toml`` (format in docs/specs.md).

Why TOML: a spec is written by hand next to a kernel and read in code review, so it must be short
and obvious. Every error names the file, the key and the fix, because a typo here would otherwise
surface as a compiler traceback in a worker process.
"""

from __future__ import annotations

import json
import math
import re
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ktriage.errors import FormatError, KtriageError, SpecError
from ktriage.spec.model import KernelSpec, is_int_type, is_pointer_type

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

KERNEL_KEYS = ("name", "source", "package", "target", "grid", "signature", "constexprs", "options", "specialize", "meta")
OPTION_KEYS = ("num_warps", "num_stages", "num_ctas", "maxnreg")
SPECIALIZE_KEYS = ("divisible_by_16", "equal_to_1")


def load_spec_file(path: str | Path) -> list[KernelSpec]:
    """All kernels of a spec file (``[kernel]`` or several ``[[kernel]]``), validated against their source."""
    path = Path(path)
    try:
        text = path.read_text()
    except OSError as exc:
        raise SpecError(f"cannot read spec file {path}: {exc.strerror}", "check the path") from exc
    return loads_spec(text, base_dir=path.resolve().parent, origin=str(path))


def loads_spec(text: str, *, base_dir: Path, origin: str = "<string>") -> list[KernelSpec]:
    """Parse spec TOML text; relative ``.py`` sources are taken from ``base_dir``."""
    try:
        doc = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise FormatError(f"{origin}: not valid TOML: {exc}", "fix the TOML syntax at that line") from exc
    if "kernel" not in doc:
        raise SpecError(f"{origin}: no [kernel] table", "start the file with [kernel] (or [[kernel]] for several)")
    extra = sorted(set(doc) - {"kernel"})
    if extra:
        raise SpecError(f"{origin}: unknown top-level key(s) {extra}", "put every setting under [kernel]")
    tables = doc["kernel"] if isinstance(doc["kernel"], list) else [doc["kernel"]]
    specs = []
    for i, table in enumerate(tables):
        label = f"{origin}: [kernel]" if len(tables) == 1 else f"{origin}: [[kernel]] #{i + 1}"
        try:
            specs.append(_spec_from_table(table, base_dir, label))
        except KtriageError as exc:
            if exc.problem.startswith(origin):
                raise
            raise SpecError(f"{label}: {exc.problem}", exc.fix) from exc
    return specs


def _expect(cond: bool, label: str, key: str, problem: str, fix: str) -> None:
    if not cond:
        raise SpecError(f"{label} {key}: {problem}", fix)


def _spec_from_table(table: Mapping[str, Any], base_dir: Path, label: str) -> KernelSpec:
    from ktriage.spec.source import read_params, resolve_source_file, split_source

    unknown = sorted(set(table) - set(KERNEL_KEYS))
    _expect(not unknown, label, str(unknown), "unknown key(s)", f"valid keys are {', '.join(KERNEL_KEYS)}")
    _expect("source" in table, label, "source", "missing", 'add source = "path/to/file.py:kernel" or "package.module:kernel"')
    source = table["source"]
    _expect(isinstance(source, str), label, "source", "must be a string", 'e.g. source = "kernels/k.py:my_kernel"')
    where, fn = split_source(source)
    if where.endswith(".py") and not Path(where).is_absolute():
        source = f"{(base_dir / where).resolve()}:{fn}"
    package = table.get("package")
    _expect(package is None or isinstance(package, str), label, "package", "must be a string", 'e.g. package = "liger-kernel==0.5.10"')

    sig_value = table.get("signature")
    _expect(isinstance(sig_value, dict) and bool(sig_value), label, "[kernel.signature]", "missing or empty", 'list every argument in order, e.g. x_ptr = "*fp32"')
    sig: dict[str, Any] = sig_value if isinstance(sig_value, dict) else {}
    for k, v in sig.items():
        _expect(isinstance(v, str), label, f"signature.{k}", f"{v!r} is not a type string", 'write e.g. "*fp32", "i32" or "constexpr"')

    consts: dict[str, Any] = {}
    for k, v in (table.get("constexprs") or {}).items():
        consts[k] = _constexpr_from_toml(v, label, k)

    options = table.get("options") or {}
    bad = sorted(set(options) - set(OPTION_KEYS))
    _expect(not bad, label, f"[kernel.options] {bad}", "unknown option(s)", f"valid options are {', '.join(OPTION_KEYS)}")
    for k, v in options.items():
        _expect(isinstance(v, int) and not isinstance(v, bool), label, f"options.{k}", f"{v!r} is not an integer", f"e.g. {k} = 4")

    spec_tbl = table.get("specialize") or {}
    bad = sorted(set(spec_tbl) - set(SPECIALIZE_KEYS))
    _expect(not bad, label, f"[kernel.specialize] {bad}", "unknown key(s)", f"valid keys are {', '.join(SPECIALIZE_KEYS)}")
    for k, v in spec_tbl.items():
        _expect(isinstance(v, list) and all(isinstance(x, str) for x in v), label, f"specialize.{k}", "must be a list of argument names", f'e.g. {k} = ["x_ptr", "n"]')
    equal_to_1 = tuple(spec_tbl.get("equal_to_1", ()))
    if "divisible_by_16" in spec_tbl:
        divisible = tuple(spec_tbl["divisible_by_16"])
    else:  # the default: every pointer and int argument is taken as a multiple of 16
        divisible = tuple(n for n, t in sig.items() if (is_pointer_type(t) or is_int_type(t)) and n not in equal_to_1)

    grid = table.get("grid")
    if grid is not None:
        if isinstance(grid, int):
            grid = [grid]
        _expect(isinstance(grid, list) and all(isinstance(g, int) for g in grid), label, "grid", f"{grid!r} is not a list of integers", "e.g. grid = [132]")
    meta = table.get("meta") or {}
    _expect(isinstance(meta, dict), label, "meta", "must be a table", "write [kernel.meta] with key = value lines")
    name = table.get("name") or fn
    spec = KernelSpec(
        name=name,
        source=source,
        package=package,
        signature=dict(sig),
        constexprs=consts,
        divisible_by_16=divisible,
        equal_to_1=equal_to_1,
        target=table.get("target", "sm_90"),
        grid=tuple(grid) if grid is not None else None,
        meta=meta,
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


def _constexpr_from_toml(value: Any, label: str, key: str) -> Any:
    if isinstance(value, dict):
        _expect(value == {"none": True}, label, f"constexprs.{key}", f"{value!r} is not a value", "write a number, bool or string; { none = true } means None")
        return None
    _expect(isinstance(value, (bool, int, float, str)), label, f"constexprs.{key}", f"{value!r} is not a number, bool or string", 'Triton dtypes are written "tl.float32"')
    return value


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
