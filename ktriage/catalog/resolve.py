"""Turn what the user typed (a spec file or a catalog op name) into kernel specs.

One home for every verb that compiles kernels (explain, tune, bisect), so that the same words mean
the same thing everywhere. It lives in the catalog, not in ``ktriage.spec``, because it expands
catalog ops and the catalog sits above the spec model (docs/architecture.md); the spec-file half is
``ktriage.spec.select``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any, TypeVar

from ktriage.errors import KtriageError, SpecError, Worded, option, separated, worded
from ktriage.spec.model import KernelSpec
from ktriage.spec.ranges import id_runs
from ktriage.spec.select import select_spec_file, select_specs
from ktriage.spec.sms import price_for
from ktriage.spec.toml_file import Loaded, SpecFile, UnloadedKernel, named_spec
from ktriage.wording import agree

T = TypeVar("T")


def resolve_specs(
    target: str,
    *,
    mode: str | None = None,
    inputs: Sequence[str] | None = None,
    target_arch: str | None = None,
    dtype: str | None = None,
    sm_count: int | None = None,
    sm_count_beyond_specs: bool = False,
) -> list[KernelSpec]:
    """:func:`resolve_kernels`, where a selected kernel of a spec file that does not load refuses the
    target (its error, naming the fix): the verbs that cannot report one kernel's failure beside the
    others' results (tune, bisect, triage)."""
    kernels = resolve_kernels(
        target,
        mode=mode,
        inputs=inputs,
        target_arch=target_arch,
        dtype=dtype,
        sm_count=sm_count,
        sm_count_beyond_specs=sm_count_beyond_specs,
    )
    return SpecFile(kernels).strict()


def resolve_kernels(
    target: str,
    *,
    mode: str | None = None,
    inputs: Sequence[str] | None = None,
    target_arch: str | None = None,
    dtype: str | None = None,
    sm_count: int | None = None,
    sm_count_beyond_specs: bool = False,
) -> list[Loaded]:
    """A spec file (``.toml``, narrowed by ``inputs``), a recorded workload (``.json`` from ``ktriage
    record``, or its journal: every input of every kernel, narrowed by ``inputs``) or a catalog op
    expanded over its inputs;
    ``mode`` and ``dtype`` default to the op's own (the catalog's OpInfo), ``target_arch`` to sm_90.

    Every option applies or is refused (issue 11): for a spec file ``target_arch`` replaces each
    kernel's ``target``; ``dtype`` and ``mode`` are refused (the signature fixes the types, a spec
    file is one pass), and so is ``sm_count`` for a spec file unless the verb uses it beyond building
    specs (``sm_count_beyond_specs``: tune's waves), since a spec file's grid is written in the file.
    ``sm_count`` prices every kernel of a catalog op or a recorded workload for that many SMs
    (``spec.sms.price_for``: the cost model, tune and fixes read it there); a workload's grids stay
    as recorded, and the recording GPU's count is kept for the report.

    Returns the kernels in the file's order, a selected kernel of a spec file that does not load as an
    :class:`UnloadedKernel` in its place (explain reports it as that kernel's failure, where the file
    lists it; a target none of whose selected kernels loads is refused)."""
    from ktriage.record.workload import is_workload_path, load_workload

    workload = is_workload_path(target)
    if target.endswith(".toml") or workload:
        what = "the recorded workload" if workload else "the spec file"
        given = [
            option(name, f"--{name}", value)
            for name, value in (("precision", dtype), ("mode", mode))
            if value is not None
        ]
        if sm_count is not None and not sm_count_beyond_specs and not workload:
            given.append(option("sm_count", "--sm-count", sm_count))
        if given:  # a workload is recorded, not written: "edit the spec file" cannot be its fix
            raise SpecError(
                separated(", ", given)
                + f" {agree(len(given), 'does', 'do')} not apply to {what} {target}: its signature, pass and grid are "
                + ("recorded in it" if workload else "written in the file"),
                agree(len(given), "drop it", "drop them")
                + (
                    ": the workload's kernels are compiled as the program launched them"
                    if workload
                    else ", or edit the spec file"
                )
                + " (a catalog op takes these options)",
            )
        kernels: list[Loaded] = (
            [
                price_for(s, sm_count)
                for s in select_workload_specs(load_workload(target).require_kernels(target).specs(), inputs, target)
            ]
            if workload
            else select_spec_file(target, inputs).kernels
        )
        if target_arch is not None:
            kernels = [_retarget(k, target_arch) for k in kernels]
        return kernels
    _refuse_kernel_source(target)
    _refuse_other_path(target)
    from ktriage.catalog.registry import expand_op

    specs = expand_op(
        target,
        mode=mode,
        target=target_arch or "sm_90",
        dtype=dtype,
        inputs=list(inputs) if inputs else None,
        sm_count=sm_count,
    )  # the recipes whose grid is the SM count use it; the cost model prices every launch for it (price_for)
    return [price_for(s, sm_count) for s in specs]


