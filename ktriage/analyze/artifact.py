"""Resources and occupancy of a compiled artifact: the one place that turns a cubin into facts.

explain, tune, bisect and the bench bundles all need "this artifact's registers, spills, opcodes and
occupancy"; they get them here, from the same cache and the same occupancy rules.
"""

from __future__ import annotations

import hashlib
from typing import TYPE_CHECKING

from ktriage.analyze.occupancy import Occupancy, compute_occupancy
from ktriage.analyze.resources import SCHEMA_VERSION, Resources, analyze
from ktriage.arch import parse_arch
from ktriage.compile.cache import SIDECAR_PREFIX, read_sidecar, write_sidecar

if TYPE_CHECKING:
    from ktriage.compile.compiler import Artifact, AssembledCubin
    from ktriage.toolchain.manager import Toolchain


def cached_resources(
    cubin: AssembledCubin, toolchain: Toolchain, ptx: str, kernel_name: str, triton_shared: int
) -> Resources:
    """Analyze a cubin once: cuobjdump runs cost more than everything else in a warm re-run, so the
    result is stored next to the cubin (keyed by what else it depends on). The key includes the
    `Resources` schema: a new schema recomputes from the cubin (old files stay for an older ktriage
    sharing the home), and a file whose schema does not match is recomputed too. The file is a cache
    sidecar (ktriage/compile/cache.py): it carries its own sha256, and an edited or truncated one is
    quarantined and recomputed, never served."""
    key = hashlib.sha256(
        "\0".join(
            [
                str(toolchain.cuobjdump),
                hashlib.sha256(ptx.encode()).hexdigest(),
                kernel_name,
                str(triton_shared),
                f"schema={SCHEMA_VERSION}",
            ]
        ).encode()
    ).hexdigest()[:16]
    name = f"{SIDECAR_PREFIX}{key}.json"
    data = read_sidecar(cubin.dir, name)
    if isinstance(data, dict) and data.get("schema") == SCHEMA_VERSION:
        return Resources.from_json(data)
    resources = analyze(
        cubin.cubin_path,
        cuobjdump=toolchain.cuobjdump,
        ptxas_log=cubin.ptxas_log,
        ptx=ptx,
        kernel_name=kernel_name,
        triton_shared=triton_shared,
        nvdisasm=toolchain.nvdisasm,
    )
    write_sidecar(cubin.dir, name, resources.to_json())
    return resources


def analyze_cubin(artifact: Artifact, cubin: AssembledCubin, toolchain: Toolchain) -> tuple[Resources, Occupancy]:
    """Facts of ``artifact``'s PTX as assembled into ``cubin`` by ``toolchain``'s ptxas (its own, or
    another toolchain's for explain's cross matrix)."""
    front = artifact.frontend
    shared = front.metadata.get("shared")  # bytes of shared memory Triton allocated (an int)
    resources = cached_resources(
        cubin, toolchain, front.text("ptx"), front.kernel_name, int(shared) if isinstance(shared, (int, float)) else 0
    )
    barriers = resources.barriers if resources.barriers is not None else 1
    occupancy = compute_occupancy(
        parse_arch(artifact.spec.target),
        resources.registers,
        artifact.spec.num_warps,
        resources.shared_bytes,
        barriers=barriers,
    )
    return resources, occupancy


def analyze_artifact(artifact: Artifact) -> tuple[Resources, Occupancy]:
    """Facts of an artifact's own cubin."""
    return analyze_cubin(artifact, artifact.cubin, artifact.toolchain)
