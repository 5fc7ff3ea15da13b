"""The ``result.json`` of the compile cache's entries (``ktriage.compile.compiler`` writes them).

An entry is checked against its manifest's hashes before it is read (``ktriage.compile.cache``), so
these Structs type what the reader uses rather than guard against damage: the frontend's kernel name,
Triton version and metadata, the ptxas command line; the other keys (``cache_format``, ``spec``,
``ptxas``, ``options``, ``gpu_name``) are kept on disk for people and ignored here.
"""

from __future__ import annotations

import msgspec


class FrontendRecord(msgspec.Struct):
    """``frontend/<key>/result.json``: Triton's output for one (spec, Triton build)."""

    kernel_name: str
    triton_version: str
    metadata: dict[str, object]  # Triton's own metadata JSON, as Triton wrote it
    placeholder_imports: list[str] = []
    triton_reexports: list[str] = []
    ptxas_argv: list[str] = []
    ast_source: dict[str, object] = {}


class CubinRecord(msgspec.Struct):
    """``cubin/<key>/result.json``: ptxas's output for one PTX text."""

    ptxas_version: str
    lowered_ptx_version: tuple[str, str] | None = None
    command: list[str] = []
