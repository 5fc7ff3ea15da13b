"""The results file (``ktriage.measure.results_file``): ``{"format_version", "run", "cells"}``.

The same fields as ``ktriage.measure.cells`` (RunInfo, Cell, CellKey), as strict Structs: a sample
is a finite, non-negative number of milliseconds (``true`` is not 1.0 ms), ``toolchains`` a list of
objects, a status one of the five. Unknown keys are refused in cells and keys (a typo there would
silently drop data); ``run`` tolerates unknown keys, as written by future ktriage versions of the
same ``format_version`` for provenance only.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

import msgspec

CellStatus = Literal["ok", "wrong", "error", "timeout", "skipped"]

# A sample: milliseconds, finite and not negative (an hour per launch is surely not a measurement).
Sample = Annotated[float, msgspec.Meta(ge=0.0, le=3_600_000.0)]
Count = Annotated[int, msgspec.Meta(ge=0, le=2**63 - 1)]
InputId = Annotated[int, msgspec.Meta(ge=0, le=2**31 - 1)]
Name = Annotated[str, msgspec.Meta(min_length=1, max_length=4096)]


class CellKeySchema(msgspec.Struct, forbid_unknown_fields=True):
    op: Name
    mode: Name
    input_id: InputId
    input_label: str
    backend: Name
    toolchain: Name | None = None


class CellSchema(msgspec.Struct, forbid_unknown_fields=True):
    key: CellKeySchema
    status: CellStatus
    samples_ms: list[Sample] = []
    error: str | None = None
    accuracy: dict[str, object] = {}
    bytes_moved: Count | None = None
    flops: Count | None = None
    extra: dict[str, object] = {}


# ------------------------------------------------------------------ the optional profile section of a cell
# ``cell.extra["profile"]``: the Nsight Compute counters of that (input, backend, toolchain), written by
# ``ktriage bench --profile`` or ``ktriage profile --results`` (ktriage.profile.attach). It lives in
# ``extra`` so that files with it still read in a ktriage that does not know it (``extra`` is free-form
# there) and the store keeps it in the cell's existing JSON column (no migration). Its own ``format``
# key versions it; a section of an unknown format is refused, naming the cell.
PROFILE_FORMAT = 1
Finite = Annotated[float, msgspec.Meta(ge=-1e30, le=1e30)]


class ProfileLaunchSchema(msgspec.Struct):
    """One profiled launch's summary (``ktriage.profile.ncu.summarize``): the numbers compare quotes are
    typed; the other counters are kept as written."""

    kernel_name: str = ""
    registers_per_thread: Finite | None = None
    local_share_of_l1_sectors_pct: Finite | None = None
    local_ld_sectors: Finite | None = None
    local_st_sectors: Finite | None = None
    dram_bytes: Finite | None = None
    dram_throughput_pct: Finite | None = None
    duration_ns: Finite | None = None
    achieved_occupancy_pct: Finite | None = None
    global_atom_requests: Finite | None = None
    global_red_requests: Finite | None = None
    stall_share_pct: dict[str, Finite] = {}


class ProfileCompileSideSchema(msgspec.Struct):
    """What the bundle recorded of the kernel's compile (``Resources``): the numbers quoted next to the counters."""

    registers: Count | None = None
    spill_store_bytes: Count | None = None
    spill_load_bytes: Count | None = None
    sass_opcodes: dict[str, Count] = {}


class ProfileSectionSchema(msgspec.Struct):
    format: int
    toolchain: Name
    status: Literal["ok", "unavailable"]
    error: str | None = None
    reference: str | None = None
    ncu_version: str | None = None
    launches: list[ProfileLaunchSchema] = []
    compile_side: ProfileCompileSideSchema | None = None
    findings: list[str] = []


PROFILE_FIX = (
    "the profile section (cell.extra.profile) is written by `ktriage bench --profile` or "
    "`ktriage profile --results`: write it again with this ktriage, or drop the section"
)


class RunSchema(msgspec.Struct):
    run_id: Annotated[str, msgspec.Meta(min_length=1, max_length=256, pattern=r"^[A-Za-z0-9._:-]+$")]
    created: str = ""
    command: str = ""
    host: str = ""
    gpu: dict[str, object] = {}
    toolchains: list[dict[str, object]] = []
    packages: dict[str, str] = {}
    workload_git_sha: str | None = None
    settings: dict[str, object] = {}
    status: Annotated[str, msgspec.Meta(max_length=64)] = "running"  # running | finished | interrupted | failed


class SettingsCheck(msgspec.Struct):
    """The settings compare reads (the rest are provenance, kept as written)."""

    baseline: Name | None = None


class ToolchainRef(msgspec.Struct):
    """The keys of a run's toolchain record that name it (``run_toolchains``); the rest are kept as written."""

    id: Name | None = None
    spec: Name | None = None
    name: Name | None = None


class RunCheck(msgspec.Struct):
    settings: SettingsCheck = msgspec.field(default_factory=SettingsCheck)
    toolchains: list[ToolchainRef] = []


class RunFieldsCheck(msgspec.Struct):
    """Validation only (the document is kept whole): ``{"run": {"settings": ..., "toolchains": ...}}``."""

    run: RunCheck


class ResultsSchema(msgspec.Struct):
    run: RunSchema
    cells: list[CellSchema]
    format_version: Any = msgspec.UNSET  # checked by check_format_version, with its own message


FIX = "give a file written by `ktriage bench --output-json` or `ktriage runs export RUN --format json`"
FIXES = {
    "cells.samples_ms": "samples_ms is a list of milliseconds (numbers >= 0, no booleans or strings)",
    "cells.status": "status is one of ok, wrong, error, timeout, skipped",
    "cells.key": "key has op, mode, input_id (an integer >= 0), input_label, backend and optionally toolchain",
    "run.toolchains": "toolchains is a list of objects (Toolchain.to_json() of each) whose id, spec and name are strings",
    "run.settings": "settings.baseline is the name of the baseline backend (a string)",
    "run.run_id": "run_id is a short id of letters, digits and ._:-",
    "run": "run holds the provenance: run_id, created, gpu, toolchains, packages, settings, status",
}
