"""A self-contained folder of compiled kernels: cubins + JSON (metadata, ABI, grid), no toolchain.

Why: compile where CPUs are cheap, measure where the GPU is. The GPU host has no ktriage
toolchains (a Triton wheel is too large to carry), so what travels is exactly what the runner
needs to launch: the cubin, the kernel name, Triton's metadata (shared, num_warps, cluster dims,
scratch sizes) and the launch ABI.
"""

from __future__ import annotations

import datetime as _dt
import json
import re
import shutil
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ktriage.compile.abi import AbiParam
from ktriage.errors import KtriageError

if TYPE_CHECKING:
    from ktriage.compile.compiler import Artifact
    from ktriage.measure.cuda import LoadedKernel

MANIFEST = "manifest.json"
_SAFE = re.compile(r"[^A-Za-z0-9._-]+")

#: Metadata keys the runner and reports use; the rest (extern lib paths, ptx text) stays behind.
METADATA_KEYS = (
    "name", "num_warps", "num_ctas", "num_stages", "shared", "cluster_dims", "global_scratch_size",
    "global_scratch_align", "profile_scratch_size", "profile_scratch_align", "launch_cooperative_grid",
    "launch_pdl", "maxnreg", "triton_version", "arch", "target", "tmem_size",
)  # fmt: skip


@dataclass(frozen=True)
class BundleEntry:
    """One kernel of a bundle, loadable on the GPU host."""

    name: str
    cubin_path: Path
    kernel_name: str
    metadata: dict[str, Any]
    abi: tuple[AbiParam, ...]
    grid: tuple[int, ...]
    info: dict[str, Any] = field(
        default_factory=dict
    )  # spec name/meta, toolchain id, triton version

    def load(self, device: int = 0) -> LoadedKernel:
        from ktriage.measure.cuda import LoadedKernel

        return LoadedKernel.from_files(
            self.cubin_path, self.kernel_name, self.metadata, self.abi, device=device
        )


def entry_json(name: str, artifact: Artifact, cubin_file: str) -> dict[str, Any]:
    meta = {
        k: artifact.frontend.metadata[k]
        for k in METADATA_KEYS
        if k in artifact.frontend.metadata
    }
    return {
        "name": name,
        "cubin": cubin_file,
        "kernel_name": artifact.kernel_name,
        "metadata": meta,
        "abi": [p.to_json() for p in artifact.abi],
        "grid": list(artifact.spec.grid or ()),
        "info": {
            "spec": artifact.spec.name,
            "spec_meta": artifact.spec.meta,
            "toolchain": artifact.toolchain.id,
            "triton_version": artifact.frontend.triton_version,
            "ptxas_version": artifact.cubin.ptxas_version,
        },
    }


def write_bundle(
    out_dir: Path,
    artifacts: Mapping[str, Artifact],
    *,
    extra: Mapping[str, Any] | None = None,
) -> Path:
    """Copy each artifact's cubin into ``out_dir`` and write the manifest; returns its path."""
    out_dir.mkdir(parents=True, exist_ok=True)
    kernels = {}
    for name, art in artifacts.items():
        cubin_file = _SAFE.sub("_", name) + ".cubin"
        shutil.copyfile(art.cubin.cubin_path, out_dir / cubin_file)
        kernels[name] = entry_json(name, art, cubin_file)
    manifest = {
        "created": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        "kernels": kernels,
        "extra": dict(extra or {}),
    }
    path = out_dir / MANIFEST
    path.write_text(json.dumps(manifest, indent=1, default=str))
    return path


def read_bundle(bundle_dir: Path) -> dict[str, BundleEntry]:
    """The kernels of a bundle written by ``write_bundle``."""
    path = bundle_dir / MANIFEST
    if not path.exists():
        raise KtriageError(
            f"no bundle manifest at {path}",
            "create the bundle on the compile machine and carry the folder",
        )
    data = json.loads(path.read_text())
    out = {}
    for name, k in data["kernels"].items():
        out[name] = BundleEntry(
            name=name,
            cubin_path=bundle_dir / k["cubin"],
            kernel_name=k["kernel_name"],
            metadata=k["metadata"],
            abi=tuple(AbiParam(**p) for p in k["abi"]),
            grid=tuple(k["grid"]),
            info=k.get("info", {}),
        )
    return out


def bundle_extra(bundle_dir: Path) -> dict[str, Any]:
    return dict(json.loads((bundle_dir / MANIFEST).read_text()).get("extra", {}))
