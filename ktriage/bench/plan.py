"""What a `ktriage bench` run measures: one operator, its inputs, backends and toolchains (``BenchPlan``),
or a recorded workload's entries and toolchains (``RecordedPlan``).

A plan is plain data (JSON-able) because it crosses a process boundary: the parent process owns the
store and the progress bar; each input is measured in an isolated worker process that receives the
plan, so a faulting kernel costs one cell, never the run.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, TypedDict

from ktriage.measure.cells import CellKey
from ktriage.schema.core import convert
from ktriage.schema.jsontypes import JSONObject

if TYPE_CHECKING:
    from ktriage.workload.recorded.bundle import Entry


_PLAN_FIX = "a bench plan is made by ktriage for its worker: report this as a bug"


class TimingFields(TypedDict, total=False):
    """The ``TimingOptions`` fields a plan sets (the others keep their defaults)."""

    l2_flush: bool
    flush_bytes: int
    warmup_ms: float
    min_warmup_calls: int
    calls_per_round: int
    graph_calls: int
    device: int


class TimingSettings(TimingFields, total=False):
    """A plan's timing: ``mode`` (auto: a protocol per variant, ``ktriage.measure.timing.choose_protocol``,
    or one of events | graph | queued for every variant), and any ``TimingOptions`` field to set."""

    mode: str


def timing_fields(settings: TimingSettings) -> TimingFields:
    """The settings less ``mode``: what the worker passes to ``TimingOptions`` (the protocol is chosen
    per variant)."""
    out = TimingFields()
    for key in ("l2_flush", "flush_bytes", "warmup_ms", "min_warmup_calls", "calls_per_round", "graph_calls", "device"):
        if key in settings:
            out[key] = settings[key]
    return out


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
    timing: TimingSettings = field(default_factory=lambda: TimingSettings())
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
    def from_json(cls, data: Mapping[str, object]) -> BenchPlan:
        """The plan as ``to_json`` wrote it (the worker gets it so), its fields' types checked."""
        return convert(data, cls, origin="the bench plan", fix=_PLAN_FIX)

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
    timing: TimingSettings = field(default_factory=lambda: TimingSettings())
    min_samples: int = 20
    max_samples: int = 400
    max_time_s: float = 10.0  # per entry (all toolchains together)
    threshold: float = 0.05
    confidence: float = 0.99
    seed: int = 0
    target: str = ""  # the bundle's cubins' GPU target: the worker refuses a GPU that cannot load them
    workload: str = ""  # the workload file the bundle was built from, for the offline explain of its fixes

    def to_json(self) -> JSONObject:
        return asdict(self)

    @classmethod
    def from_json(cls, data: Mapping[str, object]) -> RecordedPlan:
        """The plan as ``to_json`` wrote it (the worker gets it so), its fields' types checked."""
        return convert(data, cls, origin="the recorded bench plan", fix=_PLAN_FIX)

    def keys(self, entry: Entry) -> list[CellKey]:
        """The cells of one entry, one per toolchain, the reference first."""
        from ktriage.workload.recorded.bundle import RECORDED_MODE

        return [CellKey(self.name, RECORDED_MODE, entry.id, entry.label, entry.backend, tc) for tc in self.toolchains]
