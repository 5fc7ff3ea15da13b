"""The files of a toolchain's folder (``ktriage.toolchain``): its record, its frontend's marker and
the facts probed from its Triton.

They are ktriage's own files, written by the installer and read back on every run, so a file that
does not fit is treated as *not built* (the toolchain is installed again), not as an error: the
Structs type what the readers use and tolerate keys they do not know.
"""

from __future__ import annotations

import msgspec


class ToolchainRecord(msgspec.Struct):
    """``toolchain.json`` (``Toolchain.to_json``); also each toolchain inside a bundle."""

    spec: str
    id: str
    root: str
    python: str
    triton_version: str
    ptxas: str
    ptxas_version: str
    ptxas_version_text: str
    ptxas_options: list[str]
    ptxas_is_bundled: bool
    bundled_ptxas: str
    cuobjdump: str
    wheel_sha256: str | None = None
    ptxas_blackwell: str | None = None
    nvdisasm: str | None = None
    env_root: str | None = None
    ptxas_triton_options: list[str] | None = None
    host_sha256: str | None = None


class FrontendMarker(msgspec.Struct):
    """A frontend venv's marker (``ktriage.toolchain.frontend``): what was installed, and where its tools are."""

    key: str
    triton_version: str
    tools_dir: str  # relative to the venv; absolute for a host frontend
    kind: str | None = None  # "host": the user's own interpreter
    python: str | None = None  # a host frontend's interpreter
    wheel_sha256: str | None = None
    host_sha256: str | None = None


class ArchFactsRecord(msgspec.Struct):
    """One arch of a frontend's facts file (insitu/probe.py), or the error of its probe."""

    error: str | None = None
    ptxas_argv: list[str] = []
    ptxas_version_text: str = ""
    ptx_version: str | None = None


class FactsFile(msgspec.Struct):
    """A frontend's facts file: per compute capability (as text), how its Triton assembles."""

    format: int
    archs: dict[str, ArchFactsRecord] = {}
    order_sensitive: bool | None = None
