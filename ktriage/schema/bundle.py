"""The bundle manifest (``ktriage.workload.bundles.format``, ``manifest.json``): what a GPU host loads.

A bundle is compiled on one machine and copied to another, so its manifest is external input: every
key's type is checked here before ``load_bundle`` builds the Bundle (whose cubin hashes and launch
ABIs are then checked against the files). Unknown keys are tolerated at the top (``extra`` notes of
newer writers), not in artifact entries.
"""

from __future__ import annotations

from typing import Annotated, Any

import msgspec

Name = Annotated[str, msgspec.Meta(min_length=1, max_length=4096)]


class KernelSpecSchema(msgspec.Struct, forbid_unknown_fields=True):
    """``KernelSpec.to_json()``: the spec each artifact was compiled from."""

    name: Name
    source: Name
    signature: dict[str, str]
    constexprs: dict[str, bool | int | float | str | None] = {}
    divisible_by_16: list[str] = []
    equal_to_1: list[str] = []
    num_warps: Annotated[int, msgspec.Meta(ge=1, le=32)] = 4
    num_stages: Annotated[int, msgspec.Meta(ge=1, le=16)] = 3
    num_ctas: Annotated[int, msgspec.Meta(ge=1, le=16)] = 1
    maxnreg: Annotated[int, msgspec.Meta(ge=16, le=255)] | None = None
    enable_fp_fusion: bool = True
    target: Annotated[str, msgspec.Meta(max_length=32)] = "sm_90"
    grid: list[Annotated[int, msgspec.Meta(ge=1)]] | None = None
    package: str | None = None
    meta: dict[str, object] = {}


class ArtifactOkSchema(msgspec.Struct, tag="ok", tag_field="status", forbid_unknown_fields=True):
    cubin: Name
    cubin_sha256: Annotated[str, msgspec.Meta(pattern=r"^[0-9a-f]{64}$")]
    kernel_name: Name
    triton_version: str
    ptxas_version: str
    launch: dict[str, object]
    metadata: dict[str, object]
    abi: list[dict[str, object]]
    resources: dict[str, object] | None = None
    # the cubin's source lines as compiled (path in its line table -> line number -> text): profile shows and
    # matches lines on a GPU host that has neither the recorded program's files nor the compiling Triton's
    source_text: dict[str, dict[str, str]] = {}


class ArtifactFailedSchema(msgspec.Struct, tag="failed", tag_field="status", forbid_unknown_fields=True):
    stage: str
    kind: str
    message: str


ArtifactEntry = ArtifactOkSchema | ArtifactFailedSchema


class SelectionSchema(msgspec.Struct):
    """The backends an op bench's compile chose (``--only``, ``--baseline``; absent: the op's defaults), which
    ``bench --bundle`` measures unless told otherwise. Unknown keys are tolerated (a newer writer's)."""

    only: list[Name] | None = None
    baseline: Name | None = None


class BundleSchema(msgspec.Struct):
    op: str  # a bundle of specs (not of an op) may leave op, mode and precision empty
    mode: str
    precision: str
    target: str
    sm_count: Annotated[int, msgspec.Meta(ge=0, le=100_000)]  # 0: not an op bundle
    backends: list[Name]
    inputs: list[dict[str, object]]
    toolchains: dict[str, dict[str, object]]
    specs: dict[str, KernelSpecSchema]
    artifacts: dict[str, dict[str, ArtifactEntry]]
    created: str = ""
    extra: dict[str, object] = {}
    # absent in bundles written before it existed, and in bundles not compiled by `bench --op` with a selection:
    # their measuring run times the op's default backends, as it always did (so no format_version bump)
    selection: SelectionSchema | None = None
    format_version: Any = msgspec.UNSET
    format: Any = msgspec.UNSET  # the older spelling of format_version


FIX = "copy the whole bundle folder again, or rebuild it with this ktriage (`ktriage bench --compile-only`)"
FIXES = {
    "artifacts": 'each artifact entry has status "ok" (cubin, cubin_sha256, kernel_name, launch, metadata, abi, ...) '
    'or "failed" (stage, kind, message): rebuild the bundle with this ktriage'
}


class RecordingSchema(msgspec.Struct):
    """``ktriage.workload.recorded.in_process.save_specs``: ``{"format_version": 1, "specs": [KernelSpec.to_json(), ...]}``
    (a bare list of specs is the format before format_version existed)."""

    specs: list[KernelSpecSchema]
    format_version: Any = msgspec.UNSET


RECORDING_FIX = "record the specs again with this ktriage (ktriage.workload.recorded.in_process.save_specs)"
