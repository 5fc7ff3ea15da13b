"""Which backend replays with which class, and the spec sources replays take their kernels from.

The replay classes live with their operator's torch code (``ktriage/workload/ops/<op>.py``: liger-kernel
0.5.10 layer_norm and embedding, fwd/bwd/fwd_bwd, and this project's tutorial layer_norm fwd); the
operator module names them (``Kernels.replay`` in ``ktriage/ops/<op>.py``), so adding a replay is
no edit here. The mechanics they share are in :mod:`ktriage.workload.ops.artifacts`.
"""

from __future__ import annotations

from ktriage.errors import KtriageError
from ktriage.ops import registry
from ktriage.ops.inputs import InputCase
from ktriage.ops.operator import load
from ktriage.spec.model import KernelSpec
from ktriage.workload.ops.artifacts import (
    ROLES_BY_MODE,
    TIMINGS,
    ArtifactBackend,
    KernelRef,
    LaunchFn,
    SpecSource,
    check_args,
    runtime_args,
    runtime_value,
    spec_value,
)

__all__ = [
    "REPLAYS",
    "ROLES_BY_MODE",
    "TIMINGS",
    "ArtifactBackend",
    "KernelRef",
    "LaunchFn",
    "SpecSource",
    "artifact_backend",
    "catalog_spec",
    "catalog_specs",
    "check_args",
    "runtime_args",
    "runtime_value",
    "spec_value",
]

# Which backend replays with which class is the operators' fact (``Kernels.replay`` in ktriage/ops/<op>.py).
REPLAYS: dict[str, type[ArtifactBackend]] = {b: load(k.replay) for b, k in registry.replays().items() if k.replay}


def artifact_backend(
    name: str, *, launch: LaunchFn, specs: SpecSource, timing: str = "tritonbench", sm_count: int | None = None
) -> ArtifactBackend:
    """The replay of backend ``name`` launching through ``launch`` (one instance per toolchain)."""
    if name not in REPLAYS:
        raise KtriageError(f"backend {name!r} cannot run as an artifact", f"artifact backends: {', '.join(REPLAYS)}")
    return REPLAYS[name](launch=launch, specs=specs, timing=timing, sm_count=sm_count)


# ------------------------------------------------------------------------------- spec sources
def catalog_spec(
    backend: str, case: InputCase, role: str, *, precision: str = "fp32", target: str = "sm_90", sm_count: int = 132
) -> KernelSpec:
    """The catalog spec of the kernel ``backend`` launches for ``case`` in ``role`` (the recipe of the
    release its replay is written for: liger-kernel 0.5.10)."""
    found = registry.by_backend(backend)
    if found is not None:
        _, kernels = found
        if role in kernels.modes:
            version = kernels.versions[0]
            return kernels.recipe(
                case,
                op=kernels.catalog_name(version),
                mode=role,
                dtype=precision,
                target=target,
                sm_count=sm_count,
                version=version,
            ).to_spec()
    raise KtriageError(f"no catalog kernel for {backend} {role}", f"artifact backends: {', '.join(REPLAYS)}")


def catalog_specs(*, precision: str = "fp32", target: str = "sm_90", sm_count: int = 132) -> SpecSource:
    """A SpecSource straight from the catalog (needs the kernel sources: the CPU machine, or a GPU
    host with the packages under the ktriage home). A bundle's ``spec_source()`` needs nothing."""

    def source(backend: str, case: InputCase, role: str) -> KernelRef:
        spec = catalog_spec(backend, case, role, precision=precision, target=target, sm_count=sm_count)
        return KernelRef(spec.key(), spec)

    return source
