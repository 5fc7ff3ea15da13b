"""Kernel specs in TOML files: ``load_spec_file`` and ``dump_spec_toml`` (format in docs/specs.md).

Why TOML: a spec is written by hand next to a kernel and read in code review, so it must be short
and obvious. Every error names the file, the key and the fix, because a typo here would otherwise
surface as a compiler traceback in a worker process.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from dataclasses import replace as dataclass_replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from msgspec import UNSET, UnsetType

from ktriage.errors import KtriageError, SpecError
from ktriage.schema.core import convert, parse_toml, read_text, size_limit
from ktriage.schema.jsontypes import JSONObject
from ktriage.schema.spec_toml import (
    FIX,
    FIXES,
    OPTION_KEYS,
    ArgValue,
    KernelSchema,
    NoneValue,
    SpecFileSchema,
    SpecFileShape,
    SpecializeSchema,
    label,
)
from ktriage.spec.model import ConstexprValue, KernelSpec, is_int_type, is_pointer_type
from ktriage.wording import plural

if TYPE_CHECKING:
    from ktriage.spec.source import ParamInfo

# Spec files are written by hand: anything over this is not one (KTRIAGE_MAX_INPUT_MB raises it).
MAX_SPEC_MB = 4


@dataclass(frozen=True)
class UnloadedKernel:
    """A kernel of a spec file that does not load: its source file, module or function is missing, its
    signature or values do not fit the function, a field is of the wrong type. ``error`` says which and
    the fix; ``spec`` is a stand-in that names the kernel in reports (its name, source, target and meta
    as the table writes them), never compiled.

    Why a kernel and not the file fails: a spec file names several kernels, and one typo must not lose
    the others' results (explain compiles them and reports this one as a failed kernel, exit 4)."""

    spec: KernelSpec
    error: KtriageError

    def line(self) -> str:
        """Its error said as a report's one line: ``not loaded: <problem> — fix: <fix>``."""
        return not_loaded_line(self.error.problem, self.error.fix)


def not_loaded_line(problem: str, fix: str | None) -> str:
    """How every report says that a kernel did not load (explain's Failures, fidelity's rows): once,
    with the fix, and without a toolchain, since the error is the spec file's."""
    return f"not loaded: {problem}" + (f" — fix: {fix}" if fix else "")


Loaded = KernelSpec | UnloadedKernel


def named_spec(kernel: Loaded) -> KernelSpec:
    """The spec that names ``kernel`` (the kernel itself, or an unloaded one's stand-in): what
    selectors, labels and reports read, so that a kernel that did not load keeps its place and name."""
    return kernel if isinstance(kernel, KernelSpec) else kernel.spec


@dataclass(frozen=True)
class SpecFile:
    """A spec file's kernels in the file's order, each loaded or not (:class:`UnloadedKernel`)."""

    kernels: list[Loaded]

    @property
    def specs(self) -> list[KernelSpec]:
        return [k for k in self.kernels if isinstance(k, KernelSpec)]

    @property
    def unloaded(self) -> list[UnloadedKernel]:
        return [k for k in self.kernels if isinstance(k, UnloadedKernel)]

    def strict(self) -> list[KernelSpec]:
        """The kernels, or the error of the first that does not load (a caller that cannot report a
        kernel's failure beside the others' results refuses it, as the whole file was before)."""
        if self.unloaded:
            raise self.unloaded[0].error
        return self.specs


class NothingLoads(SpecError):
    """A spec file (or the selection from it) none of whose kernels loads: every kernel's error in one
    message (:func:`require_loaded` words it), and every kernel (``unloaded``) for a caller that reports
    each one's error on its own (bisect's candidate, ``bisect-step --record-baseline``), which the text
    alone cannot give back without parsing it."""

    def __init__(self, unloaded: Sequence[UnloadedKernel], problem: str, fix: str | None, details: str | None) -> None:
        super().__init__(problem, fix, details)
        self.unloaded = list(unloaded)


