"""Turn what the user typed (a spec file or a catalog op name) into kernel specs.

One home for every verb that compiles kernels (explain, tune, bisect), so that the same words mean
the same thing everywhere. It lives in the catalog, not in ``ktriage.spec``, because it expands
catalog ops and the catalog sits above the spec model (docs/architecture.md); the spec-file half is
``ktriage.spec.select``.
"""

from __future__ import annotations

from collections.abc import Sequence

from ktriage.spec.model import KernelSpec
from ktriage.spec.select import load_selected_specs, select_specs


def resolve_specs(
    target: str,
    *,
    mode: str | None = None,
    inputs: Sequence[str] | None = None,
    target_arch: str = "sm_90",
    dtype: str | None = None,
    sm_count: int | None = None,
) -> list[KernelSpec]:
    """A spec file (``.toml``, narrowed by ``inputs``), a recorded workload (``.json`` from ``ktriage
    record``, or its journal: every input of every kernel, narrowed by ``inputs``) or a catalog op
    expanded over its inputs; ``mode`` and ``dtype`` default to the op's own (the catalog's OpInfo)."""
    if target.endswith(".toml"):
        return load_selected_specs(target, inputs)
    from ktriage.record.workload import is_workload_path, load_workload

    if is_workload_path(target):
        return select_workload_specs(load_workload(target).specs(), inputs, target)
    from ktriage.catalog.registry import expand_op

    return expand_op(target, mode=mode, target=target_arch, dtype=dtype, inputs=list(inputs) if inputs else None,
                     sm_count=sm_count)


def select_workload_specs(specs: Sequence[KernelSpec], inputs: Sequence[str] | None, target: str) -> list[KernelSpec]:
    """A workload's specs, only those one of ``inputs`` names (as for spec files) when given."""
    if not inputs:
        return list(specs)
    chosen = {id(s) for sel in inputs for s in select_specs(specs, sel, target)}
    return [s for s in specs if id(s) in chosen]
