"""Turn what the user typed (a spec file or a catalog op name) into kernel specs.

One home for every verb that compiles kernels (explain, tune, bisect), so that the same words mean
the same thing everywhere. It lives in the catalog, not in ``ktriage.spec``, because it expands
catalog ops and the catalog sits above the spec model (docs/architecture.md); the spec-file half is
``ktriage.spec.select``.
"""

from __future__ import annotations

from collections.abc import Sequence

from ktriage.errors import SpecError
from ktriage.spec.model import KernelSpec
from ktriage.spec.select import load_selected_specs, select_specs


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
    """A spec file (``.toml``, narrowed by ``inputs``), a recorded workload (``.json`` from ``ktriage
    record``, or its journal: every input of every kernel, narrowed by ``inputs``) or a catalog op
    expanded over its inputs;
    ``mode`` and ``dtype`` default to the op's own (the catalog's OpInfo), ``target_arch`` to sm_90.

    Every option applies or is refused (issue 11): for a spec file ``target_arch`` replaces each
    kernel's ``target``; ``dtype`` and ``mode`` are refused (the signature fixes the types, a spec
    file is one pass), and so is ``sm_count`` unless the verb uses it beyond building specs
    (``sm_count_beyond_specs``: tune's waves), since a spec file's grid is written in the file."""
    from ktriage.record.workload import is_workload_path, load_workload

    workload = is_workload_path(target)
    if target.endswith(".toml") or workload:
        what = "the recorded workload" if workload else "the spec file"
        given = [f"--{name} {value}" for name, value in (("precision", dtype), ("mode", mode)) if value is not None]
        if sm_count is not None and not sm_count_beyond_specs:
            given.append(f"--sm-count {sm_count}")
        if given:
            raise SpecError(
                f"{', '.join(given)} does not apply to {what} {target}: its signature, pass and grid are "
                "written in the file",
                "drop the option, or edit the spec file (a catalog op takes these options)",
            )
        specs = (
            select_workload_specs(load_workload(target).require_kernels(target).specs(), inputs, target)
            if workload
            else load_selected_specs(target, inputs)
        )
        if target_arch is not None:
            specs = [s.replace(target=target_arch).validate(check_source=False) for s in specs]
        return specs
    from ktriage.catalog.registry import expand_op

    return expand_op(
        target,
        mode=mode,
        target=target_arch or "sm_90",
        dtype=dtype,
        inputs=list(inputs) if inputs else None,
        sm_count=sm_count,
    )


def select_workload_specs(specs: Sequence[KernelSpec], inputs: Sequence[str] | None, target: str) -> list[KernelSpec]:
    """A workload's specs, only those one of ``inputs`` names (as for spec files) when given."""
    if not inputs:
        return list(specs)
    chosen = {id(s) for sel in inputs for s in select_specs(specs, sel, target)}
    return [s for s in specs if id(s) in chosen]