def require_loaded(kernels: Sequence[Loaded], origin: str, *, selected: bool = False) -> None:
    """Refuse kernels none of which loads (a file, or the ``selected`` kernels of it): nothing to
    compile. One kernel: its own error. Several: the file (``origin``) once, then one line per error
    without the file and table each kernel's error starts with, the kernels whose errors are the same
    on one line ("3 kernels (a, b, c): <error>"), and a fix that all of them share said once as the
    fix, else after each line. Why: the first kernel's error with the others' joined after it in the
    details repeated the spec file's path and its fix on every kernel, one long line for a file of
    several kernels with the same typo."""
    if not kernels or any(isinstance(k, KernelSpec) for k in kernels):
        return
    unloaded = [k for k in kernels if isinstance(k, UnloadedKernel)]
    if len(unloaded) == 1:
        error = unloaded[0].error
        raise NothingLoads(unloaded, error.problem, error.fix, error.details)
    errors = grouped_errors(unloaded, origin)
    which = "the selected kernels" if selected else "its kernels"
    problem = (
        f"{origin}: none of {which} loads ({plural(len(unloaded), 'kernel')}, {plural(len(errors.lines), 'error')})"
    )
    fix = errors.shared_fix or "fix each error below" + (", as its line says" if errors.any_fix else "")
    raise NothingLoads(unloaded, problem, fix, "\n".join(errors.lines))


@dataclass(frozen=True)
class GroupedErrors:
    """The errors of kernels of one spec file that do not load, as :func:`grouped_errors` words them."""

    lines: list[str]  # one per distinct error: "3 kernels (a, b, c): <error>" (" — fix: <fix>" unless shared)
    shared_fix: str | None  # the fix every kernel shares, said once by the caller; None where they differ
    any_fix: bool  # whether any line has a fix


def grouped_errors(unloaded: Sequence[UnloadedKernel], origin: str) -> GroupedErrors:
    """The one wording of several kernels' load errors, for every refusal that lists them (``NothingLoads``;
    fidelity's refusal of a file whose loading kernels are all written by types): one line per error,
    without the file (``origin``, said once by the caller) and table each error starts with, the kernels
    whose errors are the same on one line, and a fix that all of them share left to the caller to say
    once, else said after each line."""
    groups: dict[tuple[str, str | None], list[str]] = {}
    for k in unloaded:
        groups.setdefault((_own_error(k.error.problem, origin), k.error.fix), []).append(_label(k, unloaded))
    fixes = {fix for _, fix in groups}
    shared = next(iter(fixes)) if len(fixes) == 1 else None
    lines = [
        f"{names[0] if len(names) == 1 else _kernels(names)}: {error}"
        + (f" — fix: {fix}" if fix and not shared else "")
        for (error, fix), names in groups.items()
    ]
    return GroupedErrors(lines, shared, any(fixes))


def _kernels(names: Sequence[str]) -> str:
    """Kernels whose error is the same, counted and named: "3 kernels (a, b, c)"."""
    return f"{plural(len(names), 'kernel')} ({', '.join(names)})"


_PLACE = re.compile(r"^(?:\[\[kernel\]\] #(\d+)|\[kernel\]):? ")


def _own_error(problem: str, origin: str) -> str:
    """A kernel's error without what :func:`require_loaded` says once: the spec file and the table it
    starts with (``spec.toml: [[kernel]] #2: ``, or ``... #2 options.num_warps: ...`` from the schema);
    its first line (an error is one line; a longer text is a log, not a reason)."""
    first = (problem.strip().splitlines() or ["(no message)"])[0]
    return _PLACE.sub("", first.removeprefix(f"{origin}: "), count=1)


def _label(kernel: UnloadedKernel, unloaded: Sequence[UnloadedKernel]) -> str:
    """How a line names ``kernel``: its name, with its table's number where another kernel of
    ``unloaded`` has the same name (a file may repeat a name; ``[[kernel]] #N`` tells them apart).
    The number is the stand-in's ``file_position``, set where the table is read: read back out of the
    error text, it was lost where the file's path holds ': ' (``run: 2/spec.toml``)."""
    name, position = kernel.spec.name, kernel.spec.file_position
    if sum(k.spec.name == name for k in unloaded) == 1 or position is None:
        return name
    return f"{name} #{position + 1}"


