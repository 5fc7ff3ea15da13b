"""What a `ktriage bench` run measures: one operator, its inputs, backends and toolchains (``BenchPlan``),
or a recorded workload's entries and toolchains (``RecordedPlan``).

A plan is plain data (JSON-able) because it crosses a process boundary: the parent process owns the
store and the progress bar; each input is measured in an isolated worker process that receives the
plan, so a faulting kernel costs one cell, never the run.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

from ktriage.measure.cells import CellKey
from ktriage.schema.jsontypes import JSONObject

if TYPE_CHECKING:
    from ktriage.workload.recorded.bundle import Entry


@dataclass
class BenchPlan:
    op: str  # TritonBench op name
    mode: str  # fwd | bwd | fwd_bwd
    input_ids: list[int]
    native_backends: list[str]  # run in the host environment (torch, torch.compile, host liger/triton)
    artifact_backends: list[str]  # replayed from the bundle, once per toolchain
    baseline: str
    precision: str
    bundle: str | None = None  # path of the compile-here bundle
    toolchains: list[str] = field(default_factory=list)  # toolchain ids of the bundle, reference first
    # TimingOptions fields; "mode": auto (a protocol per variant, ktriage.measure.timing.choose_protocol)
    # or one of events | graph | queued for every variant
    timing: dict[str, Any] = field(default_factory=dict)
    graph_below_ms: float = 0.01  # auto (ktriage.measure.timing.GRAPH_BELOW_MS): single-launch kernels faster than this are timed as graph replays
    min_samples: int = 10  # the statistics' floor (VerdictConfig.min_samples): decided cells stop there
    max_samples: int = 400
    max_time_s: float = 10.0  # per input (all its variants together)
    threshold: float = 0.05
    confidence: float = 0.99
    artifact_timing: str = "tritonbench"  # tritonbench | library | kernel
    compile_mode: str = "max-autotune-no-cudagraphs"
    seed: int = 0

    def to_json(self) -> JSONObject:
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> BenchPlan:
        return cls(**data)

    def variant_keys(self, input_id: int, input_label: str) -> list[CellKey]:
        """Every cell of one input, native backends first, then each artifact backend per toolchain."""
        keys = [CellKey(self.op, self.mode, input_id, input_label, b) for b in self.native_backends]
        keys += [
            CellKey(self.op, self.mode, input_id, input_label, b, tc)
            for b in self.artifact_backends
            for tc in self.toolchains
        ]
        return keys


def native_variants(
    chosen: list[str], native: set[str] | list[str], artifact: list[str], *, host_artifacts: bool
) -> list[str]:
    """The chosen backends that run in the host environment. A backend that is also replayed from
    the toolchains' artifacts (``artifact``) runs natively only when asked (``host_artifacts``): the
    host's own copy is one more variant per input, and on a fresh host its Triton JIT-compiles it
    for every input (most of issue 3's non-timed wall time)."""
    return [b for b in chosen if b in native and (b not in artifact or host_artifacts)]


def variant_name(key: CellKey) -> str:
    """The name a variant is timed under inside one input's interleaved group."""
    return f"{key.backend}@{key.toolchain}" if key.toolchain else key.backend


def comparison_pairs(plan: BenchPlan, keys: list[CellKey]) -> list[tuple[str, str]]:
    """The ratios the adaptive stop must be sure of: each variant vs the baseline, and each
    toolchain's artifact vs the reference toolchain's artifact of the same backend."""
    names = [variant_name(k) for k in keys]
    pairs = [(plan.baseline, n) for n in names if n != plan.baseline and plan.baseline in names]
    if plan.toolchains:
        ref_tc = plan.toolchains[0]
        for backend in plan.artifact_backends:
            ref = f"{backend}@{ref_tc}"
            pairs += [(ref, f"{backend}@{tc}") for tc in plan.toolchains[1:] if ref in names]
    return pairs


@dataclass
class RecordedPlan:
    """What one recorded bench measures; plain data, because it crosses into the worker process."""

    bundle: str
    name: str  # the workload's name: the cells' op
    entries: list[int]
    toolchains: list[str]  # reference first
    timing: dict[str, Any] = field(default_factory=dict)  # TimingOptions fields
    min_samples: int = 20
    max_samples: int = 400
    max_time_s: float = 10.0  # per entry (all toolchains together)
    threshold: float = 0.05
    confidence: float = 0.99
    seed: int = 0

    def to_json(self) -> JSONObject:
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> RecordedPlan:
        return cls(**data)

    def keys(self, entry: Entry) -> list[CellKey]:
        """The cells of one entry, one per toolchain, the reference first."""
        from ktriage.workload.recorded.bundle import RECORDED_MODE

        return [CellKey(self.name, RECORDED_MODE, entry.id, entry.label, entry.backend, tc) for tc in self.toolchains]
