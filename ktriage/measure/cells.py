"""The measurement data model (cells and runs) shared by the runner, the store, compare and the reports.

One home for what a measurement *is*, so that the GPU runner, the SQL store, the JSON/CSV outputs
and the statistics all speak of the same fields. Plain dataclasses with JSON round-trips: a GPU host
writes them, a CPU machine reads them.
"""

from __future__ import annotations

import datetime as _dt
import uuid
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import Any, Literal

from ktriage.schema.jsontypes import JSONObject

CellStatus = Literal["ok", "wrong", "error", "timeout", "skipped"]


@dataclass
class CellKey:
    """What was measured: one operator input, one backend, in one toolchain (None: the host's own)."""

    op: str  # TritonBench op name: "layer_norm", "embedding", "rope"
    mode: str  # "fwd", "bwd", "fwd_bwd"
    input_id: int  # TritonBench input id
    input_label: str  # e.g. "N=4608" or "(4096, 4608)": TritonBench's x_val, as text
    backend: str  # TritonBench backend name: "torch_layer_norm", "liger_layer_norm", ...
    toolchain: str | None = None  # toolchain id for artifact backends; None for native ones

    def label(self) -> str:
        tc = f"@{self.toolchain}" if self.toolchain else ""
        return f"{self.op}.{self.mode}[{self.input_label}] {self.backend}{tc}"


@dataclass
class Cell:
    """One measured (key) with its raw samples, kept whole so statistics can be redone later."""

    key: CellKey
    status: CellStatus
    samples_ms: list[float] = field(default_factory=list)
    error: str | None = None  # reason for wrong/error/timeout
    accuracy: JSONObject = field(default_factory=dict)  # max_abs_err, rel_err, atol, rtol, passed
    bytes_moved: int | None = None  # for gbps
    flops: int | None = None  # for tflops
    extra: JSONObject = field(default_factory=dict)

    def to_json(self) -> JSONObject:
        return asdict(self)

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Cell:
        """The inverse of :meth:`to_json` (a worker's message): the fields are trusted as written."""
        fields = dict(data)
        fields["key"] = CellKey(**fields["key"])
        return cls(**fields)


@dataclass
class RunInfo:
    """Provenance of a run: every number must be traceable to a GPU, driver, clocks and toolchains."""

    run_id: str = field(default_factory=lambda: uuid.uuid4().hex[:12])
    created: str = field(default_factory=lambda: _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"))
    command: str = ""
    host: str = ""
    gpu: JSONObject = field(default_factory=dict)  # name, uuid, driver, cuda, sm_count, clocks/temp before+after
    toolchains: list[JSONObject] = field(default_factory=list)  # Toolchain.to_json() of each
    packages: dict[str, str] = field(default_factory=dict)  # host package versions: torch, triton, liger-kernel...
    workload_git_sha: str | None = None
    settings: JSONObject = field(default_factory=dict)  # timing mode, l2 flush, warmup, caps, seed...
    status: str = "running"  # running | finished | interrupted | failed

    def to_json(self) -> JSONObject:
        return asdict(self)

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> RunInfo:
        return cls(**data)
