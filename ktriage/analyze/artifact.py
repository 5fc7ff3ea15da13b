"""Resources and occupancy of a compiled artifact: the one place that turns a cubin into facts.

explain, tune, bisect and the bench bundles all need "this artifact's registers, spills, opcodes and
occupancy"; they get them here, from the same cache and the same occupancy rules.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING

from ktriage.analyze.occupancy import Occupancy, compute_occupancy
from ktriage.analyze.resources import SCHEMA_VERSION, Resources, analyze
from ktriage.arch import parse_arch
from ktriage.compile.cache import SIDECAR_PREFIX, read_sidecar, write_sidecar

if TYPE_CHECKING:
    from ktriage.analyze.lines import LineMap
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
    quarantined and recomputed, never served. The key's ``lines=`` part: a file from before the source
    lines kept their callers' paths as the line table has them (``LineStats.inlined_frames``) named them
    relative to the directory of the run that wrote it, so it is recomputed too."""
    key = hashlib.sha256(
        "\0".join(
            [
                str(toolchain.cuobjdump),
                hashlib.sha256(ptx.encode()).hexdigest(),
                kernel_name,
                str(triton_shared),
                f"schema={SCHEMA_VERSION}",
                "lines=frames",
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


def cached_line_map(cubin: AssembledCubin, toolchain: Toolchain, kernel_name: str) -> LineMap:
    """Each SASS instruction of ``kernel_name`` at its source line, disassembled once per cubin and
    process (``--lines`` and the HTML view cite several lines of one kernel; a cached cubin never changes)."""
    return _line_map(cubin.cubin_path, toolchain.cuobjdump, toolchain.nvdisasm, kernel_name)


@lru_cache(maxsize=32)
def _line_map(cubin: Path, cuobjdump: Path, nvdisasm: Path | None, kernel_name: str) -> LineMap:
    from ktriage.analyze.lines import cubin_line_map

    return cubin_line_map(cubin, kernel_name, cuobjdump=cuobjdump, nvdisasm=nvdisasm)


EXCERPT_SCHEMA = 1


def cached_line_excerpt(
    cubin: AssembledCubin, toolchain: Toolchain, kernel_name: str, ptx: Callable[[], str], file: str, line: int
) -> dict[str, str | None]:
    """The PTX and SASS instructions of one source line (``{"ptx", "sass"}``, None where a side cannot be
    read), as a JSON report's line evidence quotes them. Computing the SASS side disassembles the cubin
    (nvdisasm, ~0.2 s), which made a warm explain 4x slower than one without the excerpts, so the
    excerpts of a cubin are kept next to it: one cache sidecar per cubin and disassembler (self-hashed,
    quarantined when damaged), the cited lines' instructions as text, grown as lines are cited."""
    from ktriage.analyze.lines import ptx_excerpt, sass_excerpt
    from ktriage.errors import KtriageError

    ident = "\0".join([str(toolchain.cuobjdump), str(toolchain.nvdisasm), kernel_name, f"schema={EXCERPT_SCHEMA}"])
    name = f"{SIDECAR_PREFIX}excerpts-{hashlib.sha256(ident.encode()).hexdigest()[:16]}.json"
    key = f"{file}\0{line}"
    data = read_sidecar(cubin.dir, name)
    known = data if isinstance(data, dict) else {}
    hit = known.get(key)
    if isinstance(hit, dict) and set(hit) == {"ptx", "sass"}:
        return {k: None if v is None else str(v) for k, v in hit.items()}
    out: dict[str, str | None] = {"ptx": None, "sass": None}
    complete = True
    try:
        out["ptx"] = ptx_excerpt(ptx(), file, line, line)
    except OSError:  # the artifact is gone from the cache: the report is still written, without it
        complete = False
    try:
        out["sass"] = sass_excerpt(cached_line_map(cubin, toolchain, kernel_name), file, line, line)
    except (KtriageError, OSError):
        complete = False
    if complete:  # a side that could not be read is tried again next time, never stored as empty
        write_sidecar(cubin.dir, name, {**known, key: out})
    return out


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