def load_spec_file(path: str | Path) -> list[KernelSpec]:
    """All kernels of a spec file (``[kernel]`` or several ``[[kernel]]``), validated against their
    source; a kernel that does not load refuses the file (:func:`read_spec_file` keeps the others)."""
    return read_spec_file(path).strict()


def read_spec_file(path: str | Path) -> SpecFile:
    """A spec file's kernels, each loaded or not. Raises for what concerns the whole file: not TOML, no
    kernel table, no kernel that loads."""
    path = Path(path)
    text = read_text(path, what="spec file", limit=size_limit(MAX_SPEC_MB), error=SpecError)
    return reads_spec(text, base_dir=path.resolve().parent, origin=str(path))


def loads_spec(text: str, *, base_dir: Path, origin: str = "<string>") -> list[KernelSpec]:
    """Parse spec TOML text through its schema (``ktriage.schema.spec_toml``); relative ``.py``
    sources are taken from ``base_dir``. A kernel that does not load refuses the text."""
    return reads_spec(text, base_dir=base_dir, origin=origin).strict()


def reads_spec(text: str, *, base_dir: Path, origin: str = "<string>") -> SpecFile:
    """:func:`loads_spec`, each kernel loaded or not: the file's shape is checked first (``kernel`` a
    table or a non-empty array of tables), then each table through its schema and against its source
    on its own, so that one bad table leaves the others loaded."""
    doc = parse_toml(text, origin=origin)
    if "kernel" not in doc:
        raise SpecError(f"{origin}: no [kernel] table", "start the file with [kernel] (or [[kernel]] for several)")
    raw = convert(doc, SpecFileShape, origin=origin, fix=FIX, fixes=FIXES, error=SpecError, label=label).kernel
    tables = raw if isinstance(raw, list) else [raw]
    kernels: list[Loaded] = []
    for i, table in enumerate(tables):
        where = f"{origin}: [kernel]" if len(tables) == 1 else f"{origin}: [[kernel]] #{i + 1}"
        try:
            kernels.append(_spec_from_table(_kernel_schema(table, i, isinstance(raw, list), origin), base_dir))
        except KtriageError as exc:
            error = (
                exc if exc.problem.startswith(origin) else SpecError(f"{where}: {exc.problem}", exc.fix, exc.details)
            )
            kernels.append(UnloadedKernel(_stand_in(table, i, base_dir), error))
    require_loaded(kernels, origin)
    return SpecFile([_at_position(k, i) for i, k in enumerate(kernels)])


def _at_position(kernel: Loaded, position: int) -> Loaded:
    """``kernel`` knowing where the file listed it (``KernelSpec.file_position``: explain's ranges never
    cross a kernel that ``--input`` left out); a stand-in of one that did not load has it already
    (:func:`_stand_in`)."""
    if isinstance(kernel, UnloadedKernel):
        return kernel
    # dataclasses.replace, not KernelSpec.replace: the position is no change of what is compiled
    return dataclass_replace(kernel, file_position=position)


def _kernel_schema(table: dict[str, object], index: int, array: bool, origin: str) -> KernelSchema:
    """One kernel table through its schema, the error naming it as in the whole file (``[[kernel]] #2
    options.num_warps``)."""

    def named(path: str) -> str:
        return label(re.sub(r"^kernel\[0\]", f"kernel[{index}]", path))

    doc = {"kernel": [table] if array else table}
    schema = convert(doc, SpecFileSchema, origin=origin, fix=FIX, fixes=FIXES, error=SpecError, label=named)
    return schema.kernel[0] if isinstance(schema.kernel, list) else schema.kernel


def _stand_in(table: dict[str, object], index: int, base_dir: Path) -> KernelSpec:
    """The spec that names a kernel that did not load: its name (else its function, else its table),
    its source as written (a relative file taken from ``base_dir``), target and meta; nothing else."""
    source = table.get("source")
    source = source if isinstance(source, str) else ""
    where, _, fn = source.rpartition(":")
    if where.endswith(".py") and not Path(where).is_absolute():
        try:
            source = f"{(base_dir / where).resolve()}:{fn}"
        except (OSError, ValueError, RuntimeError):
            pass
    name = table.get("name")
    if not isinstance(name, str) or not name:
        name = fn if fn.isidentifier() else f"[[kernel]] #{index + 1}"
    target, meta = table.get("target"), table.get("meta")
    return KernelSpec(
        name=name,
        source=source,
        signature={},
        target=target if isinstance(target, str) else "sm_90",
        meta=dict(meta) if isinstance(meta, dict) else {},
        file_position=index,  # where the file lists it: require_loaded names its table by it (_label)
    )