def _retarget(kernel: Loaded, target_arch: str) -> Loaded:
    """``kernel`` for ``--arch``: a loaded spec validated for it, an unloaded one's stand-in retargeted."""
    if isinstance(kernel, UnloadedKernel):
        return replace(kernel, spec=kernel.spec.replace(target=target_arch))
    return kernel.replace(target=target_arch).validate(check_source=False)


def _refuse_kernel_source(target: str) -> None:
    """A kernel named as a spec's ``source`` names it (``pkg/ops/k.py:fn``, ``pkg.ops.k:fn``) or a
    kernel's ``.py`` file: a kernel alone is no launch (its argument values decide what the JIT
    compiles), so say how to write the spec file for it, rather than "unknown catalog op"."""
    from pathlib import Path

    from ktriage.ops.registry import catalog_entry

    where, sep, fn = target.rpartition(":")
    is_source = (
        bool(sep)
        and fn.isidentifier()
        and (where.endswith(".py") or all(part.isidentifier() for part in where.split(".")))
    )
    if not (is_source or target.endswith(".py")) or catalog_entry(target) is not None:
        return
    from ktriage.spec.source import jit_functions, read_params, resolve_source_file

    what = "a kernel's source file" if not is_source else "a kernel function"
    if not is_source and not Path(target).is_file():
        return
    source = target if is_source else f"{target}:<function>"
    args = "its launch's argument values"
    try:
        if not is_source:  # the file's one kernel is the function to name; of several, the user picks
            kernels = jit_functions(Path(target))
            if len(kernels) == 1:
                where, fn, is_source = target, kernels[0], True
                source = f"{target}:{fn}"
            elif kernels:
                source = f"{target}:<function: {' or '.join(kernels)}>"
        if is_source:
            names = [p.name for p in read_params(resolve_source_file(f"{where}:{fn}"), fn)]
            args = f"the launch's values of {', '.join(names)}"
    except (KtriageError, OSError):
        pass
    raise SpecError(
        f"{target} names {what}; explain compiles a launch of a kernel, written in a spec file "
        "(or a catalog op, or a workload recorded by `ktriage record`)",
        f'write a spec file (docs/specs.md), e.g. k.toml in this folder: [kernel] source = "{source}" and '
        f"grid = [...], and under [kernel.args] {args}; then `ktriage explain k.toml -t ...`",
    )


def _refuse_other_path(target: str) -> None:
    """A target that names an existing file or folder which is neither a spec file nor a workload: say
    so, rather than "unknown catalog op" (the path was meant, not an op)."""
    from pathlib import Path

    from ktriage.ops.registry import catalog_entry

    try:
        kind = "folder" if Path(target).is_dir() else "file" if Path(target).exists() else None
    except OSError:
        return
    if kind == "file":
        from ktriage.record.workload import refuse_trace_name

        refuse_trace_name(target)
    if kind is not None and catalog_entry(target) is None:
        raise SpecError(
            f"{target} is a {kind}, not a spec file (.toml) or a recorded workload (.json from `ktriage record`)",
            "give a spec file named *.toml (docs/specs.md), a workload from `ktriage record`, "
            "or a catalog op (`ktriage catalog list`)",
        )


