"""Bundles of NAMED kernels without an op workload (the runner's GPU fixtures, ad-hoc kernels): the
same format as op bundles (``ktriage.workload.bundles.format``), so one loader, with hashes and ABI checked,
serves both."""

from __future__ import annotations

import datetime as _dt
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ktriage.errors import FormatError
from ktriage.schema.jsontypes import JSONObject
from ktriage.spec.model import KernelSpec
from ktriage.workload.bundles.format import (
    FORMAT,
    MANIFEST,
    BundleArtifact,
    artifact_entry,
    check_bundle_folder,
    load_bundle,
    write_manifest,
)

KERNELS_OP = "kernels"  # the ``op`` of a bundle of named kernels without a workload


def write_kernel_bundle(out_dir: Path, artifacts: Mapping[str, Any], *, extra: Mapping[str, Any] | None = None) -> Path:
    """A bundle of NAMED kernels without an op workload (the runner's GPU fixtures, ad-hoc kernels):
    each name is a spec key with the one toolchain that compiled it; ``extra`` is kept for the
    reader. Same format as op bundles, so one loader (hashes and ABI checked) serves both."""
    out_dir = Path(out_dir)
    check_bundle_folder(out_dir)
    (out_dir / "cubins").mkdir(parents=True, exist_ok=True)
    specs: JSONObject = {}
    toolchains: JSONObject = {}
    entries: dict[str, JSONObject] = {}
    for name, art in artifacts.items():
        specs[name] = art.spec.to_json()
        toolchains.setdefault(art.toolchain.id, art.toolchain.to_json())
        entries[name] = {art.toolchain.id: artifact_entry(art, out_dir)}
    targets = sorted({str(a.spec.target) for a in artifacts.values()})
    manifest = {
        "format_version": FORMAT,
        "created": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        "op": KERNELS_OP,
        "mode": "",
        "precision": "",
        "target": targets[0] if len(targets) == 1 else ",".join(targets),
        "sm_count": 0,
        "backends": [],
        "inputs": [],
        "toolchains": toolchains,
        "specs": specs,
        "artifacts": entries,
        "extra": dict(extra or {}),
    }
    write_manifest(out_dir, manifest)
    return out_dir / MANIFEST


@dataclass(frozen=True)
class NamedKernel:
    """One kernel of a named-kernel bundle: its spec (grid, meta) and its artifact, which
    ``ktriage.measure.loader.load_for_runner`` loads on the GPU host."""

    name: str
    spec: KernelSpec
    artifact: BundleArtifact

    @property
    def grid(self) -> tuple[int, ...]:
        return tuple(self.spec.grid or ())

    @property
    def info(self) -> JSONObject:
        return {
            "spec": self.spec.name,
            "spec_meta": self.spec.meta,
            "toolchain": self.artifact.toolchain_id,
            "triton_version": self.artifact.triton_version,
            "ptxas_version": self.artifact.ptxas_version,
        }

    @property
    def metadata(self) -> JSONObject:
        return self.artifact.metadata


def read_kernel_bundle(path: Path | str) -> tuple[dict[str, NamedKernel], JSONObject]:
    """The kernels of a bundle written by :func:`write_kernel_bundle`, by name, and its ``extra``."""
    bundle = load_bundle(path)
    if bundle.op != KERNELS_OP:
        raise FormatError(
            f"bundle {bundle.path} is an op bundle ({bundle.op}), not a bundle of named kernels",
            "read it with load_bundle, or write named kernels with write_kernel_bundle",
        )
    out: dict[str, NamedKernel] = {}
    for (key, _tc), art in bundle.artifacts.items():
        if isinstance(art, BundleArtifact):
            out[key] = NamedKernel(key, bundle.specs[key], art)
    return out, bundle.extra
