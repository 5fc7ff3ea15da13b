"""The schema of a recorded workload file (``ktriage record -o W.json``, ``workload import``) and the
limits of the files it is made from (the record journal, tritonparse traces).

A workload crosses machines and is read by ``explain``, ``tune``, ``bisect``, ``triage --workload``
and ``workload show``: every field the readers use is typed here, so a damaged or hostile file is a
FormatError naming the field (``kernels[0].inputs[0].count: expected int >= 0``) instead of a
KeyError, a negative count in a table or a renderer's crash. Unknown keys are kept (newer writers may
add some); the kernel specs inside go through the bundle's spec schema (one spec schema).
"""

from __future__ import annotations

from typing import Annotated, Any

import msgspec

from ktriage.schema.bundle import KernelSpecSchema

MAX_WORKLOAD_MB = 1024  # a torch.compile model's workload with its generated modules was 5 MB
MAX_TRACE_MB = 2048  # tritonparse traces of a long run (every launch event), also after gzip
MAX_SOURCE_LINE = 10_000_000  # a trace's start_line beyond this is no line of a real file
Count = Annotated[int, msgspec.Meta(ge=0, le=2**63 - 1)]
GridDim = Annotated[int, msgspec.Meta(ge=0, le=2**31 - 1)]
Text = Annotated[str, msgspec.Meta(max_length=4096)]


class WorkloadSpecSchema(KernelSpecSchema, forbid_unknown_fields=True):
    """A workload input's spec: ``KernelSpec.to_json()``, a by-values spec with its ``launch``."""

    launch: dict[str, object] | None = None


class InputSchema(msgspec.Struct, kw_only=True):
    id: Count
    launch: str
    label: str
    args: list[Annotated[list[Any], msgspec.Meta(min_length=2, max_length=2)]]
    options: dict[str, object] = {}
    grid: list[GridDim] | None = None
    count: Count
    spec: WorkloadSpecSchema
    autotune_choice: dict[str, object] | None = None
    heuristics: dict[str, object] = {}
    jit_check: str | None = None


class KernelSchema(msgspec.Struct, kw_only=True):
    id: Text
    function: Text
    kind: Text
    module: Text
    original_module: Text
    file: str | None = None
    package: str | None = None
    snapshot: Text
    inputs: list[InputSchema]
    autotune_configs: list[dict[str, object]] | None = None
    notes: list[str] = []


class NotCapturedSchema(msgspec.Struct, kw_only=True):
    function: str
    why: str
    launches: Count = 0


class SnapshotSchema(msgspec.Struct, kw_only=True):
    files: dict[str, str]
    notes: list[str] = []


class WorkloadSchema(msgspec.Struct, kw_only=True):
    format_version: int
    kind: str
    recorded: dict[str, object] = {}
    host: dict[str, object] = {}
    kernels: list[KernelSchema]
    not_captured: list[NotCapturedSchema] = []
    snapshots: dict[str, SnapshotSchema]


FIXES = {
    "kernels.inputs.spec": "the spec of a recorded input is KernelSpec.to_json(): record the program again",
    "snapshots": "the snapshots hold the recorded source files by digest: record the program again",
}