def select_workload_specs(specs: Sequence[KernelSpec], inputs: Sequence[str] | None, target: str) -> list[KernelSpec]:
    """A workload's specs, only those one of ``inputs`` names (as for spec files) when given."""
    if not inputs:
        return list(specs)
    chosen = {id(s) for sel in inputs for s in select_specs(specs, sel, target)}
    return [s for s in specs if id(s) in chosen]


def select_input_range(
    items: Sequence[T], input_id: int | None, num_inputs: int | None, id_of: Callable[[T], int | None]
) -> list[T]:
    """TritonBench's ``--input-id K --num-inputs N`` over already expanded items: ids K..K+N-1 (K
    alone: K and every later id; N alone: the first N). Nothing given: all items."""
    if input_id is None and num_inputs is None:
        return list(items)
    start = input_id or 0
    stop = start + num_inputs if num_inputs is not None else None
    chosen = [x for x in items if (i := id_of(x)) is not None and i >= start and (stop is None or i < stop)]
    if not chosen:
        ids = sorted({i for x in items if (i := id_of(x)) is not None})
        raise KtriageError(
            option("input_id", "--input-id", start)
            + (worded(lambda o: f" and {o('num_inputs', '--num-inputs', num_inputs)}") if num_inputs else "")
            + " selects no input",
            _input_ids_fix(items, ids),
        )
    return chosen


def _input_ids_fix(items: Sequence[Any], ids: list[int]) -> Worded:
    """The ids to pick from. When ``--input`` already narrowed a catalog op's inputs, both the ids it
    kept and the op's own are named: listing only the kept ones (``0..0``) would read as the op's."""
    if not ids:  # a spec file: its kernels are named, not numbered; say how to name them
        names = [named_spec(x).name for x in items if isinstance(x, (KernelSpec, UnloadedKernel))]
        listed = ", ".join(names[:6]) + (", ..." if len(names) > 6 else "")
        return worded(
            lambda o: f"this target's kernels have no input ids: select them by name with {o('inputs', '--input')}"
        ) + (f" (one of: {listed})" if names else "")
    op = getattr(items[0], "meta", {}).get("op") if items else None
    whole: list[int] | None = None
    if isinstance(op, str):
        from ktriage.catalog.registry import op_inputs

        try:
            whole = sorted({case.id for case in op_inputs(op)})
        except KtriageError:
            whole = None
    if whole is None or whole == ids:
        return Worded(f"input ids: {id_runs(ids)}")
    return worded(
        lambda o: (
            f"{o('inputs', '--input')} already chose input {agree(len(ids), 'id', 'ids')} {id_runs(ids)} of {op}'s "
            f"{id_runs(whole)}, and {o('input_id', '--input-id')} and {o('num_inputs', '--num-inputs')} pick "
            f"among those: drop {o('inputs', '--input')}, or give an {o('input_id', '--input-id')} within them"
        )
    )


def spec_input_id(spec: Any) -> int | None:
    """A catalog spec's TritonBench input id (``meta['input_id']``), None for a spec file's kernel."""
    value = getattr(spec, "meta", {}).get("input_id")
    return int(value) if value is not None else None


def op_default_mode(op: str | None) -> str | None:
    """A catalog op's own pass (OpInfo.default_mode), by name or alias; None when ``op`` is not one
    (the verb's own resolution then says what is wrong)."""
    if not op:
        return None
    from ktriage.catalog.registry import list_ops

    for info in list_ops():
        if op == info.name or op in info.aliases:
            return info.default_mode
    return None