def _spec_from_table(table: KernelSchema, base_dir: Path) -> KernelSpec:
    from ktriage.spec.source import read_params, resolve_source_file, split_source

    source = table.source
    where, fn = split_source(source)
    if where.endswith(".py") and not Path(where).is_absolute():
        source = f"{(base_dir / where).resolve()}:{fn}"
    elif where.split(".")[0] == "ktriage" and not isinstance(table.package, str):
        # ktriage's own kernel, named by module in a portable file (catalog show --format toml): this
        # installation's file, as the catalog names it; the toolchain's worker has no ktriage to import
        source = f"{resolve_source_file(source).resolve()}:{fn}"
    if not isinstance(table.args, UnsetType):
        return _by_values(table, table.args, source, fn)
    if isinstance(table.signature, UnsetType):
        raise SpecError(
            "the kernel gives neither [kernel.args] nor [kernel.signature]",
            "give the launch's argument values under [kernel.args] (docs/specs.md), e.g. n = 4096, stride_k = 1",
        )
    if not isinstance(table.autotune_config, UnsetType):
        raise SpecError(
            "autotune_config applies to a kernel written by values", "give the arguments under [kernel.args]"
        )
    sig = dict(table.signature)
    consts: dict[str, ConstexprValue] = {
        k: None if isinstance(v, NoneValue) else v for k, v in table.constexprs.items()
    }
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
    spec = spec.validate(check_source=True)
    from ktriage.spec.values import typed_int_warnings, warn

    if isinstance(table.specialize.divisible_by_16, UnsetType):
        # Only a kernel that leaves divisibility to the default is warned: a [kernel.specialize] with
        # divisible_by_16 states what the JIT decided (a catalog export writes it), so nothing is assumed.
        warn(typed_int_warnings(spec, params, f"kernel {spec.name}"))
    return spec


def _by_values(table: KernelSchema, values: Mapping[str, ArgValue], source: str, fn: str) -> KernelSpec:
    """A ``[kernel.args]`` kernel (spec/values.py): the launch's values; each toolchain's JIT decides."""
    from ktriage.spec.source import read_params, resolve_source_file
    from ktriage.spec.values import by_value_spec

    clash = [
        k
        for k, v in (
            ("signature", table.signature),
            ("constexprs", table.constexprs or UNSET),
            ("specialize", table.specialize if table.specialize != SpecializeSchema() else UNSET),
        )
        if not isinstance(v, UnsetType)
    ]
    if clash:
        raise SpecError(
            f"[kernel.args] gives the launch's values, and [kernel.{clash[0]}] restates what the JIT decides from them",
            f"remove [kernel.{clash[0]}]: constexpr values go under [kernel.args] too",
        )
    package = table.package if isinstance(table.package, str) else None
    path = resolve_source_file(source, package)
    params = read_params(path, fn)
    args: dict[str, ArgValue | None] = {}
    for name, value in values.items():
        if isinstance(value, dict) and set(value) == {"none"}:
            if value["none"] is not True:
                raise SpecError(f"argument {name} = {value!r}", "write None as { none = true }")
            args[name] = None
        else:
            args[name] = value
    _check_toml_values(args, params)
    options = {k: v for k in OPTION_KEYS if (v := getattr(table.options, k)) is not UNSET}
    grid = None if isinstance(table.grid, UnsetType) else [table.grid] if isinstance(table.grid, int) else table.grid
    spec = by_value_spec(
        name=table.name if isinstance(table.name, str) else fn,
        source=source,
        package=package,
        params=params,
        source_file=path,
        args=args,
        options=options,
        target=table.target,
        grid=grid,
        autotune_config=None if isinstance(table.autotune_config, UnsetType) else table.autotune_config,
        meta=dict(table.meta),
    )
    return spec.validate(check_source=True)


def _check_toml_values(args: Mapping[str, object], params: Sequence[ParamInfo]) -> None:
    """A runtime argument's value must be one the JIT specializes, said in TOML: the specialization's
    own error names the Python API's forms (``Ptr(...)``, ``Constexpr(...)``), which a spec file cannot
    write. (A ``tl.constexpr`` parameter takes any value, a string such as "tl.float32" included.)"""
    constexpr = {p.name for p in params if p.is_constexpr}
    for name, value in args.items():
        if name in constexpr or value is None or isinstance(value, (bool, int, float, dict)):
            continue
        raise SpecError(
            f"[kernel.args] {name} = {value!r} is not a value Triton specializes a runtime argument on",
            f"write a number ({name} = 4096 or 0.5), a bool ({name} = true), {name} = {{ none = true }}, or a "
            f'tensor {name} = {{ dtype = "fp16", shape = [4096], strides = [1] }} (docs/specs.md); a string '
            '("tl.float32") only for a tl.constexpr parameter',
        )


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
    if spec.launch is not None:
        return "\n".join(lines + _launch_lines(spec)) + "\n"
    lines += ["", "[kernel.signature]"] + [f"{_key(k)} = {_value(v)}" for k, v in spec.signature.items()]
    if spec.constexprs:
        lines += ["", "[kernel.constexprs]"]
        for k, v in spec.constexprs.items():
            lines.append(f"{_key(k)} = {'{ none = true }' if v is None else _value(v)}")
    lines += [
        "",
        "[kernel.options]",
        f"num_warps = {spec.num_warps}",
        f"num_stages = {spec.num_stages}",
        f"num_ctas = {spec.num_ctas}",
    ]
    if spec.maxnreg is not None:
        lines.append(f"maxnreg = {spec.maxnreg}")
    if not spec.enable_fp_fusion:
        lines.append("enable_fp_fusion = false")
    lines += [
        "",
        "[kernel.specialize]",
        f"divisible_by_16 = {_value(list(spec.divisible_by_16))}",
        f"equal_to_1 = {_value(list(spec.equal_to_1))}",
    ]
    if spec.meta:
        lines += ["", "[kernel.meta]"] + [
            f"{_key(str(k))} = {_value(v)}" for k, v in spec.meta.items() if v is not None
        ]
    return "\n".join(lines) + "\n"


def _launch_lines(spec: KernelSpec) -> list[str]:
    """A by-value spec's ``[kernel.args]`` (and options, meta) as :func:`load_spec_file` reads them."""
    launch = spec.launch or {}
    lines = []
    config = launch.get("autotune_config")
    if config is not None:
        lines.append(f"autotune_config = {int(config)}")
    lines += ["", "[kernel.args]"]
    for name, value in launch.get("args") or []:
        if isinstance(value, dict) and "tensor" in value:
            table: JSONObject = {"dtype": value["tensor"]}
            if isinstance(value.get("shape"), (list, tuple)):  # [] too: a 0-d tensor, written back as given
                table["shape"] = list(value["shape"])
            if value.get("strides"):
                table["strides"] = list(value["strides"])
            if not value.get("aligned", True):
                table["align"] = 4
            text = _value(table)
        elif isinstance(value, dict) and "descriptor" in value:  # a host-side TensorDescriptor, as the file writes it
            text = _value({"dtype": value["descriptor"], **{k: v for k, v in value.items() if k != "descriptor"}})
        elif isinstance(value, dict) and "tl" in value:
            text = _value(f"tl.{value['tl']}")
        else:
            text = "{ none = true }" if value is None else _value(value)
        lines.append(f"{_key(str(name))} = {text}")
    options = dict(launch.get("options") or {})
    if options:
        lines += ["", "[kernel.options]"] + [
            f"{k} = {_value(v) if isinstance(v, bool) else int(v)}" for k, v in options.items()
        ]
    meta = {k: v for k, v in spec.meta.items() if k != "decided_at_compile" and v is not None}
    if meta:
        lines += ["", "[kernel.meta]"] + [f"{_key(str(k))} = {_value(v)}" for k, v in meta.items()]
    return lines
